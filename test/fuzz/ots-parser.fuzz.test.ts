/**
 * Fuzzing the `.ots` parser (parseDetached): random bytes, multi-step mutations of valid
 * proofs (ours, confirmed in a regtest block with real proof of work, and the shared
 * vectors), and hostile shapes (deep nesting, wide fan-out). The parser only ever throws
 * OtsFormatError, accepts only what it re-serializes byte for byte, stays bounded in time,
 * and a mutant that still reads for the original digest never carries a Bitcoin attestation
 * that verifies unless the original had that same attestation.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchTree } from '../../src/core/batch/batch-tree.js';
import { pendingAttestation } from '../../src/core/ots/attestations.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { verifyBitcoinAttestation } from '../../src/core/bitcoin/verify.js';
import { batchProofs } from '../../src/core/ots/batch-proof.js';
import { HEADER_MAGIC, MAX_DEPTH, parseDetached, parseTimestamp, serializeDetached, type DetachedTimestampFile } from '../../src/core/ots/codec.js';
import { mineCommitments } from '../../src/dev/calendar/confirmation.js';
import { OtsFormatError } from '../../src/core/ots/errors.js';
import { SHA256, append } from '../../src/core/ots/ops.js';
import { Timestamp, bitcoinAttestations } from '../../src/core/ots/timestamp.js';
import { listVectors, readVector, sharedVectorsFor } from '../witness/ots/vector-files.js';
import { applyByteMutation, fuzzParams, timed, type ByteMutation } from './settings.js';

/** Our own batch proofs: pending at a calendar, and confirmed in a mined regtest block. */
function ourProofs(): { files: Buffer[]; headers: Map<number, Buffer> } {
  const ds = Array.from({ length: 7 }, (_, i) => createHash('sha256').update(`fuzz-${i}`).digest());
  const root = new Timestamp(new BatchTree(ds).root);
  const tip = root.addOp(append(Buffer.alloc(16, 7))).addOp(SHA256);
  tip.addAttestation(pendingAttestation('https://calendar.example.org'));
  const height = 812;
  const mined = mineCommitments({ commitments: [tip.msg], height, prevHash: Buffer.alloc(32, 3), time: 1_769_860_800 });
  tip.merge(parseTimestamp(mined.upgrades[0]!, tip.msg));
  return { files: batchProofs(ds, root).map(serializeDetached), headers: new Map([[height, mined.header]]) };
}

const ours = ourProofs();
const source = new HeadersFileSource(ours.headers);
const bases: Buffer[] = [...ours.files, ...(sharedVectorsFor('fuzzing from the shared .ots vectors (our own proofs are still fuzzed)') ? listVectors().valid.map(readVector) : [])];

/** "height:msg" of every Bitcoin attestation in `file` that verifies against our headers. */
async function verifiedBitcoin(file: DetachedTimestampFile): Promise<Set<string>> {
  const out = new Set<string>();
  for (const att of bitcoinAttestations(file.timestamp)) {
    try {
      await verifyBitcoinAttestation(att.merkleRoot, att.height, source, 'regtest');
      out.add(`${att.height}:${att.merkleRoot.toString('hex')}`);
    } catch {
      // not verified
    }
  }
  return out;
}

/** Parses; returns null on OtsFormatError; rethrows anything else (a crash). */
function tryParse(bytes: Uint8Array): DetachedTimestampFile | null {
  try {
    return parseDetached(bytes);
  } catch (err) {
    if (err instanceof OtsFormatError) return null;
    throw err;
  }
}

const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(1 << 16), xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(1 << 16), bytes: fc.array(fc.nat(255), { minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(1 << 16), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(1 << 16), count: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(1 << 16) }),
  fc.record({ kind: fc.constant('append' as const), bytes: fc.array(fc.nat(255), { minLength: 1, maxLength: 8 }) }),
);

