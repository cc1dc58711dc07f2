/**
 * Builds `aer1-anchor-proof-v1` objects in the test itself, from the pure modules, the
 * way the daemon's exporter does: envelope → d; a signed Nostr event (envelope or batch
 * mode, with the batch's RFC 9162 path); an `.ots` per subject over the batch tree whose
 * root timestamp carries a pending attestation or, once "mined", a Bitcoin attestation
 * in a regtest block with real proof of work.
 */
import { claimsFromDocument } from '../../src/core/envelope/from-document.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { BatchTree } from '../../src/core/batch/batch-tree.js';
import { buildEnvelope, envelopeCanonical, envelopeDigest, type Envelope } from '../../src/core/envelope/envelope.js';
import { PROOF_VERSION } from '../../src/core/proof/format.js';
import { pendingAttestation } from '../../src/core/ots/attestations.js';
import { proofForSubject } from '../../src/core/ots/batch-proof.js';
import { parseTimestamp, serializeDetached } from '../../src/core/ots/codec.js';
import { mineHeader, REGTEST_BITS } from '../../src/dev/calendar/block-header.js';
import { mineCommitments } from '../../src/dev/calendar/confirmation.js';
import { SHA256, append } from '../../src/core/ots/ops.js';
import { Timestamp } from '../../src/core/ots/timestamp.js';
import { batchEvent, envelopeEvent, type SignedEvent } from '../../src/core/nostr/events.js';
import { SigningKey } from '../../src/core/nostr/keys.js';

export const ANCHORED_AT = '2026-01-31T12:00:00Z';
export const CALENDAR = 'https://calendar.test.example';
export const RELAYS = ['wss://relay-a.test.example', 'wss://relay-b.test.example'];

export const KEY = SigningKey.parse('1'.repeat(64));
export const OTHER_KEY = SigningKey.parse('2'.repeat(64));

export type Json = Record<string, unknown>;

export interface Subject {
  envelope: Envelope;
  canonical: string;
  digest: Buffer;
  digestHex: string;
}

export function subjectOf(doc: unknown, anchoredAt = ANCHORED_AT): Subject {
  const envelope = buildEnvelope(claimsFromDocument(doc), anchoredAt);
  const digest = envelopeDigest(envelope);
  return { envelope, canonical: envelopeCanonical(envelope), digest, digestHex: digest.toString('hex') };
}

/** A block at `height` whose header commits (through a synthetic transaction) to `commitment`. */
export interface MinedBlock {
  height: number;
  header: Buffer;
  hashDisplay: string;
  time: number;
}

export interface OtsBuild {
  /** Per subject: base64 of its detached .ots. */
  proofs: string[];
  block: MinedBlock | null;
}

/**
 * One OTS batch over `digests`: the root timestamp gets a calendar-like nonce and a
 * pending attestation; with `mineAt`, that commitment is mined into a regtest block and
 * the upgrade (ending in a Bitcoin attestation) merged in, as the daemon does.
 */
export function otsBatch(digests: readonly Buffer[], mineAt?: number): OtsBuild {
  const tree = new BatchTree(digests);
  const root = new Timestamp(tree.root);
  const commitment = root.addOp(append(Buffer.from('aer1-test-calendar-nonce'))).addOp(SHA256);
  commitment.addAttestation(pendingAttestation(CALENDAR));
  let block: MinedBlock | null = null;
  if (mineAt !== undefined) {
    const time = 1_769_860_800;
    const mined = mineCommitments({ commitments: [commitment.msg], height: mineAt, prevHash: Buffer.alloc(32, 7), time });
    commitment.merge(parseTimestamp(mined.upgrades[0]!, commitment.msg));
    block = { height: mineAt, header: mined.header, hashDisplay: Buffer.from(mined.hash).reverse().toString('hex'), time };
  }
  const proofs = digests.map((d, i) => serializeDetached(proofForSubject(d, i, tree.size, tree.path(i), root)).toString('base64'));
  return { proofs, block };
}

/** A regtest header at `height` with real proof of work but an unrelated merkle root. */
export function unrelatedHeader(height: number): Buffer {
  return mineHeader({ version: 0x20000000, prevHash: Buffer.alloc(32, 7), merkleRoot: Buffer.alloc(32, 0xab), time: 1_769_860_800 + height, bits: REGTEST_BITS }).header;
}

export function headersJson(blocks: ReadonlyArray<{ height: number; header: Buffer }>): string {
  const out: Record<string, string> = {};
  for (const b of blocks) out[String(b.height)] = b.header.toString('hex');
  return JSON.stringify(out);
}

