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
 * The members to keep for `envelope` (as built: its canonical text is canonicalJson of it) of
 * the subject `key` accepted at `createdMs`, or null when it cannot be kept that way: a value
 * over 64 bytes, a member this release does not know, or a value that would not come back as
 * it is. Each value is checked to come back exactly, so the rebuilt text is the envelope's
 * canonical text without building it here.
 */
export function packEnvelope(value: object, key: string, createdMs: number): CompactMembers | null {
  const envelope = value as Readonly<Record<string, unknown>>;
  const kind = envelope.subject;
  if (!isKind(kind) || envelope.type !== ENVELOPE_TYPE || envelope[KEPT[kind].key] !== key) return null;
  const at = envelope.anchored_at;
  if (typeof at !== 'string' || !ANCHORED_AT.test(at)) return null;
  const atMs = Date.parse(at);
  if (!Number.isFinite(atMs) || !Number.isFinite(createdMs)) return null;
  const kept = KEPT[kind];
  const out: CompactMembers = new Map();
  const offset = Math.floor(createdMs / 1000) - atMs / 1000;
  if (!Number.isSafeInteger(offset) || rebuiltAt(createdMs, offset) !== at) return null;
  if (offset !== 0) out.set('at', Buffer.from(String(offset)));
  for (const [name, value] of Object.entries(envelope)) {
    if (value === undefined || name === 'subject' || name === 'type' || name === 'anchored_at' || name === kept.key) continue;
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
      // a lone surrogate does not survive UTF-8
      if (packed.toString('utf8') !== value) return null;
    } else {
      return null;
    }
    if (packed.length > COMPACT_VALUE_MAX) return null;
    out.set(name, packed);
  }
  return out;
}

/**
 * The object whose canonical JSON `canonical` is, for packEnvelope when only the text is at
 * hand (tools, tests; the intake passes the envelope it built); null when the text is not one.
 */
export function envelopeOfCanonical(canonical: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(canonical);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  try {
    return canonicalJson(value) === canonical ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The `anchored_at` unpackEnvelope gives for `offset`, or null when it gives none. */
function rebuiltAt(createdMs: number, offset: number): string | null {
  try {
    return anchoredAtOf(createdMs, offset);
  } catch {
    return null;
  }
}

/** `anchored_at` kept as `offset` whole seconds before the acceptance at `createdMs`. */
function anchoredAtOf(createdMs: number, offset: number): string {
  return formatAnchoredAt(new Date((Math.floor(createdMs / 1000) - offset) * 1000));
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
  env.anchored_at = anchoredAtOf(createdMs, offset);
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
