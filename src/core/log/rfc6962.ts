/**
 * RFC 6962 section 2.1 Merkle Tree Hash: leaf = SHA-256(0x00 || entry), node =
 * SHA-256(0x01 || left || right), the empty tree SHA-256(""). The compact range keeps one
 * hash per set bit of the size, so a log's root is known after each append in O(log n).
 */
import { sha256 } from '../aer1/hash.js';

export const HASH_SIZE = 32;

/** MTH({}) = SHA-256() (RFC 6962 2.1); Go's tlog.TreeHash(0) answers zeros instead. */
export const EMPTY_ROOT: Buffer = sha256(new Uint8Array(0));

const leafBuf = Buffer.allocUnsafe(1 + 65_535 + 2);
const nodeBuf = Buffer.allocUnsafe(1 + 2 * HASH_SIZE);
nodeBuf[0] = 0x01;

export function leafHash(entry: Uint8Array): Buffer {
  if (entry.length > 65_535) {
    return sha256(Buffer.concat([Buffer.from([0x00]), entry]));
  }
  leafBuf[0] = 0x00;
  leafBuf.set(entry, 1);
  return sha256(leafBuf.subarray(0, 1 + entry.length));
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE) throw new RangeError('nodeHash takes two 32-byte hashes');
  nodeBuf.set(left, 1);
  nodeBuf.set(right, 1 + HASH_SIZE);
  return sha256(nodeBuf);
}

/** The largest power of two strictly below n (n >= 2): RFC 6962's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH over a list of hashes already at one level (a tile's hashes, a level's row). */
export function rootOfHashes(hashes: readonly Uint8Array[]): Buffer {
  if (hashes.length === 0) return EMPTY_ROOT;
  const range = new CompactRange();
  for (const h of hashes) range.append(h);
  return range.root();
}

/**
 * The perfect subtrees a growing tree is made of, left to right: appending a hash merges
 * equal heights, as binary addition carries. `onSubtree` sees every subtree completed.
 */
export class CompactRange {
  private readonly heights: number[] = [];
  private readonly hashes: Buffer[] = [];
  private count = 0;

  constructor(private readonly onSubtree?: (height: number, index: number, hash: Buffer) => void) {}

  get size(): number {
    return this.count;
  }

  /** Starts from the perfect subtrees of a tree of `size` (largest first), e.g. read from tiles. */
  static fromSubtrees(size: number, subtrees: readonly Buffer[], onSubtree?: (height: number, index: number, hash: Buffer) => void): CompactRange {
    const range = new CompactRange(onSubtree);
    let k = 0;
    for (let h = 63; h >= 0; h--) {
      if (Math.floor(size / 2 ** h) % 2 === 1) {
        const hash = subtrees[k++];
        if (hash === undefined) throw new RangeError(`a tree of ${size} needs more than ${subtrees.length} subtree hashes`);
        range.heights.push(h);
        range.hashes.push(hash);
      }
    }
    if (k !== subtrees.length) throw new RangeError(`a tree of ${size} has ${k} perfect subtrees, not ${subtrees.length}`);
    range.count = size;
    return range;
  }

  append(hash: Uint8Array): void {
    let h = 0;
    let cur: Buffer = Buffer.from(hash);
    let index = this.count;
    this.onSubtree?.(0, index, cur);
    while (this.heights.length > 0 && this.heights[this.heights.length - 1] === h) {
      this.heights.pop();
      cur = nodeHash(this.hashes.pop()!, cur);
      h++;
      index = Math.floor(index / 2);
      this.onSubtree?.(h, index, cur);
    }
    this.heights.push(h);
    this.hashes.push(cur);
    this.count++;
  }

  /** MTH of everything appended: the subtrees folded right to left. */
  root(): Buffer {
    if (this.hashes.length === 0) return EMPTY_ROOT;
    let acc = this.hashes[this.hashes.length - 1]!;
    for (let i = this.hashes.length - 2; i >= 0; i--) acc = nodeHash(this.hashes[i]!, acc);
    return acc;
  }
}
