/**
 * Every checkpoint a log folder published, kept beside the live `checkpoint` file (our
 * extension to the tlog-tiles layout; docs/log.md): `checkpoints/<size>` holds that size's
 * signed note, and `checkpoints/sizes` lists the sizes in order, 8 bytes each (big-endian),
 * so the first checkpoint covering an index is a binary search, not a folder listing;
 * `checkpoints/times` holds, in the same slots, when each was kept (Unix ms, 8 bytes each,
 * big-endian; written before its size, so every listed size has its time): the window in
 * which a subject was accepted (acceptanceWindow).
 * Proofs are built against the first checkpoint that covers their entry: the one the
 * witnesses attested soonest after acceptance. Its time evidence sits beside it:
 * `checkpoints/<size>.tsr.json` holds its RFC 3161 tokens (`[{"url", "token"}]`, base64 DER,
 * replaced atomically as tokens come), and the witnesses' cosignature lines are appended to
 * `checkpoints/<size>` itself.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { allDone, readOptional, replaceAsync, writeAtAsync, writeReplacing } from './tile-files.js';

export const CHECKPOINTS_DIR = 'checkpoints';
const SIZES_FILE = `${CHECKPOINTS_DIR}/sizes`;
const TIMES_FILE = `${CHECKPOINTS_DIR}/times`;
const SLOT = 8;

/** A slot of the sizes or times file: `value`, 8 bytes big-endian. */
function slot(value: number): Buffer {
  const bytes = Buffer.alloc(SLOT);
  bytes.writeBigUInt64BE(BigInt(value));
  return bytes;
}

/** A TSA's token over a checkpoint's note body, as proofs carry it (anchor_proof.log.timestamps). */
export interface KeptTimestamp {
  readonly url: string;
  /** Base64 of the DER TimeStampToken. */
  readonly token: string;
}

/** When a subject of some index was accepted: within [fromMs, toMs] (CheckpointHistory.acceptanceWindow). */
export interface AcceptanceWindow {
  readonly fromMs: number;
  readonly toMs: number;
}

export interface KeptCheckpoint {
  readonly size: number;
  readonly note: string;
}

