/**
 * What the client commands (enqueue, status, proof) share: the daemon's configuration
 * and a connection to its Redis, without starting anything.
 */
import { join, resolve } from 'node:path';
import { Queue } from 'bullmq';
import { loadConfig, type Config } from '../../adapters/config/config.js';
import { UsageError } from '../../core/errors/errors.js';
import { EMBEDDED_REDIS_FILE, readEmbeddedRedisRecord } from '../../daemon/embedded-redis.js';
import { connectRedis, describeClient, redisAnswers, type RedisClient, type RedisTarget } from '../../adapters/redis/connection.js';
import type { AnchorStore } from '../../adapters/state/anchor-store.js';
import { ShardedStore } from '../../adapters/state/sharded-store.js';
import { StateKeys } from '../../adapters/state/keys.js';
import { shardTargets, type ShardTarget } from '../../adapters/queue/routed-producer.js';
import { checkSlotServed, describeClusterRedirect } from '../../adapters/redis/cluster-redirect.js';

export interface Client {
  config: Config;
  redis: RedisClient;
  /** Shard 0's store (with one shard, the state). */
  store: AnchorStore;
  /** Every shard's state as one (redis.shards): `state.of(key)` is the key's shard. */
  state: ShardedStore;
  queue(): Queue;
  /** Shard i's intake queue and store at index i (what the routed producer takes). */
  targets(): ShardTarget[];
  close(): Promise<void>;
}

export const CLIENT_OPTIONS = {
  config: { type: 'string' },
  'redis-url': { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * The daemon's Redis when none is configured, found the way the daemon chose it:
 * 127.0.0.1:6379 when it answers (and redis.localDefault is on), else the embedded
 * redis-server recorded in redis.embeddedDir/aer1-redis.json while the daemon runs it.
 */
async function daemonRedisUrl(config: Config): Promise<string> {
  if (config.redis.localDefault && (await redisAnswers('127.0.0.1', 6379))) return 'redis://127.0.0.1:6379';
  const record = readEmbeddedRedisRecord(config.redis.embeddedDir);
  if (record && (await redisAnswers('127.0.0.1', record.port))) return record.url;
  const file = join(resolve(config.redis.embeddedDir), EMBEDDED_REDIS_FILE);
  throw new UsageError(
    `no Redis to talk to: nothing answers on 127.0.0.1:6379 and no running embedded redis-server is recorded in ${file}; set REDIS_URL (or --redis-url) to the daemon's Redis`,
    'no_redis',
  );
}

export async function connectClient(opts: { config?: string | undefined; 'redis-url'?: string | undefined }): Promise<Client> {
  const config = loadConfig({ file: opts.config });
  // --redis-url names one Redis and wins over the config; else redis.cluster, redis.url, or the daemon's default
  const target: RedisTarget = opts['redis-url'] ?? (config.redis.cluster.length > 0 ? { cluster: config.redis.cluster } : (config.redis.url ?? (await daemonRedisUrl(config))));
  const url = typeof target === 'string' ? target : target.cluster.join(',');
  const redis = connectRedis(target);
  redis.on('error', () => undefined);
  try {
    await Promise.race([
      redis.ping(),
      new Promise((_, rej) => setTimeout(() => rej(new Error('timed out')), 5000).unref()),
    ]);
  } catch (err) {
    redis.disconnect();
    throw new UsageError(`cannot reach ${typeof target === 'string' ? 'Redis' : 'the Redis Cluster'} at ${url.replace(/\/\/[^@]*@/g, '//***@')}: ${(err as Error).message}`, 'no_redis');
  }
  const state = ShardedStore.open(redis, config.redis.prefix, config.redis.shards);
  const store = state.shards[0]!;
  for (const s of state.shards) {
    const redirect = await checkSlotServed(redis, s.keys.probe).catch(() => null);
    if (redirect) {
      redis.disconnect();
      throw new UsageError(describeClusterRedirect(redirect, s.keys.base, describeClient(redis)), 'redis_cluster');
    }
    try {
      await s.openSchema({ write: false });
    } catch (err) {
      redis.disconnect();
      throw err;
    }
  }
  let queue: Queue | null = null;
  let targets: ShardTarget[] | null = null;
  // the usual intake queue ({prefix}): with several shards the daemon routes its subjects
  const usualQueue = (): Queue => (queue ??= new Queue(config.queue.name, { connection: redis, prefix: new StateKeys(config.redis.prefix).bullPrefix }));
  return {
    config,
    redis,
    store,
    state,
    targets() {
      targets ??= config.redis.shards === 1 ? [{ queue: usualQueue(), subjects: store.subjects }] : shardTargets(redis, { prefix: config.redis.prefix, queueName: config.queue.name, shards: config.redis.shards });
      return targets;
    },
    queue: usualQueue,
    async close() {
      await queue?.close();
      if (targets && config.redis.shards > 1) await Promise.all(targets.map((t) => t.queue.close()));
      await redis.quit().catch(() => undefined);
    },
  };
}
