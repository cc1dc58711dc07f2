/**
 * The live feed when Redis fails its reads (a private redis-server whose ACL takes XRANGE or
 * XREAD away: a command error, on demand). A replay that fails rejects and lets its
 * subscriber go, on the live feed of one shard and of two; the live reader keeps retrying
 * with a bounded backoff, warns once, and delivers again once Redis does. On a 3-master Redis
 * Cluster, a replay reads through the fail-fast cluster connection, and losing the master of
 * the stream's slot fails the next replay within a bound.
 */
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { createLogger } from '../../src/daemon/logger.js';
import { connectRedis, duplicateClient, failFastOptions, type RedisClient } from '../../src/adapters/redis/connection.js';
import { EventFeed, type FeedMessage } from '../../src/adapters/feed/event-feed.js';
import { LiveFeed } from '../../src/adapters/feed/live-feed.js';
import { privateRedis, waitFor } from '../helpers/harness.js';
import { startLocalCluster, type LocalCluster } from '../helpers/redis-cluster.js';

let server: EmbeddedRedis;
let redis: Redis;
let reads: Redis;
let admin: Redis;
const lines: Array<{ level: number; msg: string; failures?: number; retryInMs?: number }> = [];
const log = createLogger(
  'debug',
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  }),
  'json',
);
const feeds: EventFeed[] = [];

beforeAll(async () => {
  server = await privateRedis(false);
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  reads = duplicateClient(redis, failFastOptions(1000)) as Redis;
  admin = new Redis(server.url);
  await waitFor('the fail-fast connection ready', () => reads.status === 'ready', 10_000, 10);
});

afterAll(async () => {
  await Promise.all(feeds.map((f) => f.close()));
  for (const c of [redis, reads, admin]) c?.disconnect();
  await server?.stop();
});

async function feedOn(stream: string, entries: number, blockMs = 5000): Promise<EventFeed> {
  for (let j = 0; j < entries; j++) await redis.xadd(stream, '*', 'data', JSON.stringify({ type: 'state', key: `${stream}-${j}`, status: 'pending', at: new Date().toISOString() }));
  const feed = new EventFeed(redis, stream, log, { reads, blockMs });
  feeds.push(feed);
  await feed.start();
  return feed;
}

/** The live feed over `readers` (one shard's, or several). */
const liveOver = (...readers: EventFeed[]): LiveFeed => new LiveFeed(readers, log, { maxReplay: 10_000 });

describe('the live feed when Redis fails its reads', () => {
  it('a replay whose XRANGE (or first, XREVRANGE for the stream end) fails rejects and lets its subscriber go', async () => {
    const reader = await feedOn('one:events', 300);
    const feed = liveOver(reader);
    const got: FeedMessage[] = [];
    for (const command of ['xrange', 'xrevrange']) {
      await admin.acl('SETUSER', 'default', `-${command}`);
      try {
        await expect(feed.subscribe((m) => got.push(m), '0-0')).rejects.toThrow(new RegExp(`NOPERM.*${command}`));
      } finally {
        await admin.acl('SETUSER', 'default', `+${command}`);
      }
      expect(reader.size, `subscribers left behind (${command})`).toBe(0);
    }
    // live events go to the others, not to the one that failed
    const live: FeedMessage[] = [];
    await feed.subscribe((m) => live.push(m));
    await redis.xadd('one:events', '*', 'data', JSON.stringify({ type: 'state', key: 'after', status: 'pending', at: new Date().toISOString() }));
    await waitFor('the live event', () => live.some((m) => m.key === 'after'), 10_000, 10);
    expect(got).toHaveLength(0);
  });

  it('a replay of two shards that fails lets every shard listener go', async () => {
    const shards = [await feedOn('m0:events', 150), await feedOn('m1:events', 150)];
    const merged = liveOver(...shards);
    await admin.acl('SETUSER', 'default', '-xrange');
    try {
      await expect(merged.subscribe(() => undefined, '0-0,0-0')).rejects.toThrow(/NOPERM/);
    } finally {
      await admin.acl('SETUSER', 'default', '+xrange');
    }
    expect(shards.map((f) => f.size)).toEqual([0, 0]);
  });

  it('the live reader retries with a backoff, warns once, and delivers again once Redis does', async () => {
    const feed = liveOver(await feedOn('live:events', 1, 200));
    const live: FeedMessage[] = [];
    await feed.subscribe((m) => live.push(m));
    const failed = (): typeof lines => lines.filter((l) => /event feed read failed/.test(l.msg));
    await admin.acl('SETUSER', 'default', '-xread');
    try {
      await waitFor('three failed reads', () => failed().length >= 3, 15_000, 20);
      await redis.xadd('live:events', '*', 'data', JSON.stringify({ type: 'state', key: 'during', status: 'pending', at: new Date().toISOString() }));
    } finally {
      await admin.acl('SETUSER', 'default', '+xread');
    }
    await waitFor('the event added during the outage', () => live.some((m) => m.key === 'during'), 15_000, 10);
    expect(failed().filter((l) => l.level === 40), 'warnings').toHaveLength(1);
    expect(failed().map((l) => l.failures).slice(0, 3)).toEqual([1, 2, 3]);
    // 0.5 s, 1 s, 2 s (plus jitter) between them: backing off, not a spin
    const waits = failed().map((l) => l.retryInMs!);
    expect(waits[0]).toBeGreaterThanOrEqual(500);
    expect(waits[1]).toBeGreaterThanOrEqual(1000);
    expect(waits[2]).toBeGreaterThanOrEqual(2000);
    await waitFor('reading again', () => lines.some((l) => /event feed reading again/.test(l.msg)), 5000, 10);
  });
});

/** `p`, or a failure naming `what` after `ms`. */
function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

describe('the live feed on a Redis Cluster', () => {
  let cluster: LocalCluster | null = null;
  const clients: RedisClient[] = [];
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
  });

  it('replays through the fail-fast cluster connection; with the slot\'s master lost a replay fails within the bound and leaves no subscriber', { timeout: 60_000 }, async () => {
    cluster = await within('the cluster starting', startLocalCluster(), 30_000);
    const main = connectRedis({ cluster: cluster.urls });
    main.on('error', () => undefined);
    const fast = duplicateClient(main, failFastOptions(1000));
    fast.on('error', () => undefined);
    clients.push(main, fast);
    await waitFor('the cluster connections ready', () => main.status === 'ready' && fast.status === 'ready', 20_000, 20);
    const stream = '{feed-test}:events';
    for (let j = 0; j < 250; j++) await main.xadd(stream, '*', 'data', JSON.stringify({ type: 'state', key: `c-${j}`, status: 'pending', at: new Date().toISOString() }));
    const reader = new EventFeed(main, stream, log, { reads: fast });
    await within('the feed starting', reader.start(), 5000);
    const feed = liveOver(reader);
    try {
      const got: FeedMessage[] = [];
      const sub = await within('the replay', feed.subscribe((m) => got.push(m), '0-0'), 10_000);
      expect(got.map((m) => m.key)).toEqual(Array.from({ length: 250 }, (_, j) => `c-${j}`));
      sub.close();
      await within('the master killed', cluster.ownerOf(stream).then((port) => cluster!.kill(port)), 10_000);
      const started = Date.now();
      await expect(within('the failing replay', feed.subscribe(() => undefined, '0-0'), 10_000)).rejects.toThrow(/^(?!the failing replay)/);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(reader.size).toBe(0);
    } finally {
      await within('the feed closing', reader.close(), 10_000);
    }
  });
});
