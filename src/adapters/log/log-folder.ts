/**
 * Reads a published anchor log's folder (LogWriter's files) for those who serve it or build
 * proofs from it: the signed checkpoint as it stands, a tile or bundle only once a checkpoint
 * covers it (a file past the last checkpoint may still be replaced), and inclusion paths
 * against the checkpoint's size. Never writes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCheckpointText } from '../../core/log/checkpoint.js';
import { parseNote } from '../../core/log/note.js';
import { consistencyProof, inclusionProof } from '../../core/log/proof.js';
import { decodeBundle, TILE_WIDTH, TileHashes, tileInTree, tilePath, type TileRef } from '../../core/log/tiles.js';
import { CheckpointHistory, type AcceptanceWindow, type KeptTimestamp } from './checkpoint-history.js';
import { CHECKPOINT_FILE, readOptional } from './tile-files.js';

export interface FolderCheckpoint {
  readonly note: string;
  readonly origin: string;
  readonly size: number;
}

function described(note: string, field: string): FolderCheckpoint {
  const cp = parseCheckpointText(parseNote(note, field).text, field);
  return { note, origin: cp.origin, size: cp.size };
}

export class LogFolder {
  private readonly history: CheckpointHistory;

  constructor(readonly dir: string) {
    this.history = new CheckpointHistory(dir);
  }

  /** The checkpoint the folder holds now (its signature is the reader's to check), or null before the first. */
  checkpoint(): FolderCheckpoint | null {
    const bytes = readOptional(this.dir, CHECKPOINT_FILE);
    return bytes === null ? null : described(bytes.toString('utf8'), `${this.dir}/${CHECKPOINT_FILE}`);
  }

  /** The first checkpoint whose tree holds entry `index` (the one its witnesses attested soonest), or null. */
  checkpointCovering(index: number): FolderCheckpoint | null {
    const kept = this.history.covering(index);
    return kept === null ? null : described(kept.note, `${this.dir}/checkpoints/${kept.size}`);
  }

  /** When the subject of entry `index` was accepted, as the kept checkpoints bound it (CheckpointHistory.acceptanceWindow), or null. */
  acceptanceWindow(index: number, firstSpanMs: number): AcceptanceWindow | null {
    return this.history.acceptanceWindow(index, firstSpanMs);
  }

  /** Up to `limit` kept checkpoint sizes above `after`, in order. */
  sizesAfter(after: number, limit: number): number[] {
    return this.history.sizesAfter(after, limit);
  }

  /** The TSA tokens kept for the checkpoint of `size` (checkpoints/<size>.tsr.json), empty when none. */
  timestamps(size: number): KeptTimestamp[] {
    return this.history.timestamps(size);
  }

  /** The bytes of a tile or bundle a checkpoint of `size` covers (immutable from then on), or null. */
  tile(tile: TileRef, size: number): Buffer | null {
    const level = tile.level === 'entries' ? 0 : tile.level;
    if ((tile.index * TILE_WIDTH + tile.width) * TILE_WIDTH ** level > size) return null;
    return readOptional(this.dir, tilePath(tile));
  }

  /** The entries of indexes `from` … `to` − 1 (encoded), as the bundles of the checkpointed size `to` hold them. */
  entries(from: number, to: number): Buffer[] {
    const out: Buffer[] = [];
    for (let n = Math.floor(from / TILE_WIDTH); n * TILE_WIDTH < to; n++) {
      const bundle = this.bundle(n, to);
      for (let i = Math.max(from, n * TILE_WIDTH); i < Math.min(to, (n + 1) * TILE_WIDTH); i++) out.push(bundle[i - n * TILE_WIDTH]!);
    }
    return out;
  }

  /** The entry of `index` (encoded), as the bundle of the checkpointed size `size` (above `index`) holds it. */
  entry(index: number, size: number): Buffer {
    return this.bundle(Math.floor(index / TILE_WIDTH), size)[index % TILE_WIDTH]!;
  }

  /** Entry bundle `n` of the tree of the checkpointed size `size`, decoded. */
  private bundle(n: number, size: number): Buffer[] {
    const ref = { ...tileInTree(size, 0, n), level: 'entries' as const };
    const bytes = this.tile(ref, size);
    if (bytes === null) throw new RangeError(`${tilePath(ref)}: missing from ${this.dir}`);
    return decodeBundle(bytes, ref);
  }

  /** The RFC 6962 inclusion path of `index` in the tree of `size` (a checkpointed size), leaf upward. */
  inclusion(index: number, size: number): Buffer[] {
    return inclusionProof(size, index, this.hashes(size)).map((h) => Buffer.from(h));
  }

  /** The RFC 6962 consistency proof from `oldSize` to `newSize` (a checkpointed size). */
  consistency(oldSize: number, newSize: number): Buffer[] {
    return consistencyProof(oldSize, newSize, this.hashes(newSize)).map((h) => Buffer.from(h));
  }

  private hashes(size: number): TileHashes {
    return new TileHashes(size, (tile) => readFileSync(join(this.dir, tilePath(tile))));
  }
}
