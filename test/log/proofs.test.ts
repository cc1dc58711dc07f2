/**
 * RFC 6962 maths of the anchor log: the compact range's root, the tree hash from stored
 * subtree hashes, inclusion and consistency proofs and their checks, against the recursive
 * definition of RFC 6962 section 2.1 computed naively here.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { consistencyProof, inclusionProof, treeHash, verifyConsistency, verifyInclusion, type SubtreeHashes } from '../../src/core/log/proof.js';
import { CompactRange, EMPTY_ROOT, leafHash, nodeHash } from '../../src/core/log/rfc6962.js';

const sha = (...parts: Uint8Array[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** MTH(D[lo:hi]) by the recursive definition, over leaf hashes. */
function mth(leaves: readonly Buffer[], lo = 0, hi = leaves.length): Buffer {
  if (hi - lo === 0) return sha();
  if (hi - lo === 1) return leaves[lo]!;
  let k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return sha(Buffer.from([1]), mth(leaves, lo, lo + k), mth(leaves, lo + k, hi));
}

function memoryHashes(leaves: readonly Buffer[]): SubtreeHashes {
  return { hashAt: (height, index) => mth(leaves, index * 2 ** height, (index + 1) * 2 ** height) };
}

const leavesOf = (n: number): Buffer[] => Array.from({ length: n }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));

describe('RFC 6962 hashing', () => {
  it('leaf = SHA-256(0x00 || entry), node = SHA-256(0x01 || l || r), empty tree = SHA-256()', () => {
    const e = Buffer.from('abc');
    expect(leafHash(e)).toEqual(sha(Buffer.from([0]), e));
    const l = sha(Buffer.from('l'));
    const r = sha(Buffer.from('r'));
    expect(nodeHash(l, r)).toEqual(sha(Buffer.from([1]), l, r));
    expect(EMPTY_ROOT.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('the compact range gives MTH after every append, and reports every completed subtree', () => {
    const leaves = leavesOf(70);
    const seen = new Map<string, Buffer>();
    const range = new CompactRange((h, i, hash) => seen.set(`${h}/${i}`, hash));
    expect(range.root()).toEqual(EMPTY_ROOT);
    leaves.forEach((leaf, i) => {
      range.append(leaf);
      expect(range.root(), `size ${i + 1}`).toEqual(mth(leaves, 0, i + 1));
    });
    expect(seen.get('6/0')).toEqual(mth(leaves, 0, 64));
    expect(seen.get('2/16')).toEqual(mth(leaves, 64, 68));
    expect(seen.has('3/8')).toBe(false);
    const restored = CompactRange.fromSubtrees(70, [mth(leaves, 0, 64), mth(leaves, 64, 68), mth(leaves, 68, 70)]);
    expect(restored.root()).toEqual(mth(leaves));
    restored.append(leafHash(Buffer.from('x')));
    expect(restored.root()).toEqual(mth([...leaves, leafHash(Buffer.from('x'))]));
  });
});

describe('proofs from stored hashes', () => {
  const leaves = leavesOf(37);

  it('tree hash, every inclusion path and every consistency proof check for sizes 1 to 37', () => {
    for (let n = 1; n <= leaves.length; n++) {
      const part = leaves.slice(0, n);
      const hashes = memoryHashes(part);
      const root = treeHash(n, hashes);
      expect(root).toEqual(mth(part));
      for (let i = 0; i < n; i++) {
        const path = inclusionProof(n, i, hashes);
        expect(verifyInclusion(part[i]!, i, n, path, root), `inclusion ${i} in ${n}`).toBe(true);
      }
      for (let m = 0; m <= n; m++) {
        const proof = consistencyProof(m, n, memoryHashes(part));
        expect(verifyConsistency(m, n, mth(part, 0, m), root, proof), `consistency ${m} -> ${n}`).toBe(true);
      }
    }
  });

  it('a wrong leaf, index, size, root or a flipped proof byte fails', () => {
    const n = 21;
    const hashes = memoryHashes(leaves.slice(0, n));
    const root = treeHash(n, hashes);
    const path = inclusionProof(n, 13, hashes);
    expect(verifyInclusion(leaves[12]!, 13, n, path, root)).toBe(false);
    expect(verifyInclusion(leaves[13]!, 12, n, path, root)).toBe(false);
    expect(verifyInclusion(leaves[13]!, 13, n + 20, path, root)).toBe(false);
    expect(verifyInclusion(leaves[13]!, 13, n, path.slice(1), root)).toBe(false);
    expect(verifyInclusion(leaves[13]!, 13, n, [...path, root], root)).toBe(false);
    expect(verifyInclusion(leaves[13]!, n, n, path, root)).toBe(false);
    const bent = path.map((p) => Buffer.from(p));
    bent[2]![5]! ^= 1;
    expect(verifyInclusion(leaves[13]!, 13, n, bent, root)).toBe(false);

    const oldRoot = mth(leaves, 0, 9);
    const proof = consistencyProof(9, n, hashes);
    expect(verifyConsistency(9, n, oldRoot, root, proof)).toBe(true);
    expect(verifyConsistency(9, n, mth(leaves, 0, 8), root, proof)).toBe(false);
    expect(verifyConsistency(8, n, oldRoot, root, proof)).toBe(false);
    expect(verifyConsistency(9, n, oldRoot, mth(leaves, 0, n + 1), proof)).toBe(false);
    expect(verifyConsistency(9, n, oldRoot, root, proof.slice(0, -1))).toBe(false);
    expect(verifyConsistency(9, n, oldRoot, root, [])).toBe(false);
    expect(verifyConsistency(n, 9, root, oldRoot, proof)).toBe(false);
    expect(verifyConsistency(n, n, root, oldRoot, [])).toBe(false);
    expect(verifyConsistency(0, n, oldRoot, root, [])).toBe(false);
  });

  it('refuses an index outside the tree and an old size over the new', () => {
    const hashes = memoryHashes(leaves);
    expect(() => inclusionProof(5, 5, hashes)).toThrow(/outside a tree of 5/);
    expect(() => consistencyProof(6, 5, hashes)).toThrow(/larger than new size/);
  });
});