export interface ProofOptions {
  key?: SigningKey;
  nostrStatus?: 'pending' | 'partial' | 'confirmed' | 'failed';
  /** Leave out the Nostr event (nothing signed yet). */
  noEvent?: boolean;
  /** Height to mine the OTS batch at; absent: pending at the calendar only. */
  mineAt?: number;
  /** Leave out the OTS witness entirely. */
  noOts?: boolean;
  /** The envelope's anchored_at (default ANCHORED_AT). */
  anchoredAt?: string;
}

function relays(status: string): Json[] {
  return RELAYS.map((url) => ({ url, status: status === 'confirmed' ? 'accepted' : 'pending', message: '', at: '' }));
}

function otsSection(proof: string, block: MinedBlock | null): Json {
  const out: Json = {
    status: block ? 'confirmed' : 'pending',
    proof,
    calendars: [{ url: CALENDAR, status: block ? 'confirmed' : 'pending' }],
  };
  if (block) out.bitcoin = { height: block.height, block_hash: block.hashDisplay, time: block.time };
  return out;
}

function overall(nostr: string | null, ots: string | null): string {
  const states = [nostr, ots].filter((s): s is string => s !== null);
  if (states.length && states.every((s) => s === 'confirmed')) return 'confirmed';
  if (states.some((s) => s === 'confirmed' || s === 'partial')) return 'partial';
  return 'pending';
}

/** Serializes like the exporter: a plain JSON object (round trip through JSON text). */
function plain<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Envelope mode: one event per subject, content = canonical envelope. */
export function envelopeModeProof(doc: unknown, opts: ProofOptions = {}): { proof: Json; subject: Subject; event: SignedEvent | null; block: MinedBlock | null } {
  const subject = subjectOf(doc, opts.anchoredAt);
  const nostrStatus = opts.nostrStatus ?? 'confirmed';
  const event = opts.noEvent ? null : envelopeEvent({ canonical: subject.canonical, digestHex: subject.digestHex }, opts.key ?? KEY);
  const ots = opts.noOts ? null : otsBatch([subject.digest], opts.mineAt);
  const proof: Json = {
    version: PROOF_VERSION,
    envelope: subject.envelope,
    digest: subject.digestHex,
    status: overall(nostrStatus, ots ? (ots.block ? 'confirmed' : 'pending') : null),
    nostr: { status: nostrStatus, event, relays: relays(nostrStatus) },
  };
  if (ots) proof.ots = otsSection(ots.proofs[0]!, ots.block);
  return { proof: plain(proof), subject, event, block: ots?.block ?? null };
}

/** Batch mode: one event for all subjects, content = canonical batch JSON; one OTS batch. */
export function batchModeProofs(docs: readonly unknown[], opts: ProofOptions = {}): { proofs: Json[]; subjects: Subject[]; event: SignedEvent; block: MinedBlock | null } {
  const subjects = docs.map((d) => subjectOf(d));
  const tree = new BatchTree(subjects.map((s) => s.digest));
  const nostrStatus = opts.nostrStatus ?? 'confirmed';
  const event = batchEvent({ anchoredAt: ANCHORED_AT, batchRootHex: tree.root.toString('hex'), leafCount: tree.size }, opts.key ?? KEY);
  const ots = opts.noOts ? null : otsBatch(subjects.map((s) => s.digest), opts.mineAt);
  const proofs = subjects.map((s, i) => {
    const proof: Json = {
      version: PROOF_VERSION,
      envelope: s.envelope,
      digest: s.digestHex,
      status: overall(nostrStatus, ots ? (ots.block ? 'confirmed' : 'pending') : null),
      nostr: {
        status: nostrStatus,
        event,
        relays: relays(nostrStatus),
        batch: { index: i, size: tree.size, path: tree.path(i).map((h) => h.toString('hex')) },
      },
    };
    if (ots) proof.ots = otsSection(ots.proofs[i]!, ots.block);
    return plain(proof);
  });
  return { proofs, subjects, event, block: ots?.block ?? null };
}

/** A document with its proof attached as `anchor_proof`. */
export function attach(doc: unknown, proof: Json): Json {
  return { ...(doc as Json), anchor_proof: proof };
}

/** Distinct receipts: the minimal receipt with its id and bytes varied. */
export function receiptNumber(n: number): Json {
  const bytes = Buffer.from(JSON.stringify({ n }));
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    canonical_bytes: bytes.toString('base64'),
    canonical_byte_length: bytes.length,
    hash_algorithm: 'sha256',
    output_hash: `sha256:${sha256Hex(bytes)}`,
  };
}
