/**
 * PeriodicPass: a bounded pass run every `intervalMs` by one daemon at a time across all of
 * them: a BullMQ job scheduler (every daemon upserts the same one) makes one job per tick,
 * taken by one worker with concurrency 1. Used by the reconciler, retention and relay upkeep
 * (each built by `shardPass` from the same shard fields). A Redis
 * refusing writes (full, read-only) when the scheduler is upserted is tried again each
 * interval, not fatal.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import { redisRefusal } from '../redis/redis-refusal.js';
import { stalledJobOptions } from './stalled.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

export interface PeriodicPassOptions {
  /** The pass's queue (one per kind of pass). */
  queueName: string;
  /** BullMQ key prefix (`StateKeys.bullPrefix`). */
  prefix: string;
  connection: ConnectionOptions;
  intervalMs: number;
  stalledIntervalMs: number;
  /** The job scheduler's id and its jobs' name (kept across versions: a new id would add a second scheduler). */
  schedulerId: string;
  /** What the log lines call it ("reconciler", "retention"). */
  name: string;
  log: Logger;
  run: () => Promise<unknown>;
  /** The daemon's shared backoff while Redis refuses writes. */
  refusals?: RefusalBackoff;
}

export class PeriodicPass {
  private readonly opts: PeriodicPassOptions;
  private readonly queue: Queue;
  private worker: Worker | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(opts: PeriodicPassOptions) {
    this.opts = opts;
    this.queue = new Queue(opts.queueName, { connection: opts.connection, prefix: opts.prefix });
    this.queue.on('error', (err) => opts.log.warn({ err }, `${opts.name} queue error`));
  }

  /** Schedules the pass and starts this daemon's worker. */
  async start(): Promise<void> {
    const { opts } = this;
    await this.schedule();
    this.worker = new Worker(opts.queueName, () => opts.run(), {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency: 1,
      ...stalledJobOptions(opts.stalledIntervalMs),
    });
    const otherError = (err: Error): void => void opts.log.warn({ err }, `${opts.name} worker error`);
    if (opts.refusals) opts.refusals.watch(this.worker, otherError);
    else this.worker.on('error', otherError);
    this.worker.on('failed', (_job, err) => {
      if (!opts.refusals?.refused(err)) opts.log.warn({ err }, `${opts.name} pass failed; the next one retries`);
    });
    await this.worker.waitUntilReady();
  }

  private async schedule(): Promise<void> {
    const { opts } = this;
    const id = opts.schedulerId;
    try {
      await this.queue.upsertJobScheduler(id, { every: opts.intervalMs }, { name: id, opts: { removeOnComplete: true, removeOnFail: 10 } });
    } catch (err) {
      if (redisRefusal(err) === null || this.closed) throw err;
      opts.log.warn({ err }, `could not schedule the ${opts.name} pass yet; trying again`);
      this.retry = setTimeout(() => void this.schedule().catch((e: unknown) => opts.log.error({ err: e }, `${opts.name} pass not scheduled`)), opts.intervalMs);
      this.retry.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    await this.worker?.close();
    await this.queue.close();
  }
}

/** What every pass of a shard is built from: the deps of the reconciler, retention and relay upkeep carry these. */
export interface ShardPassDeps {
  /** `queue.name` (the base of the pass's queue name) and `queue.stalledIntervalMs`. */
  config: { queue: { name: string; stalledIntervalMs: number } };
  /** The shard's state store: its BullMQ key prefix. */
  store: { keys: { bullPrefix: string } };
  connection: ConnectionOptions;
  /** The daemon's shared backoff while Redis refuses writes. */
  refusals?: RefusalBackoff;
}

/** One kind of pass: what differs between the reconciler, retention and relay upkeep. */
export interface ShardPassKind {
  /** The pass's queue name from `queue.name` (names.ts). */
  queueName: (base: string) => string;
  schedulerId: string;
  name: string;
  intervalMs: number;
  log: Logger;
  run: () => Promise<unknown>;
}

/** A shard's periodic pass of one kind. */
export function shardPass(deps: ShardPassDeps, kind: ShardPassKind): PeriodicPass {
  return new PeriodicPass({
    queueName: kind.queueName(deps.config.queue.name),
    prefix: deps.store.keys.bullPrefix,
    connection: deps.connection,
    intervalMs: kind.intervalMs,
    stalledIntervalMs: deps.config.queue.stalledIntervalMs,
    schedulerId: kind.schedulerId,
    name: kind.name,
    log: kind.log,
    run: kind.run,
    ...(deps.refusals ? { refusals: deps.refusals } : {}),
  });
}
