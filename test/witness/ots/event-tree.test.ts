/**
 * The joined root of NIP-03 batches (src/core/ots/event-tree.ts), pure: subjects' and
 * event ids' proofs meet at R = SHA-256(02 || R_s || R_e), and the NIP-03 copy keeps one
 * Bitcoin attestation and no pending one.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BatchTree } from '../../../src/core/batch/batch-tree.js';
import { proofForSubject } from '../../../src/core/ots/batch-proof.js';
import { parseDetached, serializeDetached } from '../../../src/core/ots/codec.js';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { eventIdProof, eventsRootOf, findNode, joinedRoot, prunedTo, subjectsToJoined } from '../../../src/core/ots/event-tree.js';
import { SHA256, append } from '../../../src/core/ots/ops.js';
import { Timestamp, allAttestations } from '../../../src/core/ots/timestamp.js';

const sha = (b: Buffer): Buffer => createHash('sha256').update(b).digest();

/** A root timestamp on R_s with the join, and under R a pending branch and two Bitcoin branches. */
function rootTimestamp(subjectsRoot: Buffer, eventsRoot: Buffer): { ts: Timestamp; joined: Timestamp } {
  const ts = new Timestamp(subjectsRoot);
  let joined = ts;
  for (const op of subjectsToJoined(eventsRoot)) joined = joined.addOp(op);
  joined.addOp(append(Buffer.from('cal-a'))).addOp(SHA256).addAttestation(pendingAttestation('https://a.example'));
  joined.addOp(append(Buffer.from('cal-b'))).addOp(SHA256).addAttestation(bitcoinAttestation(7));
  joined.addOp(append(Buffer.from('cal-c'))).addOp(SHA256).addAttestation(bitcoinAttestation(9));
  return { ts, joined };
}

describe('event tree', () => {
  for (const n of [1, 2, 3, 7, 33]) {
    it(`${n} subjects with ${n} event ids: every proof, of a digest or of an event id, reaches the joined root`, () => {
      const digests = Array.from({ length: n }, () => randomBytes(32));
      const ids = Array.from({ length: n }, () => randomBytes(32));
      const subjectsRoot = new BatchTree(digests).root;
      const eventsRoot = eventsRootOf(ids)!;
      const R = joinedRoot(subjectsRoot, eventsRoot);
      expect(R).toEqual(sha(Buffer.concat([Buffer.from([2]), subjectsRoot, eventsRoot])));
      const { ts, joined } = rootTimestamp(subjectsRoot, eventsRoot);
      expect(joined.msg).toEqual(R);
      const tree = new BatchTree(digests);
      const events = new BatchTree(ids);
      for (let i = 0; i < n; i++) {
        const subject = parseDetached(serializeDetached(proofForSubject(digests[i]!, i, n, tree.path(i), ts)));
        expect(findNode(subject.timestamp, R)).not.toBeNull();
        const event = parseDetached(serializeDetached(eventIdProof(events, ids[i]!, i, subjectsRoot, joined)));
        expect(event.digest).toEqual(ids[i]);
        expect(findNode(event.timestamp, R)).not.toBeNull();
        expect(allAttestations(event.timestamp).map((a) => a.attestation.kind).sort()).toEqual(['bitcoin', 'bitcoin', 'pending']);
      }
    });
  }

  it('prunedTo keeps the one attestation asked for, on the same messages, and nothing else', () => {
    const { joined } = rootTimestamp(randomBytes(32), randomBytes(32));
    const single = prunedTo(joined, (a) => a.kind === 'bitcoin' && a.height === 9)!;
    const atts = allAttestations(single);
    expect(atts).toHaveLength(1);
    expect(atts[0]!.attestation).toEqual({ kind: 'bitcoin', height: 9 });
    // same message as the original branch reached
    const original = allAttestations(joined).find((a) => a.attestation.kind === 'bitcoin' && a.attestation.height === 9)!;
    expect(atts[0]!.msg).toEqual(original.msg);
    expect(prunedTo(joined, (a) => a.kind === 'bitcoin' && a.height === 8)).toBeNull();
  });

  it('prunedTo tells two attestations at one height apart by the message they attest', () => {
    const node = new Timestamp(randomBytes(32));
    const bogus = node.addOp(append(Buffer.from('bogus'))).addOp(SHA256);
    bogus.addAttestation(bitcoinAttestation(5));
    const good = node.addOp(append(Buffer.from('good'))).addOp(SHA256);
    good.addAttestation(bitcoinAttestation(5));
    const single = prunedTo(node, (a, msg) => a.kind === 'bitcoin' && msg.equals(good.msg))!;
    expect(allAttestations(single).map((a) => a.msg)).toEqual([good.msg]);
  });

  it('no event ids: no event tree; an id that is not 32 bytes is refused', () => {
    expect(eventsRootOf([])).toBeNull();
    expect(() => eventsRootOf([Buffer.alloc(31)])).toThrow(/32 bytes/);
  });
});
