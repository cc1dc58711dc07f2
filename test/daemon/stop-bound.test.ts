/**
 * A graceful stop completes within its bound whatever Redis is doing (issue 29, item 2): with
 * the daemon's Redis frozen (SIGSTOP) its workers cannot close (BullMQ's QUIT waits for an
 * answer), so after STOP_GRACE_MS the daemon drops its connections and the stop returns, well
 * inside aer1-anchord's 20 s timeout. The jobs it held go back by the stalled check.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { STOP_GRACE_MS } from '../../src/daemon/daemon.js';
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
