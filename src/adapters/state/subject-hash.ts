/**
 * The subject hash (`{prefix}:s:<key>`) and what it keeps: its fields read into a
 * SubjectRecord, its 32-byte digests and ids, and the envelope's claims kept as fields (rebuilt
 * and checked against the digest when read). Pure: no Redis here; SubjectStore reads and writes.
 */
import { WITNESSES, type WitnessName } from './keys.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { packEnvelope, unpackEnvelope, type CompactMembers } from '../../core/envelope/compact.js';
import { sha256Hex } from '../../core/aer1/hash.js';

export type SubjectStatus = WitnessStatus | 'rejected';
export const SUBJECT_STATUSES: readonly SubjectStatus[] = ['pending', 'partial', 'confirmed', 'failed', 'rejected'];


export interface HistoryEntry {
  at: string;
  event: string;
  witness?: string;
  from?: string;
  to?: string;
  status?: string;
  detail?: string;
  reason?: string;
  digest?: string;
}

export interface SubjectRecord {
  key: string;
  kind: string | null;
  status: SubjectStatus;
  envelopeCanonical: string | null;
  digest: string | null;
  createdMs: number;
  updatedMs: number;
  reason: string | null;
  witnesses: Partial<Record<WitnessName, { status: WitnessStatus; confirmedMs: number | null }>>;
  nostrEventId: string | null;
  batches: Partial<Record<WitnessName, { id: string; index: number }>>;
}

/**
 * The subject-hash fields that keep an envelope's claims (core/envelope/compact.ts), by the
 * member they keep: each value at most 64 bytes, so the hash stays a listpack.
 */
export const CLAIM_FIELDS: Readonly<Record<string, string>> = {
  at: '$at',
  output_sha256: '$o',
  evidence_sha256: '$es',
  evidence_byte_length: '$el',
  evidence_url: '$eu',
  workflow_id: '$wf',
  merkle_root: '$mr',
  merkle_version: '$mv',
  step_count: '$sc',
  final_entry_digest: '$fd',
  entry_count: '$ec',
};
export const CLAIM_MEMBERS: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(CLAIM_FIELDS).map(([m, f]) => [f, m]));

/** A signed event's `content` (a subject's own event carries its envelope), or null when the JSON does not hold one. */
export function eventContent(json: string): string | null {
  try {
    const ev = JSON.parse(json) as { content?: unknown };
    return typeof ev.content === 'string' ? ev.content : null;
  } catch {
    return null;
  }
}

/**
 * The envelope of the subject `key` accepted at `createdMs` as accept.lua's claims argument
 * (pairs of field and value, each one length byte then its bytes), or null when its claims do
 * not fit the hash (it is then stored as text, under e:<key>).
 */
export function claimFields(envelope: object | null, key: string, createdMs: number): Buffer | null {
  if (envelope === null) return null;
  const members = packEnvelope(envelope, key, createdMs);
  if (!members) return null;
  const parts: Buffer[] = [];
  for (const [member, value] of members) {
    const field = CLAIM_FIELDS[member];
    if (field === undefined) return null;
    parts.push(Buffer.from([field.length]), Buffer.from(field), Buffer.from([value.length]), value);
  }
  return parts.length > 0 ? Buffer.concat(parts) : null;
}

/**
 * The envelope rebuilt from the claims its hash keeps, checked against its digest; null when
 * the hash keeps none (its envelope is under e:<key> or in its own event). A rebuilt text
 * whose SHA-256 is not the digest is an error naming the subject, never another envelope.
 */
export function envelopeOfClaims(key: string, hash: Record<string, string>, raw: Record<string, Buffer>): string | null {
  const members: CompactMembers = new Map();
  for (const [f, v] of Object.entries(raw)) {
    const m = CLAIM_MEMBERS[f];
    if (m !== undefined) members.set(m, v);
  }
  if (members.size === 0) return null;
  let text: string;
  try {
    text = unpackEnvelope(hash.kind ?? '', key, members, Number(hash.created ?? 0));
  } catch (err) {
    throw new Error(`subject ${key}: its envelope cannot be rebuilt from the claims stored with it (${(err as Error).message})`);
  }
  if (sha256Hex(text) !== hash.digest) {
    throw new Error(`subject ${key}: the envelope rebuilt from the claims stored with it has digest ${sha256Hex(text)}, not the stored ${hash.digest ?? '(none)'}`);
  }
  return text;
}

/** A digest, fingerprint or event id (64 lowercase hex characters, as intake makes them) as the subject hash keeps it: its 32 bytes. */
export function packHash(hex: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`not a 32-byte hex digest: ${JSON.stringify(hex.slice(0, 70))}`);
  return Buffer.from(hex, 'hex');
}

/** A stored digest, fingerprint or event id (32 bytes) as hex. */
export function hashValue(v: Buffer): string {
  return v.toString('hex');
}

/** The subject hash fields kept as 32 bytes. */
export const BINARY_FIELDS = new Set(['digest', 'fp', 'nostr:event']);

/** A subject hash read as Buffers, as text: its digest, fingerprint and event id as hex (hashValue). */
export function subjectFields(raw: Record<string, Buffer>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(raw)) out[f] = BINARY_FIELDS.has(f) ? hashValue(v) : v.toString();
  return out;
}

/** A subject's witnesses: those it has a `w:<witness>` status for, in WITNESSES order. */
export function witnessesOf(h: Record<string, string>): WitnessName[] {
  return WITNESSES.filter((w) => h[`w:${w}`] !== undefined);
}

/** A time field kept as ms since `created`, as epoch ms; null when absent. */
export function sinceCreated(created: number, v: string | undefined): number | null {
  return v === undefined || v === '' ? null : created + Number(v);
}

export function toRecord(key: string, h: Record<string, string>, envelope: string | null): SubjectRecord {
  const witnesses: SubjectRecord['witnesses'] = {};
  const batches: SubjectRecord['batches'] = {};
  const created = Number(h.created ?? 0);
  for (const w of witnessesOf(h)) {
    const st = h[`w:${w}`];
    if (st) witnesses[w] = { status: st as WitnessStatus, confirmedMs: sinceCreated(created, h[`c:${w}`]) };
    const b = h[`${w}:batch`];
    if (b) batches[w] = { id: b, index: Number(h[`${w}:i`] ?? 0) };
  }
  return {
    key,
    kind: h.kind ?? null,
    status: h.status as SubjectStatus,
    envelopeCanonical: envelope,
    digest: h.digest ?? null,
    createdMs: created,
    // `u` (ms since `created`) is written once something changed; absent, it reads as `created`
    updatedMs: sinceCreated(created, h.u) ?? created,
    reason: h.reason ?? null,
    witnesses,
    nostrEventId: h['nostr:event'] ?? null,
    batches,
  };
}
