/**
 * C2SP tlog-tiles: tile height 8 (256 hashes, 8,192 bytes a full tile), paths
 * `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]` with N in 3-digit groups, all but
 * the last prefixed `x` (1234067 → x001/x234/067), and entry bundles of big-endian uint16
 * length-prefixed entries.
 */
import { LogFormatError } from './errors.js';
import { HASH_SIZE, rootOfHashes } from './rfc6962.js';
import type { SubtreeHashes } from './proof.js';
import { MAX_ENTRY_BYTES } from './entry.js';

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
export const FULL_TILE_BYTES = TILE_WIDTH * HASH_SIZE;
/** tlog-tiles: L is 0 to 63. */
export const MAX_TILE_LEVEL = 63;
/** The largest entry bundle: 256 entries of 65,535 bytes and their lengths. */
export const MAX_BUNDLE_BYTES = TILE_WIDTH * (2 + MAX_ENTRY_BYTES);

/** A tile or an entry bundle: its level (`entries` for bundles), index and width (256 when full). */
export interface TileRef {
  readonly level: number | 'entries';
  readonly index: number;
  readonly width: number;
}

/** N as path segments: 3-digit groups, all but the last prefixed `x`. */
export function formatTileIndex(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`tile index ${index} is not a non-negative integer`);
  const groups: string[] = [];
  let n = index;
  do {
    groups.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

export function tilePath(tile: TileRef): string {
  if (tile.level !== 'entries' && (!Number.isInteger(tile.level) || tile.level < 0 || tile.level > MAX_TILE_LEVEL)) throw new RangeError(`tile level ${tile.level} is not 0 to 63`);
  if (!Number.isInteger(tile.width) || tile.width < 1 || tile.width > TILE_WIDTH) throw new RangeError(`tile width ${tile.width} is not 1 to 256`);
  return `tile/${tile.level}/${formatTileIndex(tile.index)}${tile.width < TILE_WIDTH ? `.p/${tile.width}` : ''}`;
}

const GROUP = /^x\d{3}$/;

/**
 * Reads a tile or bundle path (`tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`) strictly,
 * for a server answering tlog-tiles requests: L 0–63 and W 1–255 without leading zeros, N in
 * x-prefixed 3-digit groups with no needless leading group. Null for anything else.
 */
export function parseTilePath(path: string): TileRef | null {
  if (path.length > 128) return null;
  const parts = path.split('/');
  if (parts.length < 3 || parts[0] !== 'tile') return null;
  const levelText = parts[1]!;
  let level: number | 'entries';
  if (levelText === 'entries') level = 'entries';
  else if (/^(0|[1-9]\d?)$/.test(levelText) && Number(levelText) <= MAX_TILE_LEVEL) level = Number(levelText);
  else return null;
  let rest = parts.slice(2);
  let width = TILE_WIDTH;
  const last = rest[rest.length - 1]!;
  if (rest.length >= 2 && /^\d{3}\.p$/.test(rest[rest.length - 2]!)) {
    if (!/^[1-9]\d{0,2}$/.test(last) || Number(last) >= TILE_WIDTH) return null;
    width = Number(last);
    rest = [...rest.slice(0, -2), rest[rest.length - 2]!.slice(0, 3)];
  }
  const final = rest[rest.length - 1]!;
  if (!/^\d{3}$/.test(final) || !rest.slice(0, -1).every((g) => GROUP.test(g))) return null;
  if (rest.length > 1 && rest[0] === 'x000') return null;
  const index = Number(rest.map((g) => g.replace('x', '')).join(''));
  if (!Number.isSafeInteger(index)) return null;
  return { level, index, width };
}

/** How many hashes level `level` holds for a tree of `size` (one per complete 256^level run). */
export function hashesAtLevel(size: number, level: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/** The tile at `level` and `index` as it stands in a tree of `size` (full, or the partial rightmost one). */
export function tileInTree(size: number, level: number, index: number): TileRef {
  const count = hashesAtLevel(size, level);
  const full = Math.floor(count / TILE_WIDTH);
  if (index < full) return { level, index, width: TILE_WIDTH };
  const width = count % TILE_WIDTH;
  if (index === full && width > 0) return { level, index, width };
  throw new RangeError(`a tree of ${size} has no tile ${level}/${index}`);
}

/** Every tile of a tree of `size`, level 0 first, in index order (the entry bundles follow level 0's). */
export function tilesOfTree(size: number): TileRef[] {
  const tiles: TileRef[] = [];
  for (let level = 0; level <= MAX_TILE_LEVEL && hashesAtLevel(size, level) > 0; level++) {
    const count = hashesAtLevel(size, level);
    const full = Math.floor(count / TILE_WIDTH);
    for (let index = 0; index < full; index++) tiles.push({ level, index, width: TILE_WIDTH });
    if (count % TILE_WIDTH > 0) tiles.push({ level, index: full, width: count % TILE_WIDTH });
  }
  return tiles;
}

/** The hashes of a tile's bytes, which must be exactly `width` hashes. */
export function splitTile(bytes: Uint8Array, tile: TileRef): Buffer[] {
  const field = tilePath(tile);
  if (bytes.length !== tile.width * HASH_SIZE) {
    throw new LogFormatError('log_bad_tile', `${bytes.length} bytes, not ${tile.width} hashes (${tile.width * HASH_SIZE} bytes)`, field);
  }
  const hashes: Buffer[] = [];
  for (let i = 0; i < tile.width; i++) hashes.push(Buffer.from(bytes.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE)));
  return hashes;
}

export function encodeBundle(entries: readonly Uint8Array[]): Buffer {
  if (entries.length > TILE_WIDTH) throw new RangeError(`an entry bundle holds at most 256 entries, not ${entries.length}`);
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.length > MAX_ENTRY_BYTES) throw new LogFormatError('log_too_large', `entry of ${e.length} bytes is over ${MAX_ENTRY_BYTES}`, 'entry');
    const len = Buffer.allocUnsafe(2);
    len.writeUInt16BE(e.length, 0);
    parts.push(len, Buffer.from(e.buffer, e.byteOffset, e.length));
  }
  return Buffer.concat(parts);
}