describe('the .ots parser under fuzzing', () => {
  it('our confirmed proofs carry a Bitcoin attestation that verifies (the property below is not empty)', async () => {
    for (const b of ours.files) expect((await verifiedBitcoin(parseDetached(b))).size).toBe(1);
  });

  it('random bytes, with and without a valid header: only OtsFormatError, accepted input round-trips', () => {
    let slowest = 0;
    let accepted = 0;
    const header = Buffer.concat([HEADER_MAGIC, Buffer.from([1, 0x08]), Buffer.alloc(32, 1)]);
    fc.assert(
      fc.property(fc.boolean(), fc.uint8Array({ maxLength: 4096 }), (withHeader, tail) => {
        const bytes = withHeader ? Buffer.concat([header, tail]) : Buffer.from(tail);
        const { value: file, ms } = timed(() => tryParse(bytes));
        slowest = Math.max(slowest, ms);
        if (file) {
          accepted++;
          expect(serializeDetached(file).equals(bytes)).toBe(true);
        }
      }),
      fuzzParams(5000),
    );
    console.log(`fuzz ots random: ${accepted} accepted, slowest parse ${slowest.toFixed(1)} ms`);
  });

  it('mutated valid proofs: only OtsFormatError; a mutant read for the original digest never gains a verified Bitcoin attestation', async () => {
    const originals = await Promise.all(bases.map(async (b) => ({ file: parseDetached(b), bitcoin: await verifiedBitcoin(parseDetached(b)) })));
    let slowest = 0;
    const counts = { refused: 0, otherDigest: 0, sameDigest: 0 };
    await fc.assert(
      fc.asyncProperty(fc.nat(bases.length - 1), fc.array(byteMutation, { minLength: 1, maxLength: 4 }), async (i, mutations) => {
        const mutated = mutations.reduce<Buffer>((b, m) => applyByteMutation(b, m), bases[i]!);
        const { value: file, ms } = timed(() => tryParse(mutated));
        slowest = Math.max(slowest, ms);
        if (!file) {
          counts.refused++;
          return;
        }
        expect(serializeDetached(file).equals(mutated)).toBe(true);
        if (!file.digest.equals(originals[i]!.file.digest) || file.hashOp !== originals[i]!.file.hashOp) {
          counts.otherDigest++;
          return;
        }
        counts.sameDigest++;
        for (const att of await verifiedBitcoin(file)) expect(originals[i]!.bitcoin.has(att), `mutant of base ${i} gained ${att}`).toBe(true);
      }),
      fuzzParams(4000),
    );
    expect(counts.refused).toBeGreaterThan(0);
    console.log(`fuzz ots mutations: ${JSON.stringify(counts)}, slowest parse ${slowest.toFixed(1)} ms`);
  });

  it(`nesting deeper than ${MAX_DEPTH} is refused (no stack overflow), fan-out is bounded`, () => {
    const header = Buffer.concat([HEADER_MAGIC, Buffer.from([1, 0x08]), Buffer.alloc(32, 2)]);
    const pending = Buffer.concat([Buffer.from('0083dfe30d2ef90c8e', 'hex'), Buffer.from([12, 11]), Buffer.from('https://a.b')]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5000 }), (depth) => {
        // depth sha256 ops in a row, then a pending attestation
        const bytes = Buffer.concat([header, Buffer.alloc(depth, 0x08), pending]);
        const file = tryParse(bytes);
        if (depth <= MAX_DEPTH - 2) expect(file).not.toBeNull();
        if (depth > MAX_DEPTH) expect(file).toBeNull();
      }),
      fuzzParams(200),
    );
    // wide: 0xff-separated attestation branches with distinct URIs, up to the input cap
    const wide = (n: number): Buffer => {
      const parts: Buffer[] = [header];
      for (let k = 0; k < n; k++) {
        const uri = Buffer.from(`https://a.b/${String(k).padStart(6, '0')}`);
        if (k < n - 1) parts.push(Buffer.from([0xff]));
        parts.push(Buffer.from('0083dfe30d2ef90c8e', 'hex'), Buffer.from([uri.length + 1, uri.length]), uri);
      }
      return Buffer.concat(parts);
    };
    const { ms } = timed(() => tryParse(wide(20_000)));
    console.log(`fuzz ots: 20,000 sibling attestations (${wide(20_000).length} bytes) read or refused in ${ms.toFixed(0)} ms`);
  });
});
