/**
 * The dev calendar's memory: the open aggregation round (digests waiting for the round's
 * tree), the commitments pending a block, and the upgrades of those already mined. As
 * opentimestamps-server's `Aggregator` and `Calendar`, minus the journal on disk.
 */
import { buildRound } from './round.js';

interface OpenRound {
  digests: Buffer[];
  waiters: { resolve: (b: Buffer) => void; reject: (e: Error) => void }[];
  timer: NodeJS.Timeout;
}

export type Lookup =
  | { state: 'complete'; upgrade: Buffer }
  | { state: 'pending' }
  /** Unknown, or too young to be served yet (the `notFoundMs` window). */
  | { state: 'not-found' };

/** When a round closes: on the calendar's clock (as the real server), or one interval after its first digest. */
export type RoundsFrom = 'clock' | 'first-digest';

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export class CommitmentBook {
  digestsReceived = 0;
  rounds = 0;
  private round: OpenRound | null = null;
  /** hex → commitment and the time its round closed. */
  private readonly pending = new Map<string, { commitment: Buffer; atMs: number }>();
  private readonly confirmed = new Map<string, { upgrade: Buffer; atMs: number }>();

  private readonly startMs = Date.now();

  constructor(private readonly opts: { aggregationMs: number; hmacKey: Buffer; uri: () => string; roundsFrom?: RoundsFrom }) {}

  /**
   * Until the open round closes. `clock`: at the next tick of a clock of aggregationMs
   * started with the calendar, as opentimestamps-server's Aggregator, whose loop waits one
   * interval between rounds whatever arrives (otsserver/calendar.py): a submission waits
   * anything up to one interval. `first-digest`: one interval after the round's first
   * digest (tests that need a submission held in flight for a known time).
   */
  private untilClose(): number {
    const every = this.opts.aggregationMs;
    if (this.opts.roundsFrom === 'first-digest' || every <= 0) return every;
    return every - ((Date.now() - this.startMs) % every);
  }

  /** Resolves with the timestamp starting at `digest` once its round closes. */
  submit(digest: Buffer): Promise<Buffer> {
    this.digestsReceived++;
    this.round ??= { digests: [], waiters: [], timer: setTimeout(() => this.closeRound(), this.untilClose()) };
    const r = this.round;
    r.digests.push(digest);
    return new Promise((resolve, reject) => r.waiters.push({ resolve, reject }));
  }

  private closeRound(): void {
    const r = this.round;
    if (!r) return;
    this.round = null;
    try {
      const result = buildRound(r.digests, { time: nowSeconds(), hmacKey: this.opts.hmacKey, uri: this.opts.uri() });
      this.pending.set(result.commitment.toString('hex'), { commitment: result.commitment, atMs: Date.now() });
      this.rounds++;
      r.waiters.forEach((w, i) => w.resolve(result.responses[i]!));
    } catch (err) {
      for (const w of r.waiters) w.reject(err as Error);
    }
  }

  /** Fails the submissions of the open round (the calendar is closing). */
  abortRound(reason: string): void {
    const r = this.round;
    if (!r) return;
    clearTimeout(r.timer);
    this.round = null;
    for (const w of r.waiters) w.reject(new Error(reason));
  }

  /** What `GET /timestamp/<hex>` should say; `hideYoungerMs` is the `Not found` window. */
  lookup(hex: string, hideYoungerMs: number): Lookup {
    const key = hex.toLowerCase();
    const young = (atMs: number): boolean => Date.now() - atMs < hideYoungerMs;
    const done = this.confirmed.get(key);
    if (done) return young(done.atMs) ? { state: 'not-found' } : { state: 'complete', upgrade: done.upgrade };
    const waiting = this.pending.get(key);
    if (waiting) return young(waiting.atMs) ? { state: 'not-found' } : { state: 'pending' };
    return { state: 'not-found' };
  }

  /** The pending commitments, oldest first, for the next block. */
  pendingCommitments(): { keys: string[]; commitments: Buffer[] } {
    const keys = [...this.pending.keys()];
    return { keys, commitments: keys.map((k) => this.pending.get(k)!.commitment) };
  }

  /** Records the upgrades of a mined block (`upgrades[i]` for `keys[i]`). */
  confirm(keys: readonly string[], upgrades: readonly Buffer[]): void {
    keys.forEach((k, i) => {
      const atMs = this.pending.get(k)?.atMs ?? Date.now();
      this.confirmed.set(k, { upgrade: upgrades[i]!, atMs });
      this.pending.delete(k);
    });
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  get confirmedCount(): number {
    return this.confirmed.size;
  }
}
