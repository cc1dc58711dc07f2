/**
 * The bench's Redis memory breakdown (bench/memory.ts) names where the bytes are: every key
 * is put in a kind by its name, a key of a kind it does not know is counted under a named
 * "other", and what no key holds is its own line, so "rest" is never a silent remainder.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { BULL_EVENTS, BULL_JOBS, BULL_QUEUES, CLIENT_BUFFERS, OUTSIDE_KEYS, SCRIPT_CACHE, breakdownOf, keyClassifier, memoryFigures } from '../../bench/memory.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { privateRedis } from '../helpers/harness.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';

describe('bench memory breakdown', () => {
  const classify = keyClassifier('bench', 'aer1-anchor');
  const k = new StateKeys('bench');

  it("puts the state layout's keys in their kinds", () => {
    expect(classify(k.subject('u-1'))).toBe('subject hash');
    expect(classify(k.envelope('u-1'))).toBe('envelope');
    expect(classify(k.event('abc'))).toBe('nostr events');
    expect(classify(k.batch('ots', '3-ff'))).toBe('batches');
    expect(classify(k.batchKeys('nostr', '3-ff'))).toBe('batches');
    expect(classify(k.batchHistory('ots', '3-ff'))).toBe('batch histories');
    expect(classify(k.openBatches('ots'))).toBe('batches');
    expect(classify(k.byStatus('pending'))).toBe('indexes');
    expect(classify(k.counts)).toBe('indexes');
    expect(classify(k.events)).toBe('state-change stream');
    expect(classify(k.timeline(123))).toBe('timeline');
    expect(classify(k.nostrRecent)).toBe('nostr recent');
    expect(classify(k.nostrKept)).toBe('relay upkeep walk');
    expect(classify(k.nostrKeptChunks)).toBe('relay upkeep walk');
  });

  it("splits BullMQ's keys into job hashes and event streams per queue, and queue structures", () => {
    expect(classify('{bench}:aer1-anchor:bulk-0123abcd')).toBe(`${BULL_JOBS} (intake)`);
    expect(classify('{bench}:aer1-anchor:8f0c0e3c-1111-4c4c-8888-000000000000:lock')).toBe(`${BULL_JOBS} (intake)`);
    expect(classify('{bench}:aer1-anchor-ots:17')).toBe(`${BULL_JOBS} (ots)`);
    expect(classify('{bench}:aer1-anchor:events')).toBe(`${BULL_EVENTS} (intake)`);
    expect(classify('{bench}:aer1-anchor-relay-0123456789ab:events')).toBe(`${BULL_EVENTS} (relays)`);
    expect(classify('{bench}:aer1-anchor-wh-abc:events')).toBe(`${BULL_EVENTS} (webhooks)`);
    expect(classify('{bench}:aer1-anchor:wait')).toBe(BULL_QUEUES);
    expect(classify('{bench}:aer1-anchor-nostr:meta')).toBe(BULL_QUEUES);
  });

  it('names a kind it does not know, under another shard tag too, instead of failing', () => {
    expect(classify('{bench}:zz:1')).toBe('other (zz:)');
    expect(classify('{bench:3}:s:u-1')).toBe('subject hash');
    expect(classify('{bench:3}:brandnew:u-1')).toBe('other (brandnew:)');
    expect(classify('{elsewhere}:s:u-1')).toBe('other (outside the prefix)');
    expect(classify('plain')).toBe('other (outside the prefix)');
  });

  it('gives bytes per subject per kind added, and what no key holds as its own line', () => {
    const before = new Map([['indexes', { keys: 10, bytes: 1_000 }], [BULL_QUEUES, { keys: 5, bytes: 500 }]]);
    const after = new Map([
      ['indexes', { keys: 10, bytes: 11_000 }],
      [BULL_QUEUES, { keys: 5, bytes: 500 }],
      ['subject hash', { keys: 100, bytes: 60_000 }],
    ]);
    const b = breakdownOf(before, after, 100, 80_000);
    expect(b.perSubject).toEqual({ 'subject hash': 600, indexes: 100, [OUTSIDE_KEYS]: 100 });
    expect(Object.keys(b.perSubject).at(-1)).toBe(OUTSIDE_KEYS);
    expect(b.keysPerSubject['subject hash']).toBe(1);
    // the script cache's growth is its own line, out of what no key holds
    const c = breakdownOf(before, after, 100, 80_000, 6_000);
    expect(c.perSubject).toEqual({ 'subject hash': 600, indexes: 100, [SCRIPT_CACHE]: 60, [OUTSIDE_KEYS]: 40 });
    // the clients' buffers are their own row, out of what no key holds
    const d = breakdownOf(before, after, 100, 80_000, 6_000, 3_000);
    expect(d.perSubject).toEqual({ 'subject hash': 600, indexes: 100, [SCRIPT_CACHE]: 60, [CLIENT_BUFFERS]: 30, [OUTSIDE_KEYS]: 10 });
  });
});

// a private redis-server: memoryFigures reads the whole key space and every client
describe('bench memory figures (a private Redis)', () => {
  let server: EmbeddedRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await privateRedis(false);
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await redis?.quit().catch(() => undefined);
    await server?.stop();
  });

  it('counts the capped streams (the change stream, its tally, BullMQ event streams) and no other key', async () => {
    const k = new StateKeys('bench');
    const empty = await memoryFigures(redis);
    expect(empty.capped).toBe(0);
    const pipe = redis.pipeline();
    for (let i = 0; i < 200; i++) pipe.xadd(k.events, '*', 'data', `{"type":"accepted","key":"k-${i}"}`);
    pipe.zadd(k.eventTally, 200, '~total');
    pipe.xadd('{bench}:aer1-anchor-ots:events', '*', 'event', 'added');
    pipe.hset(k.subject('u-1'), 'status', 'pending', 'pad', 'x'.repeat(40_000));
    pipe.xadd('{bench}:my-events-log', '*', 'a', 'b');
    await pipe.exec();
    const usage = async (key: string): Promise<number> => Number(await redis.memory('USAGE', key, 'SAMPLES', '0'));
    const streams = (await usage(k.events)) + (await usage(k.eventTally)) + (await usage('{bench}:aer1-anchor-ots:events'));
    const f = await memoryFigures(redis);
    expect(f.capped).toBe(streams);
    // the 40 KB subject hash is held, not capped
    expect(f.held - f.capped - (empty.held - empty.capped)).toBeGreaterThan(40_000);
  });

  it("subtracts a client's query buffer as it is now, not INFO's figure of it", async () => {
    const before = await memoryFigures(redis);
    // a second connection that sent a 1 MB value: its query buffer is the clients', never the state's
    const other = new Redis(server.url);
    try {
      await other.set('{bench}:big', 'y'.repeat(1_000_000));
      await other.del('{bench}:big');
      const after = await memoryFigures(redis);
      expect(Math.abs(after.held - before.held)).toBeLessThan(100_000);
    } finally {
      other.disconnect();
    }
  });
});
