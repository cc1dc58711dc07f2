/**
 * RefusalBackoff: one per daemon, shared by every worker and loop that writes to Redis. When
 * Redis refuses (full under `noeviction`, read-only, busy, away), nothing can progress, and
 * BullMQ 5's workers retry a refused `moveToActive` at once, each logging it: so the first
 * refusal pauses every watched worker, a write probe (1 a second) tells when Redis takes
 * writes again, and then every worker resumes at once. A pause that follows soon after a
 * resume lasts longer (1 s doubling to 4 s, jittered) before the probe may end it, so a
 * Redis hovering at its limit is not hammered. The condition is logged once, with a reminder
 * every `reminderMs` counting the refusals since, and once more when it ends — never per
 * command, and never with a stack.
 */
import type { Worker } from 'bullmq';
import type { Logger } from 'pino';
import { backoffDelay } from '../../core/retry/backoff.js';
import { redisRefusal, type RedisRefusal } from './redis-refusal.js';

export interface RefusalBackoffOptions {
  log: Logger;
  /** One write Redis refuses while the condition lasts (a probe key's SET); resolves when it is taken. */
  probe: () => Promise<unknown>;
  /** Shortest and longest pause before the probe may end a hold (default 1 s, 4 s: the longest work waits once Redis takes writes again). */
  initialMs?: number;
  maxMs?: number;
  /** How often the probe runs once the pause is over (default 1 s). */
  probeEveryMs?: number;
  /** How often a hold is reminded in the log (default 60 s). */
  reminderMs?: number;
  /** A hold that starts within this long of the last one ending counts as the same condition (default 30 s). */
  quietMs?: number;
  now?: () => number;
}

/** Longest a probe write is waited for before it counts as refused. */
const PROBE_TIMEOUT_MS = 5000;

/** What a worker is to the backoff: BullMQ's Worker, paused without waiting for its jobs. */
type Pausable = Pick<Worker, 'pause' | 'resume' | 'isRunning' | 'closing'>;

export class RefusalBackoff {
  private readonly o: Required<Omit<RefusalBackoffOptions, 'log' | 'probe' | 'now'>>;
  private readonly log: Logger;
  private readonly probe: () => Promise<unknown>;
  private readonly now: () => number;
  private readonly workers = new Set<Pausable>();
  private holdingSince: number | null = null;
  /** Holds in a row, each starting within quietMs of the last one's end. */
  private streak = 0;
  private lastEnd = -Infinity;
  private refusedSinceLog = 0;
  private refusedTotal = 0;
  private lastLogAt = 0;
  private announced = false;
  private endSaid = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(opts: RefusalBackoffOptions) {
    this.log = opts.log;
    this.probe = opts.probe;
    this.now = opts.now ?? Date.now;
    this.o = { initialMs: opts.initialMs ?? 1000, maxMs: opts.maxMs ?? 4000, probeEveryMs: opts.probeEveryMs ?? 1000, reminderMs: opts.reminderMs ?? 60_000, quietMs: opts.quietMs ?? 30_000 };
  }

  /** True while Redis is held to be refusing: loops skip their turn. */
  get holding(): boolean {
    return this.holdingSince !== null;
  }

  /** Refusals seen since this process started (for tests and metrics). */
  get refusals(): number {
    return this.refusedTotal;
  }

  /**
   * Watches a worker: its refusals engage the backoff (which pauses it with the rest) and are
   * not logged one by one; any other error goes to `otherError`.
   */
  watch(worker: Worker, otherError: (err: Error) => void): void {
    this.workers.add(worker);
    worker.on('error', (err) => {
      if (!this.refused(err)) otherError(err);
    });
    worker.on('closed', () => this.workers.delete(worker));
    if (this.holding) void worker.pause(true).catch(() => undefined);
  }

  /** Reports an error from anywhere; true when it is a Redis refusal (then handled here: the caller logs nothing). */
  refused(err: unknown): boolean {
    const refusal = redisRefusal(err);
    if (!refusal || this.closed) return refusal !== null;
    this.refusedSinceLog++;
    this.refusedTotal++;
    if (this.holdingSince === null) this.engage(refusal);
    return true;
  }

  private engage(refusal: RedisRefusal): void {
    const now = this.now();
    this.holdingSince = now;
    this.streak = now - this.lastEnd <= this.o.quietMs ? this.streak + 1 : 1;
    for (const w of this.workers) void w.pause(true).catch(() => undefined);
    if (!this.announced) {
      this.announced = true;
      this.lastLogAt = now;
      this.refusedSinceLog = 0;
      this.log.warn(
        { redis: refusal.kind, detail: refusal.detail, reminderEveryMs: this.o.reminderMs },
        `Redis refuses writes (${refusal.kind}: ${refusal.detail}); workers pause and resume as soon as Redis takes a write again`,
      );
    }
    this.schedule(backoffDelay(this.streak, this.o.initialMs, this.o.maxMs));
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.tryProbe(), ms);
    this.timer.unref();
  }

  private async tryProbe(): Promise<void> {
    this.timer = null;
    if (this.closed || this.holdingSince === null) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      // a probe waiting on a connection that is down counts as refused, so a hold always ends by the probe
      await Promise.race([this.probe(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('probe: no answer')), PROBE_TIMEOUT_MS)))]);
    } catch (err) {
      if (redisRefusal(err)) {
        this.refusedSinceLog++;
        this.refusedTotal++;
      }
      this.remind();
      this.schedule(this.o.probeEveryMs);
      return;
    } finally {
      clearTimeout(timer);
    }
    this.release();
  }

  private remind(): void {
    const now = this.now();
    if (now - this.lastLogAt < this.o.reminderMs) return;
    this.log.warn({ forMs: now - (this.holdingSince ?? now), refused: this.refusedSinceLog }, `Redis still refuses writes: ${this.refusedSinceLog} refused in the last ${Math.round((now - this.lastLogAt) / 1000)} s; workers stay paused`);
    this.lastLogAt = now;
    this.refusedSinceLog = 0;
  }

  private release(): void {
    const now = this.now();
    const since = this.holdingSince ?? now;
    this.holdingSince = null;
    this.lastEnd = now;
    for (const w of this.workers) if (!w.closing) w.resume();
    // one line per condition: a hold within quietMs of this one is the same condition
    if (this.announced && !this.endSaid) {
      this.endSaid = true;
      this.log.info({ heldMs: now - since, refused: this.refusedSinceLog }, 'Redis takes writes again; workers resumed');
      this.lastLogAt = now;
      this.refusedSinceLog = 0;
    }
    const check = setTimeout(() => {
      if (this.holdingSince !== null || this.now() - this.lastEnd < this.o.quietMs) return;
      this.announced = false;
      this.endSaid = false;
    }, this.o.quietMs + 10);
    check.unref();
  }

  /** Stops probing; watched workers are left to their own close. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.holdingSince = null;
    this.workers.clear();
  }
}
