/**
 * Appends entries to one anchor log and publishes it as C2SP tlog-tiles static files
 * under a folder: full tiles and bundles once, the rightmost partial ones for each
 * checkpointed size, then the signed checkpoint. Reopening rebuilds the frontier from the
 * checkpoint and the tiles, and refuses tiles that do not hash to the checkpoint's root.
 * One writer a folder: the daemon's sequencer decides the order.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openCheckpoint, signCheckpoint, type Checkpoint } from '../../core/log/checkpoint.js';
import { decodeEntry, encodeEntry, type LogEntry } from '../../core/log/entry.js';
import { LogFormatError } from '../../core/log/errors.js';
import { parseVerifierKey, type LogSigner } from '../../core/log/note.js';
import { consistencyProof, inclusionProof, treeHash } from '../../core/log/proof.js';
import { CompactRange, leafHash } from '../../core/log/rfc6962.js';
import { decodeBundle, encodeBundle, splitTile, TILE_HEIGHT, TILE_WIDTH, TileHashes, tileInTree, tilePath, type TileRef } from '../../core/log/tiles.js';
import { CHECKPOINTS_DIR, CheckpointHistory } from './checkpoint-history.js';
import { CHECKPOINT_FILE, readOptional, replaceAsync, writeTiles, type FileWrite } from './tile-files.js';

export interface LogWriterOptions {
  readonly dir: string;
  /** The checkpoint's first line. */
  readonly origin: string;
  readonly signer: LogSigner;
}

export class LogWriter {
  private readonly range: CompactRange;
  /** The hashes of each level's rightmost, unfinished tile. */
  private readonly tails: Buffer[][] = [];
  private bundle: Buffer[] = [];
  /** Full tiles and bundles finished since the last checkpoint, written by the next. */
  private readonly finished: { tile: TileRef; bytes: Buffer }[] = [];
  private published: Checkpoint;
  private note: string;
  /** Every checkpoint written, by size (checkpoints/). */
  readonly history: CheckpointHistory;

  private constructor(private readonly options: LogWriterOptions, start: { checkpoint: Checkpoint; note: string; subtrees: Buffer[]; tails: Buffer[][]; bundle: Buffer[] }) {
    this.history = new CheckpointHistory(options.dir);
    this.range = CompactRange.fromSubtrees(start.checkpoint.size, start.subtrees, (height, index, hash) => this.completed(height, index, hash));
    this.tails = start.tails;
    this.bundle = start.bundle;
    this.published = start.checkpoint;
    this.note = start.note;
  }

  /**
   * Opens the log in `dir` (made when missing), or starts an empty one. It starts from the
   * newest checkpoint the folder holds: the live file, or a kept one past it (a crash after
   * keeping checkpoints/<size> and before the live rename), which is then renamed into place.
   */
  static async open(options: LogWriterOptions): Promise<LogWriter> {
    mkdirSync(options.dir, { recursive: true });
    const newest = LogWriter.newest(options);
    if (newest === null) {
      if (existsSync(join(options.dir, 'tile'))) {
        throw new LogFormatError('log_bad_checkpoint', `${options.dir} holds tiles but no checkpoint: not starting a new log over them`, `${options.dir}/${CHECKPOINT_FILE}`);
      }
      const writer = new LogWriter(options, { checkpoint: { origin: options.origin, size: 0, root: new CompactRange().root(), extensions: [] }, note: '', subtrees: [], tails: [], bundle: [] });
      await writer.checkpoint();
      return writer;
    }
    const { checkpoint: cp, note, field, live } = newest;
    const read = (tile: TileRef): Buffer => {
      const bytes = readOptional(options.dir, tilePath(tile));
      if (bytes === null) throw new LogFormatError('log_bad_tile', `missing under ${options.dir}`, tilePath(tile));
      return bytes;
    };
    const hashes = new TileHashes(cp.size, read);
    const subtrees: Buffer[] = [];
    let start = 0;
    for (let h = 52; h >= 0; h--) {
      if (Math.floor(cp.size / 2 ** h) % 2 === 1) {
        subtrees.push(Buffer.from(hashes.hashAt(h, start / 2 ** h)));
        start += 2 ** h;
      }
    }
    const tails: Buffer[][] = [];
    for (let level = 0; Math.floor(cp.size / TILE_WIDTH ** level) > 0; level++) {
      const count = Math.floor(cp.size / TILE_WIDTH ** level);
      const tile = count % TILE_WIDTH === 0 ? null : tileInTree(cp.size, level, Math.floor(count / TILE_WIDTH));
      tails.push(tile === null ? [] : splitTile(read(tile), tile));
    }
    const tail0 = tails[0] ?? [];
    const bundle = tail0.length === 0 ? [] : decodeBundle(read({ level: 'entries', index: Math.floor(cp.size / TILE_WIDTH), width: tail0.length }), { level: 'entries', index: Math.floor(cp.size / TILE_WIDTH), width: tail0.length });
    bundle.forEach((entry, i) => {
      if (!leafHash(entry).equals(tail0[i]!)) throw new LogFormatError('log_bad_bundle', `entry ${cp.size - tail0.length + i} does not hash to its level-0 tile hash`, `${options.dir}/tile/entries`);
    });
    const writer = new LogWriter(options, { checkpoint: cp, note, subtrees, tails, bundle });
    if (!writer.range.root().equals(cp.root)) throw new LogFormatError('log_bad_checkpoint', `the tiles under ${options.dir} do not hash to the checkpoint's root`, `${field}.root`);
    // a live checkpoint whose size the history does not list yet: list it now
    if (writer.history.last() !== cp.size) await writer.history.record(cp.size, note);
    // a kept checkpoint the live file is behind: the live file catches up
    if (!live) await replaceAsync(options.dir, CHECKPOINT_FILE, Buffer.from(note, 'utf8'));
    return writer;
  }

