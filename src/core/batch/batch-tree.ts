/**
 * The batch tree of SPEC section 4.2: RFC 6962 Merkle Tree Hash over the subjects'
 * envelope digests in order. leaf = SHA-256(0x00 || d), node = SHA-256(0x01 || L || R),
 * split at the largest power of two below n. Built level by level (an odd last node
 * is carried up unchanged), which yields the same tree as the recursive definition.
 */
import { sha256 } from '../aer1/hash.js';

/** The bytes hashed, copied into one buffer and hashed in one call (no Hash object per hash). */
let scratch = Buffer.alloc(65);

function prefixed(prefix: number, parts: readonly Uint8Array[]): Buffer {
  const size = parts.reduce((a, p) => a + p.length, 1);
  if (size > scratch.length) scratch = Buffer.alloc(size);
  scratch[0] = prefix;
  let at = 1;
  for (const p of parts) {
    scratch.set(p, at);
    at += p.length;
  }
  return sha256(scratch.subarray(0, at));
}

export function leafHash(digest: Uint8Array): Buffer {
  return prefixed(0x00, [digest]);
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return prefixed(0x01, [left, right]);
}

/** Which side the sibling stands on at one step of an inclusion path, leaf upward. */
export interface PathStep {
  side: 'left' | 'right';
  hash: Buffer;
}

export class BatchTree {
  readonly size: number;
  private readonly levels: Buffer[][];

  constructor(digests: readonly Uint8Array[]) {
    if (digests.length === 0) throw new RangeError('a batch tree needs at least one digest');
    this.size = digests.length;
    const levels: Buffer[][] = [digests.map(leafHash)];
    let level = levels[0]!;
    while (level.length > 1) {
      const next: Buffer[] = [];
      for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
      if (level.length % 2 === 1) next.push(level[level.length - 1]!);
      levels.push(next);
      level = next;
    }
    this.levels = levels;
  }

  get root(): Buffer {
    return this.levels[this.levels.length - 1]![0]!;
  }

  /** RFC 9162 inclusion path for leaf `index`, leaf upward (sibling hashes only). */
  path(index: number): Buffer[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) {
      throw new RangeError(`leaf index ${index} outside a batch of ${this.size}`);
    }
    const path: Buffer[] = [];
    let i = index;
    for (let l = 0; l < this.levels.length - 1; l++) {
      const level = this.levels[l]!;
      const sibling = i ^ 1;
      if (sibling < level.length) path.push(level[sibling]!);
      i >>= 1;
    }
    return path;
  }
}

/**
 * Sides of each step of an RFC 9162 inclusion path (section 2.1.3.2), or null when
 * the path's length does not fit (index, size). The one place that reads a path.
 */
export function pathSteps(index: number, size: number, path: readonly Uint8Array[]): PathStep[] | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return null;
  let fn = index;
  let sn = size - 1;
  const steps: PathStep[] = [];
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      steps.push({ side: 'left', hash: Buffer.from(p) });
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      steps.push({ side: 'right', hash: Buffer.from(p) });
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? steps : null;
}

/** The root an inclusion path leads to from `digest`, or null when the path is malformed. */
export function rootFromPath(digest: Uint8Array, index: number, size: number, path: readonly Uint8Array[]): Buffer | null {
  const steps = pathSteps(index, size, path);
  if (!steps) return null;
  let node = leafHash(digest);
  for (const step of steps) {
    node = step.side === 'left' ? nodeHash(step.hash, node) : nodeHash(node, step.hash);
  }
  return node;
}
