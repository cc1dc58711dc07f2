/**
 * Redis restarted (a private redis-server, append-only file on) while 1,000 subjects are
 * in flight through two dev relays and a dev calendar. The daemon and the issuer keep their
 * connections (ioredis reconnects and re-sends); after the restart every subject confirms,
 * none is stored twice on a relay, and every history is whole.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, privateRedis, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, report, statusCounts, tapRelay, anchorEventCount } from './audit.js';

const N = 1000;

describe('Redis restarted with 1,000 subjects in flight', () => {
  let redis: EmbeddedRedis | null = null;
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  afterAll(async () => {
    await redis?.stop();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('loses nothing: all confirmed after the restart, none stored twice, histories whole', { timeout: 240_000 }, async () => {
    redis = await privateRedis(true);
    const { port, dir } = redis;
    relays = await startRelays(2);
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({ relays, calendars, headersFile, overrides: { queue: { stalledIntervalMs: 1000 }, nostr: { maxAttempts: 1000 }, ots: { batchWindowMs: 300 } } });
    const daemon = await startDaemon(config, redis.url);
    const issuer = new Issuer(config, redis.url);
    try {
      const subjects = Array.from({ length: N }, () => receiptFields());
      const keys = subjects.map((s) => s.receipt_uuid);
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor('some subjects accepted', async () => (await issuer.store.indexes.subjectCount()) >= 200, 60_000, 20);

      const atRestart = await statusCounts(issuer, keys);
      // SIGTERM: redis-server writes its append-only file out and exits
      await redis.stop();
      redis = await startEmbeddedRedis({ dir, port });
      expect(existsSync(join(dir, 'appendonlydir')) || existsSync(join(dir, 'appendonly.aof'))).toBe(true);
      // still in flight when Redis went away
      expect(atRestart.confirmed ?? 0).toBeLessThan(N);

      await confirmAll(issuer, keys, calendars, 180_000);
      const result = await audit('redis-restart', issuer, keys, taps);
      for (const relay of relays) expect(anchorEventCount(relay)).toBe(N);
      report(result, {
        inFlightAtRestart: N - (atRestart.confirmed ?? 0),
        acceptedAtRestart: N - (atRestart.none ?? 0),
        aofBytes: aofSize(dir),
      });
    } finally {
      await daemon.stop();
      await issuer.close();
    }
  });
});

/** Bytes of the append-only file(s): Redis 7 keeps a folder of them, older ones a single file. */
function aofSize(dir: string): number {
  const multi = join(dir, 'appendonlydir');
  if (existsSync(multi)) return readdirSync(multi).reduce((n, f) => n + statSync(join(multi, f)).size, 0);
  const single = join(dir, 'appendonly.aof');
  return existsSync(single) ? statSync(single).size : 0;
}