  /** The newest checkpoint in the folder, checked against this log's key and origin (`live`: it is the live file), or null before the first. */
  private static newest(options: LogWriterOptions): { checkpoint: Checkpoint; note: string; field: string; live: boolean } | null {
    const opened = (bytes: Buffer, field: string): Checkpoint => {
      const check = openCheckpoint(bytes, [parseVerifierKey(options.signer.verifierKey)], field);
      if (!check.ok) throw new LogFormatError('log_bad_checkpoint', `not signed by this log's key ${options.signer.verifierKey}: ${check.message}`, field);
      if (check.checkpoint.origin !== options.origin) throw new LogFormatError('log_bad_checkpoint', `origin ${JSON.stringify(check.checkpoint.origin)}, not ${JSON.stringify(options.origin)}`, `${field}.origin`);
      return check.checkpoint;
    };
    const liveField = `${options.dir}/${CHECKPOINT_FILE}`;
    const liveBytes = readOptional(options.dir, CHECKPOINT_FILE);
    const live = liveBytes === null ? null : { checkpoint: opened(liveBytes, liveField), note: liveBytes.toString('utf8'), field: liveField, live: true };
    const history = new CheckpointHistory(options.dir);
    const last = history.last();
    if (last <= (live?.checkpoint.size ?? -1)) return live;
    const keptField = `${options.dir}/${CHECKPOINTS_DIR}/${last}`;
    const kept = history.at(last);
    if (kept === null) throw new LogFormatError('log_bad_checkpoint', `${CHECKPOINTS_DIR}/sizes lists ${last}, but its note is missing`, keptField);
    const checkpoint = opened(Buffer.from(kept, 'utf8'), keptField);
    if (checkpoint.size !== last) throw new LogFormatError('log_bad_checkpoint', `size ${checkpoint.size}, not the ${last} its name says`, `${keptField}.size`);
    return { checkpoint, note: kept, field: keptField, live: false };
  }

  /** Entries appended, published or not. */
  get size(): number {
    return this.range.size;
  }

  /** The last checkpoint written and its signed note. */
  get checkpointed(): { checkpoint: Checkpoint; note: string } {
    return { checkpoint: this.published, note: this.note };
  }

  /** Appends one entry; its index. It is published by the next `checkpoint()`. */
  append(entry: LogEntry): number {
    return this.appendBytes(encodeEntry(entry));
  }

  /**
   * Appends one entry given as its bytes, which must be an entry in the pinned layout. The
   * layout has one spelling per entry (a known kind byte, the key in strict UTF-8), so bytes
   * that decode are canonical.
   */
  appendEncoded(bytes: Uint8Array): number {
    decodeEntry(bytes, `entry ${this.range.size}`);
    return this.appendBytes(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  private appendBytes(bytes: Buffer): number {
    const index = this.range.size;
    this.bundle.push(bytes);
    if (this.bundle.length === TILE_WIDTH) {
      this.finished.push({ tile: { level: 'entries', index: Math.floor(index / TILE_WIDTH), width: TILE_WIDTH }, bytes: encodeBundle(this.bundle) });
      this.bundle = [];
    }
    this.range.append(leafHash(bytes));
    return index;
  }

  /** The entries of indexes [from, to) of the last checkpoint, read from the bundles. */
  entries(from: number, to: number): Buffer[] {
    const size = this.published.size;
    if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from <= to && to <= size)) throw new RangeError(`entries [${from}, ${to}) are not inside the checkpoint's ${size}`);
    const out: Buffer[] = [];
    for (let n = Math.floor(from / TILE_WIDTH); n * TILE_WIDTH < to; n++) {
      const ref: TileRef = { level: 'entries', index: n, width: Math.min(TILE_WIDTH, size - n * TILE_WIDTH) };
      const bytes = readOptional(this.options.dir, tilePath(ref));
      if (bytes === null) throw new LogFormatError('log_bad_bundle', `missing under ${this.options.dir}`, tilePath(ref));
      const bundle = decodeBundle(bytes, ref);
      for (let i = 0; i < bundle.length; i++) {
        const index = n * TILE_WIDTH + i;
        if (index >= from && index < to) out.push(bundle[i]!);
      }
    }
    return out;
  }

