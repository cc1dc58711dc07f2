/**
 * Batcher: cuts a witness's inbox into batches, by size (as soon as `maxSize` subjects
 * wait) or by time (every `windowMs`). The cut itself is one Lua script, so several
 * daemons may cut the same inbox safely; every cut batch stays "open" in Redis until
 * its witness job has taken it, and open batches are handed over again on every tick,
 * which is what resumes them after a crash. With the anchor log on, the subjects the log
 * sequenced are cut from its signed checkpoints (`fromLog`, checkpoint-cuts.ts), and the
 * inbox keeps only those it did not (docs/log.md, "Witnessing checkpoints"). Those cuts
 * follow the checkpoints this daemon writes (`checkpointed`): one at the first checkpoint
 * after a window has passed since the last cut from the log, so a subject does not wait
 * for the window's next tick, and a witness still sees one cut a window (or a full batch).
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
  /** Entries still waiting for a checkpoint to cover them (the log's only). */
  unsigned?(): Promise<number>;
}

/** What one pass may cut besides full batches: a partial batch from the inbox, from the log. */
interface PassCuts {
  inbox: boolean;
  log: boolean;
}
const FULL_ONLY: PassCuts = { inbox: false, log: false };
const ALL: PassCuts = { inbox: true, log: true };

const MAX_CUTS_PER_TICK = 1000;

export class Batcher {
  readonly witness: WitnessName;
  private readonly store: AnchorStore;
  private readonly opts: BatcherOptions;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** What a pass asked for while one ran: done by one more pass after it. */
  private again: PassCuts | null = null;
  private stopped = false;
  /** When the last batch was cut from the log, and when this daemon last wrote a checkpoint (ms). */
  private lastLogCut = -Infinity;
  private lastCheckpoint = -Infinity;

  constructor(witness: WitnessName, store: AnchorStore, opts: BatcherOptions, log: Logger, private readonly now: () => number = Date.now) {
    this.witness = witness;
    this.store = store;
    this.opts = opts;
    this.log = log.child({ batcher: witness });
  }

  start(): void {
    if (this.timer) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.windowTick(), this.opts.windowMs);
    this.timer.unref();
    void this.windowTick();
  }

  /**
   * Called after subjects arrive: cuts at once when a full batch waits, or when `cutEarly`
   * says so. `waiting` is the inbox length the accept script saw (undefined: ask Redis;
   * null: nothing arrived).
   */
  async poke(waiting?: number | null): Promise<void> {
    if (waiting === null) return;
    const n = waiting ?? (await this.store.batches.inboxLength(this.witness)) + ((await this.opts.fromLog?.waiting()) ?? 0);
    if (n >= this.opts.maxSize) await this.run(FULL_ONLY);
    else if (n > 0 && this.opts.cutEarly && (await this.opts.cutEarly(n))) await this.run(ALL);
  }

  /** This daemon wrote a checkpoint: the log's partial batch is cut now once a window has passed since its last cut. */
  async checkpointed(): Promise<void> {
    this.lastCheckpoint = this.now();
    if (this.logCutDue()) await this.run({ inbox: false, log: true });
    else await this.poke();
  }

  /**
   * The window's tick: a partial batch from the inbox, and one from the log when due, unless
   * this daemon's next checkpoint is on its way to entries that wait for one (it cuts then).
   */
  private async windowTick(): Promise<void> {
    let log = this.logCutDue();
    if (log && this.now() - this.lastCheckpoint < this.opts.windowMs) {
      log = !((await this.opts.fromLog?.unsigned?.().catch(() => 0)) ?? 0);
    }
    await this.run({ inbox: true, log });
  }

  private logCutDue(): boolean {
    return this.opts.fromLog !== undefined && this.now() - this.lastLogCut >= this.opts.windowMs;
  }

  /** One pass: hand over open batches, then cut full batches and the partial ones asked for. */
  private run(partial: PassCuts): Promise<void> {
    if (this.running) {
      // the pass running cuts every full batch: only a partial one is left for another
      if (partial.inbox || partial.log) this.again = { inbox: partial.inbox || (this.again?.inbox ?? false), log: partial.log || (this.again?.log ?? false) };
      return this.running;
    }
    // stopped: a late poke (a checkpoint written while the daemon stops) cuts nothing
    if (this.stopped || this.opts.refusals?.holding) return Promise.resolve();
    this.running = this.pass(partial)
      .catch((err: unknown) => {
        if (!this.opts.refusals?.refused(err)) this.log.warn({ err }, 'batch pass failed; retrying next tick');
      })
      .finally(() => {
        this.running = null;
        const again = this.again;
        this.again = null;
        if (again) void this.run(again);
      });
    return this.running;
  }

  private async pass(partial: PassCuts): Promise<void> {
    for (const id of await this.store.batches.openBatchIds(this.witness)) await this.opts.handOver(id);
    const inbox: CutSource = { waiting: () => this.store.batches.inboxLength(this.witness), cut: (max) => this.store.batches.cutBatch(this.witness, max) };
    const sources: Array<[CutSource, boolean]> = this.opts.fromLog ? [[this.opts.fromLog, partial.log], [inbox, partial.inbox]] : [[inbox, partial.inbox]];
    for (const [source, cutPartial] of sources) {
      for (let i = 0; i < MAX_CUTS_PER_TICK; i++) {
        // one partial batch a pass when allowed; beyond that only full ones
        const partialAllowed = cutPartial && i === 0;
        if (!partialAllowed && (await source.waiting()) < this.opts.maxSize) break;
        const batch = await source.cut(this.opts.maxSize);
        if (!batch) break;
        if (source === this.opts.fromLog) this.lastLogCut = this.now();
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
