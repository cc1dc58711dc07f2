/**
 * Bytes of Redis memory per subject, for sizing `maxmemory` (docs/reliability.md): a private
 * redis-server, 1,000 receipts POSTed through the daemon with two dev relays and a dev
 * calendar, `used_memory` read while they wait in the queue, once Nostr confirmed them with
 * OTS still waiting for a block (the state they keep for hours in production), and once
 * confirmed. The bounds are generous; the figures are printed for the docs, with each kind
 * of key's MEMORY USAGE per subject (s, h, ev, idx:st, ... and BullMQ's queues by name).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { Issuer, privateRedis, receiptFields, uniquePrefix, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';

const N = 1000;

let redis: EmbeddedRedis;
let s: Stack;
let admin: Redis;

beforeAll(async () => {
  redis = await privateRedis(false);
  // OTS batches cut quickly; the calendar only confirms when the test mines
  s = await startStack({ redisUrl: redis.url, relays: 2, overrides: { ots: { batchWindowMs: 300, batchMaxSize: 500 } } });
  admin = new Redis(redis.url);
}, 60_000);

afterAll(async () => {
  await s?.close();
  admin?.disconnect();
  await redis?.stop();
}, 60_000);

async function usedMemory(): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
}

/** MEMORY USAGE of every key under the daemon's prefix, summed per kind of key (`s`, `e`, `h`, `idx:st`, `nostr:kept`, ...), per subject. */
async function breakdown(): Promise<Record<string, number>> {
  const base = s.daemon.store.keys.base;
  const sums: Record<string, number> = {};
  let cursor = '0';
  for (let i = 0; i < 100_000; i++) {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${base}:*`, 'COUNT', 1000);
    for (const k of keys) {
      const rest = k.slice(base.length + 1);
      const parts = rest.split(':');
      const kind = parts[0] === 'idx' ? `idx:${parts[1]}${parts[1] === 'w' ? `:${parts[2]}` : ''}` : parts[0] === 'nostr' ? `nostr:${parts[1]}` : /^[0-9a-f-]{8,}$/.test(parts[0] ?? '') ? 'bull' : parts[0]!;
      const bytes = Number(await admin.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
      sums[kind] = (sums[kind] ?? 0) + bytes;
    }
    cursor = next;
    if (cursor === '0') break;
  }
  return Object.fromEntries(Object.entries(sums).map(([kind, b]) => [kind, Math.round(b / N)]).filter(([, b]) => Number(b) > 0));
}

async function count(status: string, witness?: 'nostr' | 'ots'): Promise<number> {
  const store = s.daemon.store;
  return witness ? ((await store.indexes.countByWitness([witness]))[witness]?.[status] ?? 0) : ((await store.indexes.countByStatus())[status] ?? 0);
}

describe('Redis memory per subject', () => {
  it(`${N} receipts: queued, pending on OTS, confirmed`, { timeout: 300_000 }, async () => {
    const subjects = Array.from({ length: N }, () => receiptFields());
    const figures: Record<string, number> = {};

    // queued: jobs nobody takes yet (another prefix, no worker)
    const idle = new Issuer({ ...s.config, redis: { ...s.config.redis, prefix: uniquePrefix('idle') } }, redis.url);
    try {
      const before = await usedMemory();
      await idle.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));
      figures.queuedJob = Math.round(((await usedMemory()) - before) / N);
      await idle.queue.obliterate({ force: true });
    } finally {
      await idle.close();
    }

    const base = await usedMemory();
    for (let i = 0; i < N; i += 200) {
      const res = await s.post('/v1/anchors', { subjects: subjects.slice(i, i + 200) }, { auth: true });
      expect(res.status).toBe(202);
    }
    await waitFor(`${N} confirmed on Nostr, OTS pending`, async () => (await count('confirmed', 'nostr')) === N && (await count('pending', 'ots')) === N, 180_000, 200);
    await waitFor('the witness queues drained', async () => {
      const q = await s.daemon.queueCounts();
      return q.waiting + q.active === 0;
    }, 60_000, 200);
    figures.pendingOts = Math.round(((await usedMemory()) - base) / N);

    await s.confirm(subjects.map((x) => x.receipt_uuid), 120_000);
    expect(await count('confirmed')).toBe(N);
    figures.confirmed = Math.round(((await usedMemory()) - base) / N);
    // the change stream is capped (about 100,000 subject events), so at scale its share per subject vanishes
    figures.eventsStreamEntries = await admin.xlen(s.daemon.store.keys.events);
    figures.eventsStreamPerSubject = Math.round(Number(await admin.call('MEMORY', 'USAGE', s.daemon.store.keys.events, 'SAMPLES', '0')) / N);

    console.log(`redis bytes per subject: ${JSON.stringify(figures)}`);
    const kinds = await breakdown();
    console.log(`MEMORY USAGE per subject by kind of key, confirmed: ${JSON.stringify(kinds)}`);
    // a confirmed subject is in one index, and one with its own event keeps its envelope only in it
    const indexBytes = Object.entries(kinds).filter(([kind]) => kind.startsWith('idx')).reduce((a, [, b]) => a + b, 0);
    expect(indexBytes).toBeLessThan(250);
    expect(kinds.e ?? 0).toBe(0);
    // the subject hash holds its history (`h:<n>` fields, no history list of its own): no key
    // or p:<witness> 0, digest, fingerprint and own event id as 32 bytes, `u` and `c:<witness>`
    // as ms since `created`, transitions as seconds since `created` and one-letter codes
    expect(kinds.h ?? 0).toBe(0);
    expect(kinds.s).toBeLessThan(700);
    expect(figures.queuedJob).toBeGreaterThan(0);
    expect(figures.queuedJob).toBeLessThan(10_000);
    expect(figures.pendingOts).toBeLessThan(20_000);
    expect(figures.confirmed).toBeLessThan(20_000);
  });
});
