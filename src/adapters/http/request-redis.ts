/**
 * The HTTP server's own Redis connection, and the daemon seen through it: the state store,
 * the intake queue and the queue counts all on a connection whose commands fail rather than
 * wait (see `failFastOptions`). So no request waits on a dead Redis longer than
 * `http.redisTimeoutMs`, and a POST answered 503 is not written behind the client's back
 * once Redis answers again. The daemon's own connections keep waiting and re-sending: its
 * jobs must survive a Redis restart, a client's request need not.
 */
import { Queue } from 'bullmq';
import { duplicateClient, failFastOptions, type RedisClient as Redis } from '../redis/connection.js';
import type { Logger } from 'pino';
import { queueDepth } from '../queue/depth.js';
import { ShardedStore } from '../state/sharded-store.js';
import type { DaemonView } from '../view/daemon-view.js';

const CONNECT_TIMEOUT_MS = 10_000;

export class RequestRedis {
  readonly redis: Redis;
  /** The daemon, with every Redis read and write of a request on this connection. */
  readonly view: DaemonView;
  private readonly queues: Queue[];

  private constructor(redis: Redis, daemon: DaemonView, log: Logger) {
    this.redis = redis;
    const state = ShardedStore.open(redis, daemon.config.redis.prefix, daemon.config.redis.shards);
    const store = state.shards[0]!;
    const quiet = (err: Error): void => log.debug({ err }, 'redis error (http)');
    const mirror = (q: Queue): Queue => {
      const m = new Queue(q.name, { connection: redis, prefix: q.opts.prefix });
      m.on('error', quiet);
      return m;
    };
    const intakeQueue = mirror(daemon.intakeQueue);
    const mirrored = new Map<Queue, Queue>([[daemon.intakeQueue, intakeQueue]]);
    for (const q of daemon.queues) if (!mirrored.has(q)) mirrored.set(q, mirror(q));
    const queues = [...mirrored.values()];
    const intakeTargets = daemon.intakeTargets.map((t, i) => ({ queue: mirrored.get(t.queue) ?? mirror(t.queue), subjects: state.shards[i]!.subjects }));
    this.queues = queues;
    this.view = {
      config: daemon.config,
      redis,
      store,
      state,
      intakeTargets,
      metrics: daemon.metrics,
      health: daemon.health,
      witnesses: daemon.witnesses,
      signerPubkey: daemon.signerPubkey ?? null,
      anchorLogs: daemon.anchorLogs ?? [],
      intakeQueue,
      queues,
      get running() {
        return daemon.running;
      },
      queueCounts: () => queueDepth(queues),
    };
  }

  /** Opens the connection and waits (bounded) until it is ready: a fail-fast connection refuses commands until then. */
  static async open(daemon: DaemonView, timeoutMs: number, log: Logger): Promise<RequestRedis> {
    // several shards on one connection: no auto-pipelining, which on a cluster client groups a
    // script by its first argument (the key count), not its keys, and would mix two shards' keys
    const shards = daemon.config.redis.shards;
    const redis = duplicateClient(daemon.redis, { ...failFastOptions(timeoutMs), ...(shards > 1 ? { enableAutoPipelining: false } : {}) });
    redis.on('error', (err: Error) => log.debug({ err }, 'redis connection error (http)'));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the HTTP server's Redis connection was not ready within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
        const ready = (): void => {
          clearTimeout(timer);
          resolve();
        };
        if (redis.status === 'ready') ready();
        else redis.once('ready', ready);
      });
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    const requests = new RequestRedis(redis, daemon, log);
    // a queue whose first commands (its version check) failed stays broken: find out now, not on the first POST
    try {
      await Promise.all(requests.queues.map((q) => q.waitUntilReady()));
    } catch (err) {
      await requests.close();
      throw err;
    }
    return requests;
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((q) => q.close().catch(() => undefined)));
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
