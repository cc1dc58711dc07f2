/**
 * Property: a single changed byte, or a cut, in a valid proof is either refused, or read
 * as a different timestamp (another digest or other attestations / attested messages),
 * and whatever is accepted still round-trips byte for byte.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchTree } from '../../../src/core/batch/batch-tree.js';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { batchProofs } from '../../../src/core/ots/batch-proof.js';
import { type DetachedTimestampFile, parseDetached, serializeDetached } from '../../../src/core/ots/codec.js';
import { OtsFormatError } from '../../../src/core/ots/errors.js';
import { SHA256, append } from '../../../src/core/ots/ops.js';
import { Timestamp, allAttestations } from '../../../src/core/ots/timestamp.js';
import { listVectors, readVector, sharedVectorsFor } from './vector-files.js';

function meaning(file: DetachedTimestampFile): string {
  const atts = allAttestations(file.timestamp).map(({ msg, attestation }) =>
    JSON.stringify([msg.toString('hex'), attestation, attestation.kind === 'unknown' ? [attestation.tag.toString('hex'), attestation.payload.toString('hex')] : null]),
  );
  return JSON.stringify([file.hashOp, file.digest.toString('hex'), atts.sort()]);
}

function ourProofs(): Buffer[] {
  const ds = Array.from({ length: 5 }, (_, i) => createHash('sha256').update(`m${i}`).digest());
  const root = new Timestamp(new BatchTree(ds).root);
  const tip = root.addOp(append(Buffer.alloc(16, 9))).addOp(SHA256);
  tip.addAttestation(pendingAttestation('https://calendar.example.org'));
  tip.addOp(SHA256).addAttestation(bitcoinAttestation(840_000));
  return batchProofs(ds, root).slice(0, 3).map(serializeDetached);
}

const vectorsPresent = sharedVectorsFor('mutating the shared .ots vectors (our own proofs are still mutated)');
const bases: Buffer[] = [...ourProofs(), ...(vectorsPresent ? listVectors().valid.map(readVector) : [])];

describe('single-byte mutations and truncations of valid proofs', () => {
  it('has base files from the vectors and from our batch proofs', () => {
    expect(bases.length).toBeGreaterThanOrEqual(3 + (vectorsPresent ? 9 : 0));
  });

  it('are refused, or read as another timestamp that still round-trips', () => {
    const originals = bases.map((b) => meaning(parseDetached(b)));
    const mutation = fc.oneof(
      fc.record({ file: fc.nat(bases.length - 1), at: fc.nat(1 << 16), delta: fc.integer({ min: 1, max: 255 }), cut: fc.constant(false) }),
      fc.record({ file: fc.nat(bases.length - 1), at: fc.nat(1 << 16), delta: fc.constant(0), cut: fc.constant(true) }),
    );
    let refused = 0;
    let accepted = 0;
    fc.assert(
      fc.property(mutation, ({ file, at, delta, cut }) => {
        const base = bases[file]!;
        const pos = at % base.length;
        const bytes = cut ? base.subarray(0, pos) : Buffer.from(base);
        if (!cut) bytes[pos] = (bytes[pos]! + delta) & 0xff;
        let parsed: DetachedTimestampFile;
        try {
          parsed = parseDetached(bytes);
        } catch (e) {
          if (!(e instanceof OtsFormatError)) throw e;
          refused++;
          return;
        }
        accepted++;
        expect(meaning(parsed)).not.toBe(originals[file]);
        expect(serializeDetached(parsed).equals(bytes)).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(refused + accepted).toBe(300);
    expect(refused).toBeGreaterThan(0);
  });
});
