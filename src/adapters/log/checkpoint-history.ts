/**
 * Every checkpoint a log folder published, kept beside the live `checkpoint` file (our
 * extension to the tlog-tiles layout; docs/log.md): `checkpoints/<size>` holds that size's
 * signed note, and `checkpoints/sizes` lists the sizes in order, 8 bytes each (big-endian),
 * so the first checkpoint covering an index is a binary search, not a folder listing.
 * Proofs are built against the first checkpoint that covers their entry: the one the
 * witnesses attested soonest after acceptance. Its time evidence sits beside it:
 * `checkpoints/<size>.tsr.json` holds its RFC 3161 tokens (`[{"url", "token"}]`, base64 DER,
 * replaced atomically as tokens come), and the witnesses' cosignature lines are appended to
 * `checkpoints/<size>` itself.
 */
import { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readOptional, writeReplacing } from './tile-files.js';

export const CHECKPOINTS_DIR = 'checkpoints';
const SIZES_FILE = `${CHECKPOINTS_DIR}/sizes`;
const SLOT = 8;

/** A TSA's token over a checkpoint's note body, as proofs carry it (anchor_proof.log.timestamps). */
export interface KeptTimestamp {
  readonly url: string;
  /** Base64 of the DER TimeStampToken. */
  readonly token: string;
}

export interface KeptCheckpoint {
  readonly size: number;
  readonly note: string;
}

export class CheckpointHistory {
  constructor(readonly dir: string) {}

  /** Keeps `note` as the checkpoint of `size` (idempotent: a size already listed is not listed twice). */
  record(size: number, note: string): void {
    mkdirSync(join(this.dir, CHECKPOINTS_DIR), { recursive: true });
    writeReplacing(this.dir, `${CHECKPOINTS_DIR}/${size}`, Buffer.from(note, 'utf8'));
    const count = this.count();
    const last = this.last();
    if (last === size) return;
    if (size < last) throw new RangeError(`checkpoint size ${size} is below the last kept (${last})`);
    const slot = Buffer.alloc(SLOT);
    slot.writeBigUInt64BE(BigInt(size));
    // positioned writes (no O_APPEND): a slot cut short by a crash is overwritten in place
    const fd = openSync(join(this.dir, SIZES_FILE), constants.O_WRONLY | constants.O_CREAT, 0o644);
    try {
      writeSync(fd, slot, 0, SLOT, count * SLOT);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
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
    let lo = 0;
    let hi = this.count();
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sizeAt(mid) > index) hi = mid;
      else lo = mid + 1;
    }
    if (lo === this.count()) return null;
    const size = this.sizeAt(lo);
    const note = this.at(size);
    return note === null ? null : { size, note };
  }

  /** Up to `limit` kept sizes above `after`, in order (for consumers catching up from a cursor). */
  sizesAfter(after: number, limit: number): number[] {
    const n = this.count();
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sizeAt(mid) > after) hi = mid;
      else lo = mid + 1;
    }
    const out: number[] = [];
    for (let i = lo; i < n && out.length < limit; i++) out.push(this.sizeAt(i));
    return out;
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
    const fd = openSync(join(this.dir, SIZES_FILE), 'r');
    try {
      const slot = Buffer.alloc(SLOT);
      if (readSync(fd, slot, 0, SLOT, i * SLOT) !== SLOT) throw new RangeError(`${SIZES_FILE}: slot ${i} is short`);
      return Number(slot.readBigUInt64BE());
    } finally {
      closeSync(fd);
    }
  }
}
