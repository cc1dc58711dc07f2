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
import { AnchorStore } from '../../adapters/state/anchor-store.js';
import { checkSlotServed, describeClusterRedirect } from '../../adapters/redis/cluster-redirect.js';

export interface Client {
  config: Config;
  redis: RedisClient;
  store: AnchorStore;
  queue(): Queue;
  close(): Promise<void>;
}

export const CLIENT_OPTIONS = {
  config: { type: 'string' },
  'redis-url': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
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
  const store = new AnchorStore(redis, config.redis.prefix);
  const redirect = await checkSlotServed(redis, store.keys.probe).catch(() => null);
  if (redirect) {
    redis.disconnect();
    throw new UsageError(describeClusterRedirect(redirect, store.keys.base, describeClient(redis)), 'redis_cluster');
  }
  let queue: Queue | null = null;
  return {
    config,
    redis,
    store,
    queue() {
      queue ??= new Queue(config.queue.name, { connection: redis, prefix: store.keys.bullPrefix });
      return queue;
    },
    async close() {
      await queue?.close();
      await redis.quit().catch(() => undefined);
    },
  };
}
