/**
 * One shard's anchor log in the daemon (log.enabled, docs/log.md): accept.lua sequences the
 * subjects into Redis (SubjectStore.logKeys); this service moves them into the log's files
 * and signs a checkpoint at most every log.checkpointIntervalMs while there are new entries.
 * One daemon publishes a shard at a time: it holds a lease in Redis (`<base>:log:lease`,
 * renewed each tick); another daemon takes over only once the lease has expired, and then
 * reopens the folder (which must be the same log: a folder behind Redis is refused).
 */
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connection.js';
import { Lease } from '../redis/lease.js';
import type { LogSigner } from '../../core/log/note.js';
import { LogPublisher } from './log-publisher.js';
import { LogKeys, LogSequencer } from './log-sequencer.js';
import { LogWriter } from './log-writer.js';

export interface LogServiceOptions {
  readonly dir: string;
  readonly origin: string;
  readonly signer: LogSigner;
  readonly intervalMs: number;
  /** The shard's key base (`{prefix}`), the hash tag the log's keys share. */
  readonly base: string;
}

/** A checkpoint just written to the folder (and kept under checkpoints/<size>). */
export interface NewCheckpoint {
  readonly origin: string;
  readonly size: number;
  readonly root: Buffer;
  readonly note: string;
}

/**
 * Told of each new checkpoint, after it is in the folder. A notice, not a queue: a listener
 * that must not miss one keeps its own durable cursor and catches up from the folder's
 * kept checkpoints (CheckpointHistory.sizesAfter) on start and after an error. It runs
 * inside the log's tick, so slow work (network) belongs in the listener's own loop.
 */
export type CheckpointListener = (checkpoint: NewCheckpoint) => Promise<void>;

export class LogService {
  readonly keys: LogKeys;
  readonly sequencer: LogSequencer;
  private readonly lease: Lease;
  private writer: LogWriter | null = null;
  private held = false;
  private timer: NodeJS.Timeout | null = null;
  /** When the last tick started (Date.now()). */
  private lastStart = 0;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  private lastError = '';
  private readonly listeners: CheckpointListener[] = [];

  constructor(
    redis: RedisClient,
    readonly options: LogServiceOptions,
    private readonly log: Logger,
  ) {
    this.keys = new LogKeys(options.base);
    this.sequencer = new LogSequencer(redis as never, this.keys);
    this.lease = new Lease(redis, `${options.base}:log:lease`, Math.max(10_000, 5 * options.intervalMs));
  }

  /** Does this daemon hold the lease (write the folder) as of its last tick? */
  get writing(): boolean {
    return this.held;
  }

  get leaseKey(): string {
    return this.lease.key;
  }

  /** Adds a listener told of every checkpoint this service writes; its errors are logged, never thrown. */
  onCheckpoint(listener: CheckpointListener): void {
    this.listeners.push(listener);
  }

  private async tell(checkpoint: NewCheckpoint): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(checkpoint);
      } catch (err) {
        this.log.error({ err, size: checkpoint.size }, 'anchor log: a checkpoint listener failed (it catches up from the folder)');
      }
    }
  }

  /** Opens the folder (refusing one that is not this log's) and starts the ticks. */
  async start(): Promise<void> {
    this.writer = await this.open();
    this.lastStart = Date.now();
    this.schedule();
  }

  /**
   * The next tick one interval after the last one started (at once when that tick took
   * longer): a subject waits about one interval and one tick for its checkpoint, not one
   * interval and two ticks.
   */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.lastStart = Date.now();
      this.running = this.tick().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, Math.max(0, this.lastStart + this.options.intervalMs - Date.now()));
    this.timer.unref();
  }

  /** One tick: take or renew the lease, then publish what is new. Errors are logged once per kind, never thrown. */
  async tick(): Promise<{ size: number } | null> {
    try {
      const got = await this.lease.hold();
      // a lease newly taken: another daemon may have written the folder meanwhile
      if (got && !this.held) this.writer = null;
      this.held = got;
      if (!got) return null;
      const writer = (this.writer ??= await this.open());
      const out = await new LogPublisher(this.sequencer, writer).publish();
      if (out.resequenced > 0) this.log.warn({ resequenced: out.resequenced }, 'anchor log: Redis was behind the log folder; settled from the files');
      if (out.lost > 0) {
        this.log.warn({ lost: out.lost }, 'anchor log: the folder holds subjects whose acceptance Redis lost (its last writes); each keeps its entry, and one sent again is accepted with the envelope it was logged with');
      }
      this.lastError = '';
      if (!out.checkpoint) return null;
      const { checkpoint } = writer.checkpointed;
      await this.tell({ origin: checkpoint.origin, size: checkpoint.size, root: checkpoint.root, note: out.checkpoint.note });
      return { size: out.checkpoint.size };
    } catch (err) {
      // the writer may hold entries no checkpoint covers: reopen it from the files next tick
      this.writer = null;
      const message = (err as Error).message;
      if (message !== this.lastError) this.log.error({ err }, `anchor log: checkpoint not written (tried again every ${this.options.intervalMs} ms)`);
      this.lastError = message;
      return null;
    }
  }

  private open(): Promise<LogWriter> {
    return LogWriter.open({ dir: this.options.dir, origin: this.options.origin, signer: this.options.signer });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (this.held) await this.lease.release().catch(() => undefined);
  }
}