/** The entries of a bundle, which must hold exactly `tile.width` of them and nothing after. */
export function decodeBundle(bytes: Uint8Array, tile: TileRef): Buffer[] {
  const field = tilePath({ ...tile, level: 'entries' });
  if (bytes.length > MAX_BUNDLE_BYTES) throw new LogFormatError('log_too_large', `${bytes.length} bytes is over the ${MAX_BUNDLE_BYTES} a bundle can hold`, field);
  const entries: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (entries.length === tile.width) throw new LogFormatError('log_bad_bundle', `${bytes.length - at} bytes after the ${tile.width} entries (at byte ${at})`, field);
    if (at + 2 > bytes.length) throw new LogFormatError('log_bad_bundle', `entry ${entries.length}: length cut short (at byte ${at})`, field);
    const len = (bytes[at]! << 8) | bytes[at + 1]!;
    at += 2;
    if (at + len > bytes.length) throw new LogFormatError('log_bad_bundle', `entry ${entries.length}: ${len} bytes announced, ${bytes.length - at} left (at byte ${at - 2})`, field);
    entries.push(Buffer.from(bytes.subarray(at, at + len)));
    at += len;
  }
  if (entries.length !== tile.width) throw new LogFormatError('log_bad_bundle', `${entries.length} entries, not ${tile.width}`, field);
  return entries;
}

/**
 * Perfect-subtree hashes of a tree of `size` read from its tiles (as Go's tlog.TileHashReader):
 * a subtree of height 8·L + r is the root of 2^r consecutive hashes of one level-L tile.
 */
export class TileHashes implements SubtreeHashes {
  private readonly cache = new Map<string, Buffer[]>();

  constructor(
    readonly size: number,
    private readonly readTile: (tile: TileRef) => Uint8Array,
  ) {}

  hashAt(height: number, index: number): Uint8Array {
    const level = Math.floor(height / TILE_HEIGHT);
    const span = 2 ** (height % TILE_HEIGHT);
    const first = index * span;
    if ((index + 1) * 2 ** height > this.size) throw new RangeError(`subtree ${height}/${index} is not complete in a tree of ${this.size}`);
    const tile = tileInTree(this.size, level, Math.floor(first / TILE_WIDTH));
    const hashes = this.tileHashes(tile);
    const at = first % TILE_WIDTH;
    return span === 1 ? hashes[at]! : rootOfHashes(hashes.slice(at, at + span));
  }

  private tileHashes(tile: TileRef): Buffer[] {
    const key = tilePath(tile);
    let hashes = this.cache.get(key);
    if (hashes === undefined) {
      hashes = splitTile(this.readTile(tile), tile);
      if (this.cache.size >= 64) this.cache.clear();
      this.cache.set(key, hashes);
    }
    return hashes;
  }
}
