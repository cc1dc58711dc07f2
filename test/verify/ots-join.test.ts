/**
 * NIP-03's joined root seen by the verifier: in envelope mode an OTS batch submits
 * R = SHA-256(02 || R_s || R_e) (src/core/ots/event-tree.ts). A subject's .ots still commits
 * to its own d through standard ops and PASSes against a real (regtest) header; the event-id
 * half of the tree never proves a subject: an event id's .ots, another subject's path, a
 * digest swapped in, a path one level short or long, all FAIL. And the one weakness the join
 * has, stated as a fact (docs/ots.md, NIP-03): it is an ordinary RFC 6962 node, so for n a
 * power of two and k <= n, R is also the RFC 6962 root over the n + k leaves d.., e...
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BatchTree, leafHash, nodeHash } from '../../src/core/batch/batch-tree.js';
import { proofForSubject, subjectOps } from '../../src/core/ots/batch-proof.js';
import { DetachedTimestampFile, parseDetached, parseTimestamp, serializeDetached } from '../../src/core/ots/codec.js';
import { eventIdProof, eventsRootOf, joinedRoot, subjectsToJoined } from '../../src/core/ots/event-tree.js';
import { SHA256, append } from '../../src/core/ots/ops.js';
import { Timestamp } from '../../src/core/ots/timestamp.js';
import { mineCommitments } from '../../src/dev/calendar/confirmation.js';
import { envelopeEvent } from '../../src/core/nostr/events.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { CALENDAR, KEY, attach, envelopeModeProof, receiptNumber, subjectOf, type Json } from './build-proofs.js';

const HEIGHT = 777;
const N = 4;
const docs = Array.from({ length: N }, (_, i) => receiptNumber(950 + i));
const subjects = docs.map((d) => subjectOf(d));
const events = subjects.map((s) => envelopeEvent({ canonical: s.canonical, digestHex: s.digestHex }, KEY));
const ids = events.map((e) => Buffer.from(e.id, 'hex'));
const subjectsTree = new BatchTree(subjects.map((s) => s.digest));
const eventsTree = new BatchTree(ids);
const Rs = subjectsTree.root;
const Re = eventsRootOf(ids)!;
const R = joinedRoot(Rs, Re);

// the root timestamp on R_s, the join to R, a calendar commitment mined into a regtest block
const rootTs = new Timestamp(Rs);
let joined = rootTs;
for (const op of subjectsToJoined(Re)) joined = joined.addOp(op);
const commitment = joined.addOp(append(Buffer.from('aer1-test-calendar-nonce'))).addOp(SHA256);
const time = 1_769_860_800;
const mined = mineCommitments({ commitments: [commitment.msg], height: HEIGHT, prevHash: Buffer.alloc(32, 9), time });
commitment.merge(parseTimestamp(mined.upgrades[0]!, commitment.msg));
const headerSource = () => new HeadersFileSource(new Map([[HEIGHT, mined.header]]));
const bitcoin = { height: HEIGHT, block_hash: Buffer.from(mined.hash).reverse().toString('hex'), time };

const subjectOts = (i: number): Buffer => serializeDetached(proofForSubject(subjects[i]!.digest, i, N, subjectsTree.path(i), rootTs));
const eventOts = (j: number): Buffer => serializeDetached(eventIdProof(eventsTree, ids[j]!, j, Rs, joined));

function proofWithOts(i: number, ots: Buffer): Json {
  const { proof } = envelopeModeProof(docs[i], { noOts: true });
  return { ...proof, status: 'confirmed', ots: { status: 'confirmed', proof: ots.toString('base64'), calendars: [{ url: CALENDAR, status: 'confirmed' }], bitcoin } };
}

async function run(i: number, ots: Buffer): Promise<VerifyReport> {
  return verifyAnchor({ value: attach(docs[i], proofWithOts(i, ots)) }, { headerSource: headerSource(), network: 'regtest', expectedPubkeys: [KEY.publicKey] });
}

const check = (r: VerifyReport, name: string) => r.checks.find((c) => c.name === name)!;

describe('the NIP-03 joined root, seen by the verifier', () => {
  it('each subject\'s .ots commits to its own d with standard ops (3 more past R_s) and is confirmed in the block', async () => {
    for (let i = 0; i < N; i++) {
      const file = parseDetached(subjectOts(i));
      expect(file.digest).toEqual(subjects[i]!.digest);
      const r = await run(i, subjectOts(i));
      expect(r.verdict, `subject ${i}`).toBe('PASS');
      expect(r.witnesses.ots?.verified, `subject ${i}`).toBe('confirmed');
    }
  });

  it('an event id\'s .ots (the event half) never proves a subject: its file digest is the event id, not d', async () => {
    const r = await run(1, eventOts(1));
    expect(r.verdict).toBe('FAIL');
    expect(check(r, 'ots-digest')).toMatchObject({ status: 'FAIL', detail: `the .ots is for digest ${events[1]!.id}, not d ${subjects[1]!.digestHex}` });
  });

  it('another subject\'s path, with d put in as its file digest, reaches no attested message: FAIL at bitcoin, never confirmed', async () => {
    const other = subjectOts(2);
    // the file digest is the 32 bytes after the header, magic (31) + version (1) + sha256 tag (1)
    const forged = Buffer.from(other);
    const at = forged.indexOf(subjects[2]!.digest);
    expect(at).toBeGreaterThan(0);
    subjects[0]!.digest.copy(forged, at);
    const r = await run(0, forged);
    expect(r.verdict).toBe('FAIL');
    expect(r.witnesses.ots?.verified).not.toBe('confirmed');
    expect(check(r, 'bitcoin').status).toBe('FAIL');
  });

  it('a path one level short or long (an inner node or the join read as a leaf) leads elsewhere: the block\'s attestation grafted on does not check, FAIL', async () => {
    const d = subjects[0]!.digest;
    const cases = [['short', 2, subjectsTree.path(0).slice(0, -1)], ['long', 8, [...subjectsTree.path(0), Re]]] as const;
    for (const [name, size, path] of cases) {
      // built as a forger would: the ops of that path and the join, the calendar's commitment
      // ops, then the real upgrade (ending in the Bitcoin attestation at HEIGHT) grafted on
      const head = new Timestamp(d);
      let tip = head;
      for (const op of [...subjectOps(0, size, path), ...subjectsToJoined(Re), append(Buffer.from('aer1-test-calendar-nonce')), SHA256]) tip = tip.addOp(op);
      expect(tip.msg.equals(commitment.msg), name).toBe(false);
      tip.merge(parseTimestamp(mined.upgrades[0]!, tip.msg));
      const r = await run(0, serializeDetached(new DetachedTimestampFile('sha256', head)));
      expect(r.verdict, name).toBe('FAIL');
      expect(check(r, 'bitcoin'), name).toMatchObject({ status: 'FAIL', detail: expect.stringMatching(new RegExp(`^block ${HEIGHT} \\([0-9a-f]{64}\\) has merkle root [0-9a-f]{64}, the proof commits to `)) });
      expect(r.witnesses.ots?.verified, name).toBe('failed');
    }
  });

  it('the join is no RFC 6962 node: R is not the root over the n + k leaves, nor an inner node over R_s and R_e (no event id can be read as a subject)', () => {
    const mixed = new BatchTree([...subjects.map((s) => s.digest), ...ids]);
    expect(mixed.root).not.toEqual(R);
    expect(R).not.toEqual(nodeHash(Rs, Re));
    expect(R).toEqual(createHash('sha256').update(Uint8Array.of(0x02)).update(Rs).update(Re).digest());
    // what keeps a subject from being confused with anything else is d itself: SHA-256 of the
    // envelope's canonical JSON text, recomputed by the verifier; an event id or a tree node
    // would need an envelope hashing to it
    expect(leafHash(subjects[0]!.digest)).not.toEqual(leafHash(ids[0]!));
    expect(createHash('sha256').update(subjects[0]!.canonical).digest()).toEqual(subjects[0]!.digest);
  });
});
