/**
 * A graceful stop completes within its bound whatever Redis is doing (issue 29, item 2): with
 * the daemon's Redis frozen (SIGSTOP) its workers cannot close (BullMQ's QUIT waits for an
 * answer), so after STOP_GRACE_MS the daemon drops its connections and the stop returns, well
 * inside aer1-anchord's 20 s timeout. The jobs it held go back by the stalled check.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { RedisConnection, isNotConnectionError } from 'bullmq';
import { STOP_GRACE_MS } from '../../src/daemon/daemon.js';
import { ConnectionDroppedError, connectRedis, dropConnection } from '../../src/adapters/redis/connection.js';
import { privateRedis, startCalendars, startDaemon, startRelays, tempDir, testConfig } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

it('stops within STOP_GRACE_MS (+2 s slack) with its Redis frozen', { timeout: 60_000 }, async () => {
  const redis = await privateRedis(false);
  cleanups.push(() => redis.stop());
  cleanups.push(async () => redis.child.kill('SIGCONT'));
  const relays = await startRelays(1);
  cleanups.push(() => Promise.all(relays.map((r) => r.close())));
  const headersFile = join(tempDir('headers'), 'headers.json');
  const calendars = await startCalendars(1, headersFile);
  cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
  const daemon = await startDaemon(testConfig({ relays, calendars, headersFile }), redis.url);
  redis.child.kill('SIGSTOP');
  const t0 = Date.now();
  await daemon.stop();
  const stopMs = Date.now() - t0;
  expect(stopMs).toBeLessThan(STOP_GRACE_MS + 2000);
});

// What the bound above rests on, without a daemon: BullMQ's worker retries a connection error
// for ever and, once closing, without a delay (retryIfFailed): a BullMQ connection whose first
// INFO was in flight when the stop dropped the client kept rejecting with ioredis's
// "Connection is closed.", so a closing worker's job-scheduler upsert spun the event loop and
// starved every timer, the stop's bound included (seen in a CI dry run: this file hung at 100% CPU).
it('a command in flight when the connection is dropped fails with an error BullMQ does not retry', { timeout: 30_000 }, async () => {
  const redis = await privateRedis(false);
  cleanups.push(() => redis.stop());
  cleanups.push(async () => redis.child.kill('SIGCONT'));
  const client = connectRedis(redis.url);
  cleanups.push(async () => client.disconnect());
  await client.ping();
  redis.child.kill('SIGSTOP');
  const inFlight = client.info('server').then(() => null, (err: Error) => err);
  // a BullMQ connection made on the client while Redis is frozen: its start-up INFO waits
  const bull = new RedisConnection(client, { shared: true });
  // as BullMQ's queues and workers do (QueueBase): its failed start is an 'error' event
  bull.on('error', () => undefined);
  const bullReady = bull.client.then(() => null, (err: Error) => err);
  dropConnection(client);
  const [err, bullErr] = await Promise.all([inFlight, bullReady]);
  for (const e of [err, bullErr]) {
    expect(e).toBeInstanceOf(ConnectionDroppedError);
    expect(isNotConnectionError(e!)).toBe(true);
  }
  // and what is sent afterwards
  const later = await client.get('k').then(() => null, (e: Error) => e);
  expect(isNotConnectionError(later!)).toBe(true);
});
