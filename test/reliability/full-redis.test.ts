/**
 * A full Redis (`maxmemory` with `noeviction`): subjects queued with BullMQ while the daemon
 * cannot write. Intake meets OOM on accept, on its own job moves and on the witness queues;
 * relay publishes spend their attempts. After the limit is raised every subject is confirmed
 * or recorded rejected with a reason: none vanished with its job. Counted from Redis and
 * from each dev relay's own store.
 *
 * The issuer gives its jobs 3 attempts (its choice, not ANCHOR_JOB_OPTIONS), so a daemon that
 * let OOM spend attempts would lose subjects within seconds. Scale it by hand:
 *   AER1_FULL_REDIS_N=10000 AER1_FULL_REDIS_HOLD_MS=300000 npx vitest run test/reliability/full-redis.test.ts
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { Issuer, privateRedis, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, report, statusCounts, tapRelay, anchorEventCount } from './audit.js';

const N = Number(process.env.AER1_FULL_REDIS_N ?? 2000);
const HOLD_MS = Number(process.env.AER1_FULL_REDIS_HOLD_MS ?? 20_000);
/** Room above the queued jobs' footprint: a few hundred subjects get in before Redis is full. */
const HEADROOM_BYTES = Number(process.env.AER1_FULL_REDIS_HEADROOM ?? 2 * 1024 * 1024);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function info(redis: Issuer['redis'], field: string, section = 'memory'): Promise<string | null> {
  const text = await redis.info(section);
  const m = new RegExp(`^${field}:(.*)$`, 'm').exec(text);
  return m ? m[1]!.trim() : null;
}

describe('a full Redis (maxmemory, noeviction)', () => {
  it(`${N} subjects queued, Redis full for ${HOLD_MS / 1000} s: afterwards each is confirmed or rejected with a reason, none unaccounted`, { timeout: 180_000 + HOLD_MS + N * 200 }, async () => {
    const redis = await privateRedis(true);
    cleanups.push(() => redis.stop());
    const relays = await startRelays(2);
    cleanups.push(() => Promise.all(relays.map((r) => r.close())));
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(1, headersFile);
    cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: {
        queue: { stalledIntervalMs: 1000 },
        reconcile: { intervalMs: 1000 },
        // Publishes do spend their attempts on OOM: the reconciler must bring them back.
        nostr: { maxAttempts: 3, backoffMs: 200, backoffMaxMs: 1000 },
        ots: { batchWindowMs: 300 },
      },
    });
    const issuer = new Issuer(config, redis.url);
    cleanups.push(() => issuer.close());

    const subjects = Array.from({ length: N }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    const opts = { ...ANCHOR_JOB_OPTIONS, attempts: 3, backoff: { type: 'fixed', delay: 500 } };
    for (let i = 0; i < N; i += 500) {
      await issuer.queue.addBulk(subjects.slice(i, i + 500).map((s) => ({ name: ANCHOR_JOB, data: s, opts: { jobId: s.receipt_uuid, ...opts } })));
    }
    const baseline = Number(await info(issuer.redis, 'used_memory'));
    const limit = baseline + HEADROOM_BYTES;
    await issuer.redis.config('SET', 'maxmemory', String(limit));

    const daemon = await startDaemon(config, redis.url);
    cleanups.push(() => daemon.stop());
    await waitFor('Redis refusing writes (OOM)', async () => Number((await info(issuer.redis, 'errorstat_OOM', 'errorstats'))?.match(/count=(\d+)/)?.[1] ?? 0) > 0, 60_000, 100);
    const fullAt = Date.now();
    await new Promise((r) => setTimeout(r, HOLD_MS)); // the fault's length: Redis stays full this long
    const atRaise = await statusCounts(issuer, keys);
    const oomErrors = Number((await info(issuer.redis, 'errorstat_OOM', 'errorstats'))?.match(/count=(\d+)/)?.[1] ?? 0);
    const peak = Number(await info(issuer.redis, 'used_memory_peak'));
    await issuer.redis.config('SET', 'maxmemory', '0');
    const raisedAt = Date.now();

    // Publishing to the dev relays sets the pace on a loaded machine: allow ~150 ms per subject.
    await confirmAll(issuer, keys, calendars, 60_000 + N * 150);
    const recoveredMs = Date.now() - raisedAt;
    const result = await audit('full-redis', issuer, keys, taps, { historySample: 500 });
    for (const relay of relays) expect(anchorEventCount(relay)).toBe(N);
    expect(await issuer.queue.count()).toBe(0);
    expect((await issuer.queue.getJobCounts('failed')).failed ?? 0).toBe(0);
    const leftInRelayQueues = [...(await new RelayOutbox(issuer.store.events, relays.map((r) => r.url)).sizes()).values()].reduce((a, b) => a + b, 0);
    const rejected = await issuer.count('rejected');
    expect(rejected).toBe(0);
    const metric = await daemon.metrics.registry.getSingleMetric('aer1_reconciler_repairs_total')?.get();
    const repaired = Object.fromEntries((metric?.values ?? []).map((v) => [v.labels.kind, v.value]));
    report(result, {
      holdMs: raisedAt - fullAt,
      limitMb: (limit / 2 ** 20).toFixed(1),
      peakMb: (peak / 2 ** 20).toFixed(1),
      oomErrors,
      acceptedAtRaise: N - (atRaise.none ?? 0),
      confirmedAtRaise: atRaise.confirmed ?? 0,
      recoveredMs,
      rejected,
      unaccounted: N - result.confirmed - rejected,
      onRelays: relays.map((r) => r.eventCount()).join('/'),
      leftInRelayQueues,
      repaired: Object.entries(repaired).map(([k, v]) => `${k}:${v}`).join(',') || 'none',
    });
  });
});