export class CheckpointHistory {
  constructor(
    readonly dir: string,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Keeps `note` as the checkpoint of `size`, kept now (idempotent: a size already listed is
   * not listed twice): its note and its time, then, once `after` has settled too (the tiles
   * the note names), its size, each fsynced, so a listed size always has both and its tiles.
   */
  async record(size: number, note: string, after: Promise<unknown> = Promise.resolve()): Promise<void> {
    const count = this.count();
    const last = this.last();
    if (size < last) throw new RangeError(`checkpoint size ${size} is below the last kept (${last})`);
    await mkdir(join(this.dir, CHECKPOINTS_DIR), { recursive: true });
    const kept = replaceAsync(this.dir, `${CHECKPOINTS_DIR}/${size}`, Buffer.from(note, 'utf8'));
    if (last === size) return allDone([kept, after]);
    await allDone([kept, writeAtAsync(this.dir, TIMES_FILE, count * SLOT, slot(this.now())), after]);
    await writeAtAsync(this.dir, SIZES_FILE, count * SLOT, slot(size));
  }

  /**
   * When the subject of entry `index` was accepted, as the kept checkpoints bound it: before
   * the first checkpoint covering it was kept, and after the one two before that was (the
   * publisher read the entries of the previous checkpoint after that one was kept, and this
   * entry was sequenced after that read). From the first checkpoint on, the lower bound is the
   * upper one less `firstSpanMs`. Null when no kept checkpoint covers `index`.
   */
  acceptanceWindow(index: number, firstSpanMs: number): AcceptanceWindow | null {
    const at = this.firstSlotAbove(index);
    if (at === this.count()) return null;
    const toMs = this.timeAt(at);
    return { fromMs: at >= 2 ? this.timeAt(at - 2) : toMs - firstSpanMs, toMs };
  }

  /** The TSA tokens kept for `size` (empty when none). */
  timestamps(size: number): KeptTimestamp[] {
    const bytes = readOptional(this.dir, `${CHECKPOINTS_DIR}/${size}.tsr.json`);
    if (bytes === null) return [];
    const list = JSON.parse(bytes.toString('utf8')) as unknown;
    if (!Array.isArray(list)) throw new RangeError(`${CHECKPOINTS_DIR}/${size}.tsr.json is not a list`);
    return list.map((t: { url?: unknown; token?: unknown }) => ({ url: String(t.url), token: String(t.token) }));
  }

  /** Replaces the tokens kept for `size` (atomically: a reader sees the old list or the new). */
  keepTimestamps(size: number, list: readonly KeptTimestamp[]): void {
    writeReplacing(this.dir, `${CHECKPOINTS_DIR}/${size}.tsr.json`, Buffer.from(`${JSON.stringify(list.map(({ url, token }) => ({ url, token })))}\n`, 'utf8'));
  }

  /** Replaces the kept note of `size` by `note` (the same checkpoint with more cosignature lines). */
  replaceNote(size: number, note: string): void {
    writeReplacing(this.dir, `${CHECKPOINTS_DIR}/${size}`, Buffer.from(note, 'utf8'));
  }

  /** The largest size kept, or -1 before any. */
  last(): number {
    const n = this.count();
    return n === 0 ? -1 : this.sizeAt(n - 1);
  }

  /** The note kept for `size`, or null. */
  at(size: number): string | null {
    return readOptional(this.dir, `${CHECKPOINTS_DIR}/${size}`)?.toString('utf8') ?? null;
  }

  /** The first kept checkpoint whose tree holds entry `index`, or null when none does yet. */
  covering(index: number): KeptCheckpoint | null {
    const lo = this.firstSlotAbove(index);
    if (lo === this.count()) return null;
    const size = this.sizeAt(lo);
    const note = this.at(size);
    return note === null ? null : { size, note };
  }

  /** Up to `limit` kept sizes above `after`, in order (for consumers catching up from a cursor). */
  sizesAfter(after: number, limit: number): number[] {
    const n = this.count();
    const lo = this.firstSlotAbove(after);
    const out: number[] = [];
    for (let i = lo; i < n && out.length < limit; i++) out.push(this.sizeAt(i));
    return out;
  }

  /** The first slot whose size is above `n` (count() when none is). */
  private firstSlotAbove(n: number): number {
    let lo = 0;
    let hi = this.count();
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sizeAt(mid) > n) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** When slot `i`'s checkpoint was kept: its time, or its note's modification time when the times file lacks it. */
  private timeAt(i: number): number {
    const ms = this.readSlot(TIMES_FILE, i);
    // 0: a hole (slots written past a times file that was missing)
    return ms !== null && ms > 0 ? ms : statSync(join(this.dir, `${CHECKPOINTS_DIR}/${this.sizeAt(i)}`)).mtimeMs;
  }

  private count(): number {
    try {
      const fd = openSync(join(this.dir, SIZES_FILE), 'r');
      try {
        return Math.floor(fstatSync(fd).size / SLOT);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
  }

  private sizeAt(i: number): number {
    const size = this.readSlot(SIZES_FILE, i);
    if (size === null) throw new RangeError(`${SIZES_FILE}: slot ${i} is short`);
    return size;
  }

  /** Slot `i` of `file`, or null when the file is missing or shorter. */
  private readSlot(file: string, i: number): number | null {
    let fd: number;
    try {
      fd = openSync(join(this.dir, file), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const slot = Buffer.alloc(SLOT);
      return readSync(fd, slot, 0, SLOT, i * SLOT) === SLOT ? Number(slot.readBigUInt64BE()) : null;
    } finally {
      closeSync(fd);
    }
  }
}
