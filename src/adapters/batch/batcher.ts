/**
 * Batcher: cuts a witness's inbox into batches, by size (as soon as `maxSize` subjects
 * wait) or by time (every `windowMs`). The cut itself is one Lua script, so several
 * daemons may cut the same inbox safely; every cut batch stays "open" in Redis until
 * its witness job has taken it, and open batches are handed over again on every tick,
 * which is what resumes them after a crash. With the anchor log on, the subjects the log
 * sequenced are cut from its signed checkpoints (`fromLog`, checkpoint-cuts.ts), and the
 * inbox keeps only those it did not (docs/log.md, "Witnessing checkpoints").
 */
import type { Logger } from 'pino';
import type { AnchorStore } from '../state/anchor-store.js';
import type { WitnessName } from '../state/keys.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

export interface BatcherOptions {
  /** The daemon's shared backoff: no pass while Redis refuses writes, and its refusals are logged there. */
  refusals?: RefusalBackoff;
  maxSize: number;
  windowMs: number;
  /** Hands a batch to its witness; must be idempotent per batch id. */
  handOver: (batchId: string) => Promise<void>;
  /**
   * Asked after subjects arrive, with how many wait: true cuts them now instead of at the
   * next tick (Nostr auto mode, while they would get their own events anyway).
   */
  cutEarly?: (waiting: number) => Promise<boolean>;
  /** The anchor log's checkpoints as a second source of cuts, taken before the inbox. */
  fromLog?: CutSource;
}

/** Where a batcher cuts from besides the inbox: what waits there, and the next cut. */
export interface CutSource {
  waiting(): Promise<number>;
  cut(max: number): Promise<{ id: string; size: number } | null>;
}

const MAX_CUTS_PER_TICK = 1000;

export class Batcher {
  readonly witness: WitnessName;
  private readonly store: AnchorStore;
  private readonly opts: BatcherOptions;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(witness: WitnessName, store: AnchorStore, opts: BatcherOptions, log: Logger) {
    this.witness = witness;
    this.store = store;
    this.opts = opts;
    this.log = log.child({ batcher: witness });
  }

  start(): void {
    if (this.timer) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.tick(true), this.opts.windowMs);
    this.timer.unref();
    void this.tick(true);
  }

  /**
   * Called after subjects arrive: cuts at once when a full batch waits, or when `cutEarly`
   * says so. `waiting` is the inbox length the accept script saw (undefined: ask Redis;
   * null: nothing arrived).
   */
  async poke(waiting?: number | null): Promise<void> {
    if (waiting === null) return;
    const n = waiting ?? (await this.store.batches.inboxLength(this.witness)) + ((await this.opts.fromLog?.waiting()) ?? 0);
    if (n >= this.opts.maxSize) await this.tick(false);
    else if (n > 0 && this.opts.cutEarly && (await this.opts.cutEarly(n))) await this.tick(true);
  }

  /** One pass: hand over open batches, then cut (all that waits, or only full batches). */
  tick(cutPartial: boolean): Promise<void> {
    if (this.running) {
      this.again ||= cutPartial;
      return this.running;
    }
    // stopped: a late poke (a checkpoint written while the daemon stops) cuts nothing
    if (this.stopped || this.opts.refusals?.holding) return Promise.resolve();
    this.running = this.pass(cutPartial)
      .catch((err: unknown) => {
        if (!this.opts.refusals?.refused(err)) this.log.warn({ err }, 'batch pass failed; retrying next tick');
      })
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          void this.tick(true);
        }
      });
    return this.running;
  }

  private async pass(cutPartial: boolean): Promise<void> {
    for (const id of await this.store.batches.openBatchIds(this.witness)) await this.opts.handOver(id);
    const inbox: CutSource = { waiting: () => this.store.batches.inboxLength(this.witness), cut: (max) => this.store.batches.cutBatch(this.witness, max) };
    for (const source of this.opts.fromLog ? [this.opts.fromLog, inbox] : [inbox]) {
      for (let i = 0; i < MAX_CUTS_PER_TICK; i++) {
        // A timer tick cuts one partial batch; beyond that, and on pokes, only full ones.
        const partialAllowed = cutPartial && i === 0;
        if (!partialAllowed && (await source.waiting()) < this.opts.maxSize) break;
        const batch = await source.cut(this.opts.maxSize);
        if (!batch) break;
        this.log.debug({ batch: batch.id, size: batch.size }, 'batch cut');
        await this.opts.handOver(batch.id);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