  /** A subtree of height 8·L completed: its hash belongs to the level-L tile. */
  private completed(height: number, index: number, hash: Buffer): void {
    if (height % TILE_HEIGHT !== 0) return;
    const level = height / TILE_HEIGHT;
    const tail = (this.tails[level] ??= []);
    tail.push(hash);
    if (tail.length === TILE_WIDTH) {
      this.finished.push({ tile: { level, index: Math.floor(index / TILE_WIDTH), width: TILE_WIDTH }, bytes: Buffer.concat(tail) });
      this.tails[level] = [];
    }
  }

  /**
   * Writes the tiles for the current size, then its signed checkpoint; the note. Durable in
   * this order: the tiles, the checkpoint kept under checkpoints/<size> and listed, the live
   * checkpoint. One at a time: the caller awaits it before appending again.
   */
  async checkpoint(): Promise<string> {
    const size = this.range.size;
    const files = this.finished.splice(0).map((f) => this.tileFile(f.tile, f.bytes));
    this.tails.forEach((tail, level) => {
      if (tail.length > 0) files.push(this.tileFile({ level, index: Math.floor(size / TILE_WIDTH ** (level + 1)), width: tail.length }, Buffer.concat(tail)));
    });
    if (this.bundle.length > 0) files.push(this.tileFile({ level: 'entries', index: Math.floor(size / TILE_WIDTH), width: this.bundle.length }, encodeBundle(this.bundle)));
    const checkpoint: Checkpoint = { origin: this.options.origin, size, root: this.range.root(), extensions: [] };
    const note = signCheckpoint(checkpoint, this.options.signer);
    // each file is written while the others are; what names another waits for it to be durable:
    // the size is listed once the tiles are, the live checkpoint renamed once the size is listed
    const tiles = writeTiles(this.options.dir, files);
    const kept = this.history.record(size, note, tiles);
    await replaceAsync(this.options.dir, CHECKPOINT_FILE, Buffer.from(note, 'utf8'), kept);
    this.published = checkpoint;
    this.note = note;
    return note;
  }

  private tileFile(tile: TileRef, bytes: Buffer): FileWrite {
    return { rel: tilePath(tile), bytes, committed: this.isCommitted(tile) };
  }

  /** A tile whose hashes all lie inside the last signed checkpoint: its bytes can never change. */
  private isCommitted(tile: TileRef): boolean {
    const level = tile.level === 'entries' ? 0 : tile.level;
    return (tile.index * TILE_WIDTH + tile.width) * TILE_WIDTH ** level <= this.published.size;
  }

  /** Perfect-subtree hashes of a checkpointed size, read from the tiles. */
  private hashes(size: number): TileHashes {
    if (size > this.published.size) throw new RangeError(`size ${size} is past the last checkpoint (${this.published.size})`);
    return new TileHashes(size, (tile) => {
      const bytes = readOptional(this.options.dir, tilePath(tile));
      if (bytes === null) throw new LogFormatError('log_bad_tile', `missing under ${this.options.dir}`, tilePath(tile));
      return bytes;
    });
  }

  /** RFC 6962 inclusion path of `index` in the tree of a checkpointed `size`, leaf upward. */
  inclusionProof(index: number, size = this.published.size): Buffer[] {
    return inclusionProof(size, index, this.hashes(size)).map((h) => Buffer.from(h));
  }

  /** RFC 6962 consistency proof from `oldSize` to a checkpointed `newSize`. */
  consistencyProof(oldSize: number, newSize = this.published.size): Buffer[] {
    return consistencyProof(oldSize, newSize, this.hashes(newSize)).map((h) => Buffer.from(h));
  }

  /** The root of a checkpointed size, from the tiles. */
  rootAt(size: number): Buffer {
    return Buffer.from(treeHash(size, this.hashes(size)));
  }
}
