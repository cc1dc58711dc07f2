/**
 * The anchor log's time witnesses (docs/time.md, docs/witnesses.md): for each checkpoint the
 * folder keeps, an RFC 3161 token from each configured TSA (kept in
 * `checkpoints/<size>.tsr.json`) and a cosignature/v1 line from each configured C2SP witness
 * (appended to `checkpoints/<size>`, and to the live `checkpoint` while it is that size).
 * Its own loop, apart from the log's tick: a durable cursor in the folder
 * (`checkpoints/witnessed`, the last size done) and at most MAX_PER_PASS checkpoints a pass,
 * oldest first, so a restart or an outage is caught up from the files. A checkpoint is done
 * when its quorums are met, when only refusals are left, or after maxAttempts passes; a
 * witness's refusal (a fork, 403, 404) is recorded, logged, counted and shown in health,
 * never sent again for that checkpoint.
 */
import type { Logger } from 'pino';
import { parseNote } from '../../core/log/note.js';
import { attachCosignatures } from '../../core/witness/cosignature.js';
import type { DaemonMetrics } from '../metrics/metrics.js';
import type { WitnessHealth } from '../health/witness-health.js';
import type { TsaClient } from '../tsa/tsa-client.js';
import { TsaError } from '../tsa/tsa-error.js';
import type { WitnessClient } from '../witness/witness-client.js';
import { collectCosignatures } from '../witness/collect-cosignatures.js';
import { CHECKPOINTS_DIR, CheckpointHistory, type KeptTimestamp } from '../log/checkpoint-history.js';
import { LogFolder } from '../log/log-folder.js';
import { CHECKPOINT_FILE, readOptional, writeReplacing } from '../log/tile-files.js';

/** Most checkpoints one pass works on. */
export const MAX_PER_PASS = 16;
export const CURSOR_FILE = `${CHECKPOINTS_DIR}/witnessed`;

export interface CheckpointWitnessesOptions {
  readonly dir: string;
  readonly tsas: readonly TsaClient[];
  /** TSA tokens a checkpoint needs (≤ tsas.length). */
  readonly tsaQuorum: number;
  readonly witnesses: readonly WitnessClient[];
  /** Cosignatures a checkpoint needs (≤ witnesses.length). */
  readonly witnessQuorum: number;
  readonly intervalMs: number;
  /** Passes a checkpoint is tried in while a party fails retryably. */
  readonly maxAttempts: number;
  /** Does this daemon write the log now (its lease)? Only the writer attests. */
  readonly isWriter: () => boolean;
}

/** What one pass did to one checkpoint. */
export interface CheckpointAttested {
  readonly size: number;
  readonly tokens: number;
  readonly cosignatures: number;
  readonly done: boolean;
}

