/**
 * Where the daemon's Redis is: `REDIS_URL` / redis.url when set; otherwise 127.0.0.1:6379
 * when something answers there; otherwise an embedded redis-server child (see embedded-redis.ts).
 */
import { Redis, type RedisOptions } from 'ioredis';
import { createConnection } from 'node:net';

export function connectRedis(url: string, opts: { autoPipelining?: boolean } = {}): Redis {
  // Auto-pipelining batches the many small commands of concurrent jobs into one write; it is
  // for the state store's connection only, never for one BullMQ blocks on.
  return new Redis(url, { maxRetriesPerRequest: null, enableAutoPipelining: opts.autoPipelining === true });
}

/**
 * For a connection that requests wait on: a command fails rather than waits. None is queued
 * while the connection is down or re-sent after a reconnect (a write a client was told 503 for
 * must not land later), and each gives up after `timeoutMs`.
 */
export function failFastOptions(timeoutMs: number): RedisOptions {
  return { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, commandTimeout: timeoutMs, enableAutoPipelining: true };
}

/** True when something on host:port answers a Redis PING within `timeoutMs`. */
export function redisAnswers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let buf = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
  });
}
