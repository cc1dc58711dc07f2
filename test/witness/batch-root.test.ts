/**
 * batchRoot: the root a batch's witnesses attest, built once per list of digests and handed
 * out again (src/adapters/batch/batch-root.ts). Checked against RFC 6962's recursive
 * definition written here apart from the level-by-level tree.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { batchRoot } from '../../src/adapters/batch/batch-root.js';

const h = (...parts: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(parts)).digest();

/** RFC 6962 §2.1 Merkle Tree Hash, recursive: split at the largest power of two below n. */
function mth(d: Buffer[]): Buffer {
  if (d.length === 1) return h(Buffer.from([0]), d[0]!);
  let k = 1;
  while (k * 2 < d.length) k *= 2;
  return h(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
}

const digests = (n: number): Buffer[] => Array.from({ length: n }, () => randomBytes(32));
const root = (d: Buffer[]): Buffer => batchRoot({ digests: d, fields: {} });

describe('batchRoot', () => {
  it('is the RFC 6962 root of the digests in order, asked once or again', () => {
    for (const n of [1, 2, 3, 5, 8, 13, 100, 3000]) {
      const d = digests(n);
      expect(root(d).toString('hex'), `n = ${n}`).toBe(mth(d).toString('hex'));
      expect(root(d.map((x) => Buffer.from(x))).toString('hex'), `n = ${n}, asked again`).toBe(mth(d).toString('hex'));
    }
  });

  it('gives a list that differs in one digest or in order its own root, and a changed answer does not change the next', () => {
    const d = digests(64);
    root(d).fill(0);
    root(d).fill(0);
    expect(root(d).equals(mth(d))).toBe(true);
    const swapped = [d[1]!, d[0]!, ...d.slice(2)];
    expect(root(swapped).equals(mth(swapped))).toBe(true);
    const changed = d.map((x, i) => (i === 63 ? Buffer.from(x).fill(7, 31) : x));
    expect(root(changed).equals(mth(changed))).toBe(true);
    expect(root(d).equals(mth(d))).toBe(true);
  });

  it('builds the tree for digests that are not all 32 bytes instead of keeping them', () => {
    const d = [randomBytes(32), randomBytes(16), randomBytes(48)];
    expect(root(d).equals(mth(d))).toBe(true);
    const split = [Buffer.concat([d[0]!, d[1]!]), d[2]!];
    expect(root(split).equals(mth(split))).toBe(true);
  });
});