export class CheckpointWitnesses {
  private readonly history: CheckpointHistory;
  private readonly folder: LogFolder;
  /** Each witness's latest cosigned size as far as we know (learnt from its answers). */
  private readonly knownSizes = new Map<string, number>();
  /** `url size` of the refusals recorded: never asked again for that checkpoint. */
  private readonly refused = new Set<string>();
  private readonly attempts = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly options: CheckpointWitnessesOptions,
    private readonly health: WitnessHealth,
    private readonly metrics: DaemonMetrics,
    private readonly log: Logger,
  ) {
    this.history = new CheckpointHistory(options.dir);
    this.folder = new LogFolder(options.dir);
    for (const t of options.tsas) health.register('tsa', t.url);
    for (const w of options.witnesses) health.register('witness', w.url);
  }

  start(): void {
    this.schedule(this.options.intervalMs);
  }

  /** A new checkpoint was written (LogService.onCheckpoint): run a pass soon, outside the log's tick. */
  wake(): void {
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.pass()
        .catch((err: unknown) => this.log.error({ err }, 'anchor log time witnesses: pass failed (tried again next pass)'))
        .finally(() => {
          this.running = null;
          const soon = this.again;
          this.again = false;
          this.schedule(soon ? 0 : this.options.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  /** The last size done; a folder without a cursor starts at its latest checkpoint (older ones predate the witnesses). */
  private cursor(): number {
    const raw = readOptional(this.options.dir, CURSOR_FILE);
    if (raw !== null) return Number(raw.toString('utf8').trim());
    const sizes = this.history.sizesAfter(-1, Number.MAX_SAFE_INTEGER);
    const start = sizes.length >= 2 ? sizes[sizes.length - 2]! : -1;
    this.advance(start);
    return start;
  }

  private advance(size: number): void {
    writeReplacing(this.options.dir, CURSOR_FILE, Buffer.from(`${size}\n`, 'utf8'));
  }

  /** One pass: the checkpoints after the cursor, in order, until one is not done yet. */
  async pass(): Promise<CheckpointAttested[]> {
    if (!this.options.isWriter()) return [];
    const out: CheckpointAttested[] = [];
    for (const size of this.history.sizesAfter(this.cursor(), MAX_PER_PASS)) {
      if (this.stopped) break;
      // the empty tree holds nothing to attest
      const r = size === 0 ? { size, tokens: 0, cosignatures: 0, done: true } : await this.attest(size);
      out.push(r);
      if (!r.done) break;
      this.attempts.delete(size);
      this.advance(size);
    }
    return out;
  }

  private async attest(size: number): Promise<CheckpointAttested> {
    const attempt = (this.attempts.get(size) ?? 0) + 1;
    this.attempts.set(size, attempt);
    const note = this.history.at(size);
    if (note === null) throw new RangeError(`${CHECKPOINTS_DIR}/${size} is listed but missing`);
    const body = parseNote(note, `${CHECKPOINTS_DIR}/${size}`).text;
    const tokens = await this.timestamps(size, Buffer.from(body, 'utf8'));
    const { cosigned, pending } = await this.cosign(size, note);
    const { tsaQuorum, witnessQuorum, maxAttempts } = this.options;
    const tsaLeft = this.options.tsas.length > tokens.length;
    const met = tokens.length >= tsaQuorum && cosigned >= witnessQuorum;
    const done = met || (!tsaLeft && !pending) || attempt >= maxAttempts;
    if (done && !met) {
      for (const [kind, have, need] of [['tsa', tokens.length, tsaQuorum], ['witness', cosigned, witnessQuorum]] as const) {
        if (have >= need) continue;
        this.metrics.checkpointBelowQuorum(kind);
        this.log.warn({ size, kind, have, need, attempts: attempt }, `anchor log: checkpoint ${size} left with ${have} of the ${need} ${kind === 'tsa' ? 'TSA tokens' : 'witness cosignatures'} it needs`);
      }
    }
    return { size, tokens: tokens.length, cosignatures: cosigned, done };
  }

  /** Asks each TSA without a token for this checkpoint; keeps the new tokens. */
  private async timestamps(size: number, body: Buffer): Promise<KeptTimestamp[]> {
    const kept = this.history.timestamps(size);
    const missing = this.options.tsas.filter((t) => !kept.some((k) => k.url === t.url));
    if (missing.length === 0) return kept;
    const settled = await Promise.allSettled(missing.map((t) => t.timestamp(body)));
    const got: KeptTimestamp[] = [];
    settled.forEach((s, i) => {
      const { url } = missing[i]!;
      if (s.status === 'fulfilled') {
        got.push({ url, token: Buffer.from(s.value.token).toString('base64') });
        this.metrics.tsaRequest(url, 'token');
        this.health.success('tsa', url);
        return;
      }
      const err = s.reason as Error;
      this.metrics.tsaRequest(url, err instanceof TsaError ? err.code : 'internal');
      this.health.failure('tsa', url, `checkpoint ${size}: ${err.message}`);
    });
    if (got.length === 0) return kept;
    const all = [...kept, ...got];
    this.history.keepTimestamps(size, all);
    return all;
  }

  /** Sends the checkpoint to each witness that has not cosigned or refused it; adds the verified lines. */
  private async cosign(size: number, note: string): Promise<{ cosigned: number; pending: boolean }> {
    const signedBy = (n: string, w: WitnessClient): boolean => parseNote(n).signatures.some((s) => s.name === w.key.name && s.keyId === w.key.keyId);
    const ask = this.options.witnesses.filter((w) => !signedBy(note, w) && !this.refused.has(`${w.url} ${size}`));
    let cosignedNote = note;
    if (ask.length > 0) {
      const { note: withLines, outcomes } = await collectCosignatures(note, ask, (o, n) => this.folder.consistency(o, n), this.knownSizes);
      cosignedNote = withLines;
      for (const o of outcomes) {
        if (o.ok) {
          this.knownSizes.set(o.url, size);
          this.metrics.logWitnessRequest(o.url, 'cosigned');
          this.health.success('witness', o.url);
          continue;
        }
        if (o.knownSize !== undefined) this.knownSizes.set(o.url, o.knownSize);
        this.metrics.logWitnessRequest(o.url, o.code);
        this.health.failure('witness', o.url, `checkpoint ${size}: ${o.message}`);
        if (!o.retryable) {
          this.refused.add(`${o.url} ${size}`);
          this.log.error({ witness: o.url, size, code: o.code }, `anchor log: witness refused checkpoint ${size} (${o.code}), not sent again: ${o.message}`);
        }
      }
      if (cosignedNote !== note) this.keepCosigned(size, note, cosignedNote);
    }
    const cosigned = this.options.witnesses.filter((w) => signedBy(cosignedNote, w)).length;
    const pending = this.options.witnesses.some((w) => !signedBy(cosignedNote, w) && !this.refused.has(`${w.url} ${size}`));
    return { cosigned, pending };
  }

  /**
   * Keeps the cosigned note, then puts the new lines on the live checkpoint while it is still
   * this size: read, compare and replace are synchronous, so the log's writer (same process,
   * whose rename of the live file is synchronous: replaceAsync) cannot slip a newer checkpoint
   * in between.
   */
  private keepCosigned(size: number, before: string, after: string): void {
    this.history.replaceNote(size, after);
    const live = readOptional(this.options.dir, CHECKPOINT_FILE)?.toString('utf8');
    if (live === undefined || parseNote(live).text !== parseNote(before).text) return;
    const lines = after.slice(before.length).split('\n').filter((l) => l !== '').map((l) => `${l}\n`);
    writeReplacing(this.options.dir, CHECKPOINT_FILE, Buffer.from(attachCosignatures(live, lines), 'utf8'));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
