/**
 * Tests share the developer's Redis (REDIS_URL, else 127.0.0.1:6379) under unique key
 * prefixes; every prefix handed out is remembered, and after each test file its keys are
 * deleted (test/helpers/clean-shared-redis.ts, a vitest setup file), so a run leaves
 * nothing behind in a Redis it did not start.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../../src/adapters/redis/connection.js';

export const SHARED_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const issued = new Set<string>();

export function uniquePrefix(label = 't'): string {
  const prefix = `${label}-${randomBytes(4).toString('hex')}`;
  issued.add(prefix);
  return prefix;
}

/** Removes every key under a prefix (`{name}` for a hash-tagged one), SCAN + UNLINK, bounded. */
export async function deletePrefix(client: RedisClient, base: string): Promise<number> {
  // SCAN is per node: on a cluster, walk every master
  if (isCluster(client)) {
    let deleted = 0;
    for (const node of client.nodes('master')) deleted += await deletePrefix(node, base);
    return deleted;
  }
  const redis: Redis = client;
  const pattern = `${base.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  let deleted = 0;
  for (let i = 0; i < 100_000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) deleted += await redis.unlink(...keys);
    cursor = next;
    if (cursor === '0') break;
  }
  return deleted;
}

/**
 * Deletes the keys of every prefix issued so far in this test file from the shared Redis
 * and forgets them. Does nothing when none was issued; gives up quietly (bounded) when
 * that Redis does not answer, since then nothing was written to it either.
 */
export async function cleanIssuedPrefixes(): Promise<number> {
  if (issued.size === 0) return 0;
  const prefixes = [...issued];
  issued.clear();
  const { Redis: RedisClient } = await import('ioredis');
  const redis = new RedisClient(SHARED_REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null, enableOfflineQueue: false });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch {
    redis.disconnect();
    return 0;
  }
  try {
    let deleted = 0;
    for (const prefix of prefixes) {
      deleted += await deletePrefix(redis, `{${prefix}}`);
      // redis.shards K > 1: the shards' hash tags {prefix:0} … {prefix:K-1}
      deleted += await deletePrefix(redis, `{${prefix}:`);
    }
    return deleted;
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** The one Redis behind `client`; a test that SCANs needs one node, not a cluster client. */
export function oneRedis(client: RedisClient): Redis {
  if (isCluster(client)) throw new Error('expected a connection to one Redis, got a cluster client');
  return client;
}

/** Every key under `{base}:` on one Redis node, SCAN, bounded. */
export async function prefixKeys(redis: Redis, base: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  for (let i = 0; i < 10_000; i++) {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${base}:*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
    if (cursor === '0') break;
  }
  return keys;
}
