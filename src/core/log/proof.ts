/**
 * RFC 6962 / RFC 9162 section 2.1 proofs over a tree whose perfect subtrees are read
 * from stored hashes (the tiles): the tree hash, inclusion paths and consistency proofs,
 * and their checks. Sizes and indexes are safe integers (below 2^53).
 */
import { EMPTY_ROOT, nodeHash, splitPoint } from './rfc6962.js';

/** The hash of the perfect subtree of `height` covering leaves [index·2^height, (index+1)·2^height). */
export interface SubtreeHashes {
  hashAt(height: number, index: number): Uint8Array;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/** MTH(D[lo:hi]) for a range that starts on a multiple of the split it belongs to (RFC 6962's recursion). */
export function rangeHash(lo: number, hi: number, hashes: SubtreeHashes): Uint8Array {
  const size = hi - lo;
  if (size <= 0) throw new RangeError(`empty range [${lo}, ${hi})`);
  if (isPowerOfTwo(size) && lo % size === 0) return hashes.hashAt(Math.round(Math.log2(size)), lo / size);
  const k = splitPoint(size);
  return nodeHash(rangeHash(lo, lo + k, hashes), rangeHash(lo + k, hi, hashes));
}

export function treeHash(size: number, hashes: SubtreeHashes): Uint8Array {
  return size === 0 ? EMPTY_ROOT : rangeHash(0, size, hashes);
}

function checkSize(size: number, what: string): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`${what} ${size} is not a size`);
}

/** PATH(index, D[0:size]), leaf upward (RFC 6962 2.1.1). */
export function inclusionProof(size: number, index: number, hashes: SubtreeHashes): Uint8Array[] {
  checkSize(size, 'tree size');
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`index ${index} is outside a tree of ${size}`);
  const path: Uint8Array[] = [];
  const walk = (m: number, lo: number, hi: number): void => {
    if (hi - lo === 1) return;
    const k = splitPoint(hi - lo);
    if (m < k) {
      walk(m, lo, lo + k);
      path.push(rangeHash(lo + k, hi, hashes));
    } else {
      walk(m - k, lo + k, hi);
      path.push(rangeHash(lo, lo + k, hashes));
    }
  };
  walk(index, 0, size);
  return path;
}

/** PROOF(oldSize, D[0:newSize]) (RFC 6962 2.1.2); empty when the sizes are equal or the old tree is empty. */
export function consistencyProof(oldSize: number, newSize: number, hashes: SubtreeHashes): Uint8Array[] {
  checkSize(oldSize, 'old size');
  checkSize(newSize, 'new size');
  if (oldSize > newSize) throw new RangeError(`old size ${oldSize} is larger than new size ${newSize}`);
  const proof: Uint8Array[] = [];
  if (oldSize === 0 || oldSize === newSize) return proof;
  const sub = (m: number, lo: number, hi: number, complete: boolean): void => {
    if (m === hi - lo) {
      if (!complete) proof.push(rangeHash(lo, hi, hashes));
      return;
    }
    const k = splitPoint(hi - lo);
    if (m <= k) {
      sub(m, lo, lo + k, complete);
      proof.push(rangeHash(lo + k, hi, hashes));
    } else {
      sub(m - k, lo + k, hi, false);
      proof.push(rangeHash(lo, lo + k, hashes));
    }
  };
  sub(oldSize, 0, newSize, true);
  return proof;
}

const odd = (n: number): boolean => n % 2 === 1;
const half = (n: number): number => Math.floor(n / 2);

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** RFC 9162 2.1.3.2: does `path` lead from `leaf` at `index` to `root` of a tree of `size`? */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, path: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of path) {
    if (p.length !== 32 || sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equal(r, root);
}

/** RFC 9162 2.1.4.2: is the tree (`newSize`, `newRoot`) an append-only extension of (`oldSize`, `oldRoot`)? */
export function verifyConsistency(oldSize: number, newSize: number, oldRoot: Uint8Array, newRoot: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize) return false;
  if (oldSize === 0) return proof.length === 0 && equal(oldRoot, EMPTY_ROOT);
  if (oldSize === newSize) return proof.length === 0 && equal(oldRoot, newRoot);
  if (proof.length === 0 || proof.some((p) => p.length !== 32)) return false;
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof];
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr: Uint8Array = path[0]!;
  let sr: Uint8Array = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equal(fr, oldRoot) && equal(sr, newRoot);
}
