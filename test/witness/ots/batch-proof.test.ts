import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BatchTree, leafHash, rootFromPath } from '../../../src/core/batch/batch-tree.js';
import { batchProofs, proofForSubject, subjectOps, subjectTimestamp } from '../../../src/core/ots/batch-proof.js';
import { parseDetached, serializeDetached } from '../../../src/core/ots/codec.js';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { evaluateOps } from '../../../src/core/ots/ops.js';
import { Timestamp, allAttestations, pendingAttestations } from '../../../src/core/ots/timestamp.js';
import { OtsFormatError } from '../../../src/core/ots/errors.js';

function digests(n: number): Buffer[] {
  return Array.from({ length: n }, () => randomBytes(32));
}

describe('batch inclusion paths as OTS ops', () => {
  it('lead from each subject digest to the RFC 6962 root, for every leaf of batches of 1 to 40', () => {
    for (let n = 1; n <= 40; n++) {
      const ds = digests(n);
      const tree = new BatchTree(ds);
      for (let i = 0; i < n; i++) {
        const path = tree.path(i);
        const end = evaluateOps(ds[i]!, subjectOps(i, n, path));
        expect(end.equals(tree.root), `leaf ${i} of ${n}`).toBe(true);
        expect(end.equals(rootFromPath(ds[i]!, i, n, path)!)).toBe(true);
      }
    }
  });

  it('start with the leaf hash: prepend 00, sha256', () => {
    const d = randomBytes(32);
    expect(evaluateOps(d, subjectOps(0, 1, [])).equals(leafHash(d))).toBe(true);
    expect(subjectOps(0, 1, []).map((o) => o.kind)).toEqual(['prepend', 'sha256']);
  });

  it('refuse a path that does not fit the index and size', () => {
    expect(() => subjectOps(0, 2, [])).toThrow(RangeError);
    expect(() => subjectOps(2, 2, [randomBytes(32)])).toThrow(RangeError);
  });

  it('subjectTimestamp gives the head on d and the tip on the root', () => {
    const ds = digests(5);
    const tree = new BatchTree(ds);
    const { head, tip } = subjectTimestamp(ds[3]!, 3, 5, tree.path(3));
    expect(head.msg.equals(ds[3]!)).toBe(true);
    expect(tip.msg.equals(tree.root)).toBe(true);
    expect(tip.isEmpty).toBe(true);
  });
});

describe('batchProofs', () => {
  function rootTimestamp(root: Buffer): Timestamp {
    const ts = new Timestamp(root);
    ts.addOp({ kind: 'append', arg: randomBytes(16) }).addOp({ kind: 'sha256' }).addAttestation(pendingAttestation('https://calendar.example.org'));
    return ts;
  }

  it('writes one proof per subject, each on its own digest, all reaching the shared root timestamp', () => {
    const ds = digests(7);
    const tree = new BatchTree(ds);
    const root = rootTimestamp(tree.root);
    const proofs = batchProofs(ds, root);
    expect(proofs).toHaveLength(7);
    proofs.forEach((p, i) => {
      expect(p.hashOp).toBe('sha256');
      expect(p.digest.equals(ds[i]!)).toBe(true);
      const reread = parseDetached(serializeDetached(p));
      const pending = pendingAttestations(reread.timestamp);
      expect(pending.map((x) => x.uri)).toEqual(['https://calendar.example.org']);
      expect(pending[0]!.commitment.equals(pendingAttestations(root)[0]!.commitment)).toBe(true);
    });
  });

  it('shares the root timestamp: a later upgrade of the root shows in proofs built before it', () => {
    const ds = digests(3);
    const tree = new BatchTree(ds);
    const root = new Timestamp(tree.root);
    root.addAttestation(pendingAttestation('https://calendar.example.org'));
    const proof = proofForSubject(ds[1]!, 1, 3, tree.path(1), root);
    root.addOp({ kind: 'sha256' }).addAttestation(bitcoinAttestation(1000));
    expect(allAttestations(proof.timestamp).map((a) => a.attestation.kind)).toEqual(['pending', 'bitcoin']);
  });

  it('refuses a root timestamp on another message', () => {
    const ds = digests(4);
    expect(() => batchProofs(ds, rootTimestamp(randomBytes(32)))).toThrow(OtsFormatError);
    const tree = new BatchTree(ds);
    expect(() => proofForSubject(ds[0]!, 0, 4, tree.path(1), rootTimestamp(tree.root))).toThrow(/does not lead to the root/);
  });

  it('refuses digests that are not 32 bytes', () => {
    expect(() => batchProofs([randomBytes(20)], rootTimestamp(randomBytes(32)))).toThrow(/32 bytes/);
  });

  it('builds a proof for one subject of a large batch from its path alone', () => {
    const ds = digests(1000);
    const tree = new BatchTree(ds);
    const root = rootTimestamp(tree.root);
    const proof = proofForSubject(ds[777]!, 777, 1000, tree.path(777), root);
    const bytes = serializeDetached(proof);
    expect(parseDetached(bytes).digest.equals(ds[777]!)).toBe(true);
    // prepend 00, sha256, then 3 ops per level (10 levels for 1000 leaves).
    expect(subjectOps(777, 1000, tree.path(777))).toHaveLength(2 + 3 * 10);
  });
});
