/**
 * What the client commands (enqueue, status, proof) share: the daemon's configuration
 * and a connection to its Redis, without starting anything.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../config/config.js';
import { UsageError } from '../errors.js';
import { connectRedis, redisAnswers } from '../daemon/redis.js';
import { AnchorStore } from '../state/anchor-store.js';

export interface Client {
  config: Config;
  redis: Redis;
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

export async function connectClient(opts: { config?: string | undefined; 'redis-url'?: string | undefined }): Promise<Client> {
  const config = loadConfig({ file: opts.config });
  let url = opts['redis-url'] ?? config.redis.url;
  if (!url) {
    if (!(await redisAnswers('127.0.0.1', 6379))) {
      throw new UsageError('no Redis to talk to: set REDIS_URL (or --redis-url) to the daemon\'s Redis', 'no_redis');
    }
    url = 'redis://127.0.0.1:6379';
  }
  const redis = connectRedis(url);
  redis.on('error', () => undefined);
  try {
    await Promise.race([
      redis.ping(),
      new Promise((_, rej) => setTimeout(() => rej(new Error('timed out')), 5000).unref()),
    ]);
  } catch (err) {
    redis.disconnect();
    throw new UsageError(`cannot reach Redis at ${url.replace(/\/\/[^@]*@/, '//***@')}: ${(err as Error).message}`, 'no_redis');
  }
  const store = new AnchorStore(redis, config.redis.prefix);
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
