/**
 * ShardedStore's list over K shards on the shared Redis: paging with the cursor it hands back
 * gives every subject exactly once, in the order one shard lists in ((acceptance time, key)
 * newest first), also when many subjects share one acceptance time across shards and when a
 * witness filter makes one shard stop early (its filter rounds spent) while another is full.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '../../src/adapters/redis/connection.js';
import { ShardedStore } from '../../src/adapters/state/sharded-store.js';
import { shardOf } from '../../src/core/shard/shard.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/harness.js';

const K = 3;
let redis: RedisClient;
let state: ShardedStore;
const written: string[] = [];

beforeAll(() => {
  redis = connectRedis(SHARED_REDIS_URL);
  state = ShardedStore.open(redis, uniquePrefix('sharded'), K);
});

afterAll(async () => {
  for (const key of written) await redis.del(key);
  await redis.quit();
});

/** A subject in its shard's index of `status`, accepted at `ms`, its nostr witness `nostr`. */
async function put(key: string, status: string, ms: number, nostr: string): Promise<void> {
  const keys = state.of(key).keys;
  await redis.zadd(keys.byStatus(status), ms, key);
  await redis.hset(keys.subject(key), 'w:nostr', nostr);
  written.push(keys.byStatus(status), keys.subject(key));
}

async function pageAll(q: { status?: string; witness?: 'nostr' }, limit: number): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 500; i++) {
    const page = await state.list({ ...q, limit, ...(cursor ? { cursor } : {}) });
    out.push(...page.keys);
    if (!page.next) return out;
    cursor = page.next;
  }
  throw new Error('more than 500 pages');
}

function listOrder(a: [number, string], b: [number, string]): number {
  return b[0] - a[0] || (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0);
}

describe('ShardedStore.list over 3 shards', () => {
  it('pages through every subject once, in (time, key) order, ties across shards included', async () => {
    const items: Array<[number, string]> = [];
    for (let i = 0; i < 90; i++) items.push([1_000_000 + Math.floor(i / 10), randomUUID()]);
    for (const [ms, key] of items) await put(key, 'confirmed', ms, 'confirmed');
    expect(new Set(items.map(([, k]) => shardOf(k, K))).size).toBe(K);
    const want = [...items].sort(listOrder).map(([, k]) => k);
    for (const limit of [1, 7, 10, 50, 1000]) expect(await pageAll({ status: 'confirmed' }, limit), `limit ${limit}`).toEqual(want);
  });

  it('a witness filter that leaves one shard short bounds the page, and no subject is skipped', async () => {
    // 4,500 partial subjects of shard 0 whose nostr witness is not confirmed, newer than the rest: shard 0's
    // filter rounds (20 × 200 read) run out before its page fills, while shards 1 and 2 fill theirs
    const noise: string[] = [];
    while (noise.length < 4500) {
      const key = randomUUID();
      if (shardOf(key, K) === 0) noise.push(key);
    }
    const z = state.shards[0]!.keys.byStatus('partial');
    for (let i = 0; i < noise.length; i += 500) await redis.zadd(z, ...noise.slice(i, i + 500).flatMap((k, j) => [3_000_000 + i + j, k]));
    written.push(z);
    const wanted: Array<[number, string]> = [];
    for (let i = 0; i < 40; i++) {
      const key = randomUUID();
      wanted.push([2_000_000 + i, key]);
      await put(key, 'partial', 2_000_000 + i, 'confirmed');
    }
    const first = await state.list({ witness: 'nostr', status: 'confirmed', limit: 15 });
    // nothing past shard 0's stopping point is known for all shards yet: an empty page that goes on
    expect(first.keys).toEqual([]);
    expect(first.next).not.toBeNull();
    const all = await pageAll({ witness: 'nostr', status: 'confirmed' }, 15);
    const fromThisTest = all.filter((k) => wanted.some(([, w]) => w === k));
    expect(fromThisTest).toEqual([...wanted].sort(listOrder).map(([, k]) => k));
    const noiseSet = new Set(noise);
    expect(all.some((k) => noiseSet.has(k))).toBe(false);
    // the first test's confirmed subjects are listed too, after these (older), each once
    expect(all.length).toBe(40 + 90);
    expect(new Set(all).size).toBe(all.length);
  });
});
