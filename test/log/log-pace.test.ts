/**
 * When the anchor log signs its checkpoints (LogService.schedule): at most one every
 * interval, as soon as the entries waiting have settled (the intake has nothing more on its
 * way), else once they have waited an interval. Real Redis, real files; the entries are
 * sequenced as accept.lua does it, and the service is told as the intake tells it.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject } from '../../src/adapters/state/subjects.js';
import { LogService, type NewCheckpoint } from '../../src/adapters/log/log-service.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { generateSignerKey, type LogSigner } from '../../src/core/log/note.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { createLogger } from '../../src/daemon/logger.js';
import { deletePrefix, SHARED_REDIS_URL, tempDir, uniquePrefix, waitFor } from '../helpers/harness.js';
import { startMonitor } from '../helpers/redis-monitor.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const subject = (key: string): AcceptSubject => ({
  key,
  kind: 'receipt',
  envelopeCanonical: `{"k":"${key}"}`,
  digest: sha256Hex(key),
  fingerprint: sha256Hex(`fp-${key}`),
});
const targets = { witnesses: ['ots'] as const, inboxes: ['ots'] as const };

/** A service on its own prefix and folder, with the intake's "more on the way" under the test's control. */
async function paced(label: string, intervalMs: number, shared?: { prefix: string; dir: string; signer: LogSigner }) {
  const prefix = shared?.prefix ?? uniquePrefix(label);
  const redis = connectRedis(SHARED_REDIS_URL);
  const dir = shared?.dir ?? tempDir('aer1-anchor-log-pace');
  const intake = { busy: true };
  const store = new AnchorStore(redis, prefix);
  const signer = shared?.signer ?? generateSignerKey('example.test/pace').signer;
  const service = new LogService(redis, { dir, origin: 'example.test/pace', signer, intervalMs, base: store.keys.base, busy: async () => intake.busy }, createLogger('silent'));
  store.subjects.logKeys = service.keys;
  const written: Array<{ size: number; at: number }> = [];
  service.onCheckpoint(async (c: NewCheckpoint) => {
    written.push({ size: c.size, at: Date.now() });
  });
  cleanups.push(async () => {
    await service.stop();
    await deletePrefix(redis, prefix);
    await redis.quit();
    rmSync(dir, { recursive: true, force: true });
  });
  await service.start();
  let n = 0;
  /** Accepts `count` new subjects (sequenced in the same script call) and tells the service, as the intake does. */
  const accept = async (count: number): Promise<void> => {
    const subjects = Array.from({ length: count }, () => subject(`${label}-${n++}`));
    await store.subjects.acceptMany(targets, subjects);
    service.arrived();
  };
  return { service, intake, written, accept, sequenced: () => n, redis, prefix, dir, signer };
}

describe('anchor log: when checkpoints are signed', () => {
  it('waits while the intake has more on its way, then signs one checkpoint covering the whole burst at once', async () => {
    // an interval far longer than the test: any checkpoint here is the settled burst's, not one forced by time
    const { intake, written, accept, sequenced } = await paced('pace-burst', 20_000);
    for (let i = 0; i < 5; i++) await accept(40);
    // the service looks every 50 ms while entries wait: give it many looks that each see "more on the way"
    const looks = Date.now();
    await waitFor('ten looks while busy', async () => (Date.now() - looks >= 500 ? true : null), 5_000, 50);
    expect(written).toEqual([]);
    await accept(40);
    intake.busy = false;
    const settledAt = Date.now();
    await waitFor('the burst checkpointed', async () => (written.length > 0 ? true : null), 15_000, 10);
    expect(written.map((w) => w.size)).toEqual([sequenced()]);
    expect(sequenced()).toBe(240);
    // signed because the burst settled: far sooner than the interval that would have forced it
    expect(written[0]!.at - settledAt).toBeLessThan(10_000);
  });

  it('a daemon that does not hold the lease asks Redis once an interval while its intake sequences entries, not in a loop', async () => {
    const intervalMs = 500;
    const a = await paced('pace-lease', intervalMs);
    await a.accept(10);
    await waitFor('the first daemon holds the lease', async () => (a.service.writing ? true : null), 10_000, 10);
    const b = await paced('pace-lease-b', intervalMs, { prefix: a.prefix, dir: a.dir, signer: a.signer });
    await waitFor('the second daemon connected', async () => (b.redis.status === 'ready' ? true : null), 5_000, 10);
    const port = (b.redis as unknown as { stream?: { localPort?: number } }).stream?.localPort;
    expect(port).toBeGreaterThan(0);
    // every command the second daemon's connection sends, seen by Redis itself
    let fromB = 0;
    const monitor = await startMonitor(SHARED_REDIS_URL, (_args, source) => {
      if (source.endsWith(`:${port}`)) fromB++;
    });
    const started = Date.now();
    // its intake sequences entries and wakes it, 40 times over 2 s (4 intervals)
    for (let i = 0; i < 40; i++) {
      await b.accept(1);
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (Date.now() - started) / 1000;
    monitor.stop();
    console.log(`a daemon without the lease: ${fromB} commands in ${seconds.toFixed(1)} s with 40 accepts`);
    expect(b.service.writing).toBe(false);
    // its own 40 accepts (one script call each) and a lease attempt about each interval: not a loop of lease attempts
    expect(fromB).toBeLessThan(40 + Math.ceil((seconds * 1000) / intervalMs) * 3 + 10);
  });

  it('entries that keep coming get a checkpoint every interval, never two within one', async () => {
    const intervalMs = 400;
    const { written, accept, sequenced } = await paced('pace-steady', intervalMs);
    // the intake stays busy throughout: only time brings a checkpoint
    const started = Date.now();
    for (let i = 0; i < 200 && written.length < 3; i++) {
      await accept(5);
      await new Promise((r) => setTimeout(r, 20));
      if (Date.now() - started > 20_000) break;
    }
    expect(written.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < written.length; i++) {
      expect(written[i]!.size).toBeGreaterThan(written[i - 1]!.size);
      // ticks start an interval apart at least; their writes take a little time each
      expect(written[i]!.at - written[i - 1]!.at).toBeGreaterThanOrEqual(intervalMs - 150);
    }
    expect(written.at(-1)!.size).toBeLessThanOrEqual(sequenced());
  });
});
