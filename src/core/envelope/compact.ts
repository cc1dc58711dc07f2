/**
 * An envelope kept as its claims instead of its text: the members a store keeps beside the
 * subject (each value at most 64 bytes, so they fit a small hash), and the canonical text
 * rebuilt from them. Pure: the store names the fields and checks the rebuilt text against the
 * digest it kept.
 *
 * Left out, because the store has them already: `subject` (the subject's kind), the key member
 * (`receipt_uuid`, or `job_id` for a chain head: the subject's key) and `type` (a constant).
 * `anchored_at` is kept as `at`: the whole seconds from it to the acceptance time the store
 * keeps (`created`, ms), absent when 0. A 64-hex member is kept as its 32 bytes, a count as its
 * decimal text, any other text as it is.
 */
import { canonicalJson } from '../aer1/canonical-json.js';
import { ENVELOPE_TYPE, type SubjectKind } from './claims.js';
import { formatAnchoredAt } from './envelope.js';

/** Most bytes of one kept value. */
export const COMPACT_VALUE_MAX = 64;

/** The members kept per kind (the key member and `subject` are not among them). */
const KEPT: Record<SubjectKind, { key: string; hex: readonly string[]; count: readonly string[]; text: readonly string[] }> = {
  receipt: { key: 'receipt_uuid', hex: ['output_sha256', 'evidence_sha256'], count: ['evidence_byte_length'], text: ['evidence_url'] },
  'workflow-close': { key: 'receipt_uuid', hex: ['output_sha256', 'merkle_root'], count: ['step_count'], text: ['workflow_id', 'merkle_version'] },
  'chain-head': { key: 'job_id', hex: ['final_entry_digest'], count: ['entry_count'], text: [] },
};

export type CompactMembers = Map<string, Buffer>;

const HEX64 = /^[0-9a-f]{64}$/;
const ANCHORED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

function isKind(v: unknown): v is SubjectKind {
  return v === 'receipt' || v === 'workflow-close' || v === 'chain-head';
}

/**
 * The members to keep for `canonical` (an envelope's canonical text) of the subject `key`
 * accepted at `createdMs`, or null when it cannot be kept that way: a value over 64 bytes, a
 * member this release does not know, or any text that would not rebuild byte for byte.
 */
export function packEnvelope(canonical: string, key: string, createdMs: number): CompactMembers | null {
  let env: Record<string, unknown>;
  try {
    env = JSON.parse(canonical) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof env !== 'object' || env === null || Array.isArray(env)) return null;
  const kind = env.subject;
  if (!isKind(kind) || env.type !== ENVELOPE_TYPE || env[KEPT[kind].key] !== key) return null;
  const at = env.anchored_at;
  if (typeof at !== 'string' || !ANCHORED_AT.test(at)) return null;
  const atMs = Date.parse(at);
  if (!Number.isFinite(atMs) || !Number.isFinite(createdMs)) return null;
  const kept = KEPT[kind];
  const out: CompactMembers = new Map();
  const offset = Math.floor(createdMs / 1000) - atMs / 1000;
  if (offset !== 0) out.set('at', Buffer.from(String(offset)));
  for (const [name, value] of Object.entries(env)) {
    if (name === 'subject' || name === 'type' || name === 'anchored_at' || name === kept.key) continue;
    let packed: Buffer;
    if (kept.hex.includes(name)) {
      if (typeof value !== 'string' || !HEX64.test(value)) return null;
      packed = Buffer.from(value, 'hex');
    } else if (kept.count.includes(name)) {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return null;
      packed = Buffer.from(String(value));
    } else if (kept.text.includes(name)) {
      if (typeof value !== 'string') return null;
      packed = Buffer.from(value, 'utf8');
    } else {
      return null;
    }
    if (packed.length > COMPACT_VALUE_MAX) return null;
    out.set(name, packed);
  }
  try {
    if (unpackEnvelope(kind, key, out, createdMs) !== canonical) return null;
  } catch {
    return null;
  }
  return out;
}

/**
 * The canonical text of the envelope kept as `members` (packEnvelope) for the subject `key`
 * of `kind` accepted at `createdMs`. The caller checks it against the digest it kept.
 */
export function unpackEnvelope(kind: string, key: string, members: CompactMembers, createdMs: number): string {
  if (!isKind(kind)) throw new Error(`unknown subject kind ${JSON.stringify(kind.slice(0, 40))}`);
  const kept = KEPT[kind];
  const env: Record<string, unknown> = { subject: kind, type: ENVELOPE_TYPE, [kept.key]: key };
  const offset = members.has('at') ? Number(members.get('at')!.toString()) : 0;
  if (!Number.isSafeInteger(offset)) throw new Error('a kept anchored_at offset that is not an integer');
  env.anchored_at = formatAnchoredAt(new Date((Math.floor(createdMs / 1000) - offset) * 1000));
  for (const [name, value] of members) {
    if (name === 'at') continue;
    if (kept.hex.includes(name)) {
      if (value.length !== 32) throw new Error(`kept ${name} is ${value.length} bytes, not 32`);
      env[name] = value.toString('hex');
    } else if (kept.count.includes(name)) {
      const n = Number(value.toString());
      if (!Number.isSafeInteger(n)) throw new Error(`kept ${name} is not a count`);
      env[name] = n;
    } else if (kept.text.includes(name)) {
      env[name] = value.toString('utf8');
    } else {
      throw new Error(`kept member ${JSON.stringify(name.slice(0, 40))} is not one of subject ${kind}`);
    }
  }
  return canonicalJson(env);
}
