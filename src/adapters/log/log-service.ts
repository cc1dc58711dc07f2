/**
 * One shard's anchor log in the daemon (log.enabled, docs/log.md): accept.lua sequences the
 * subjects into Redis (SubjectStore.logKeys); this service moves them into the log's files
 * and signs a checkpoint at most every log.checkpointIntervalMs while there are new entries,
 * as soon as a burst of them has settled (`due`).
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
  /**
   * Whether more entries are on their way (the intake has jobs waiting or running); without
   * it, entries that did not grow between two looks count as settled.
   */
  readonly busy?: () => Promise<boolean>;
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
  /** When the last tick started, and when the last one that wrote a checkpoint did (Date.now()). */
  private lastTick = -Infinity;
  private lastCheckpoint = -Infinity;
  /** Since when entries have waited for a checkpoint (-1: none known), and the sequence's size at the last look (-1: not looked). */
  private waitingSince = -1;
  private seenSize = -1;
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

  /**
   * Opens the folder (refusing one that is not this log's) and ticks one interval later, or
   * as soon as this daemon sequences entries (`arrived`).
   */
  async start(): Promise<void> {
    this.writer = await this.open();
    this.schedule(this.options.intervalMs);
  }

  /**
   * When to tick. A checkpoint at most every interval, as soon as one is allowed and the
   * entries waiting for it have settled: no more on their way (`busy`), or, without that,
   * none added between two looks `lookMs` apart (so a burst's checkpoint covers all of it,
   * not the part before a fixed tick); or once they have waited an interval (entries that
   * keep coming get one every interval). So a subject waits at most about one interval and
   * one look. Entries this daemon sequences wake the service (`arrived`); those of other
   * daemons are seen at the next tick, which runs every interval anyway (it renews the
   * lease).
   */
  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.step().finally(() => {
        this.running = null;
        if (!this.timer) this.schedule(this.nextDelay());
      });
    }, Math.max(0, delayMs));
    this.timer.unref();
  }

  /**
   * Until the next step: the next look while entries wait and this daemon writes the folder,
   * else the next tick (it renews the lease, or tries to take it over: a daemon without the
   * lease looks at nothing in between).
   */
  private nextDelay(): number {
    const now = Date.now();
    if (this.waitingSince < 0 || !this.held) return this.lastTick + this.options.intervalMs - now;
    return Math.max(this.lastCheckpoint + this.options.intervalMs - now, this.seenSize >= 0 ? this.lookMs : 0);
  }

  /** Tells the service this daemon just sequenced entries: they wait for a checkpoint from now (at the latest). */
  arrived(): void {
    if (this.waitingSince >= 0 || this.stopped) return;
    this.waitingSince = Date.now();
    // a step under way schedules the next one itself
    if (!this.running) this.schedule(this.nextDelay());
  }

  /** How often the sequence is looked at while entries wait and a checkpoint is allowed: 10–50 ms. */
  private get lookMs(): number {
    return Math.min(50, Math.max(10, Math.floor(this.options.intervalMs / 20)));
  }

  /** One step: a tick when one is due (schedule()), else one more look. */
  private async step(): Promise<void> {
    if (await this.due().catch(() => true)) {
      const started = Date.now();
      this.lastTick = started;
      this.waitingSince = -1;
      this.seenSize = -1;
      if (await this.tick()) this.lastCheckpoint = started;
    }
  }

  private async due(): Promise<boolean> {
    const now = Date.now();
    // not writing the folder: the lease first (a daemon that does not get it ticks every interval to take it over once it runs out)
    if (!this.held && !(await this.holdLease())) return now - this.lastTick >= this.options.intervalMs;
    if (now - this.lastCheckpoint < this.options.intervalMs) return now - this.lastTick >= this.options.intervalMs;
    const { size, published } = await this.sequencer.state();
    if (size <= published) {
      this.waitingSince = -1;
      this.seenSize = -1;
      return now - this.lastTick >= this.options.intervalMs;
    }
    if (this.waitingSince < 0) this.waitingSince = now;
    const settled = this.options.busy ? !(await this.options.busy()) : size === this.seenSize;
    this.seenSize = size;
    return settled || now - this.waitingSince >= this.options.intervalMs;
  }

  /** One tick: take or renew the lease, then publish what is new. Errors are logged once per kind, never thrown. */
  async tick(): Promise<{ size: number } | null> {
    try {
      if (!(await this.holdLease())) return null;
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

  /** Takes or renews the lease; one newly taken reopens the folder (another daemon may have written it meanwhile). */
  private async holdLease(): Promise<boolean> {
    const got = await this.lease.hold();
    if (got && !this.held) this.writer = null;
    this.held = got;
    return got;
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
