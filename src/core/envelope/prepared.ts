/**
 * A subject prepared once, where it is read (docs/architecture.md, "One subject, start to
 * finish"): everything later stages need of its claims — key, kind, envelope, the envelope's
 * canonical text, its digest and the root's fingerprint — so the producer, the shard router,
 * the intake and the store take this value and never read or canonicalise the subject again.
 */
import { canonicalJson, canonicalString } from '../aer1/canonical-json.js';
import { sha256Hex } from '../aer1/hash.js';
import { ENVELOPE_TYPE, type SubjectClaims, type SubjectKind } from './claims.js';
import { stampEnvelope, subjectKey, type Envelope } from './envelope.js';

export interface PreparedSubject {
  /** `receipt_uuid`, or `job_id` for a chain head. */
  readonly key: string;
  readonly kind: SubjectKind;
  /** The claims stamped with `type` and `anchored_at`. */
  readonly envelope: Envelope;
  /** The envelope's canonical JSON (SPEC section 2): the bytes witnesses see. */
  readonly envelopeCanonical: string;
  /** SHA-256 of envelopeCanonical, lowercase hex. */
  readonly digest: string;
  /** SHA-256 of the claims' canonical JSON (the envelope without `type` and `anchored_at`): same key, other fingerprint = another root. */
  readonly fingerprint: string;
}

/**
 * Prepares claims parseClaims (or claimsFromInput) has just returned, stamped `anchoredAt`.
 * Canonical JSON is built once: the claims' text (the fingerprint's) is cut from the envelope's.
 */
export function prepareSubject(claims: SubjectClaims, anchoredAt: Date | string): PreparedSubject {
  const envelope = stampEnvelope(claims, anchoredAt);
  const envelopeCanonical = canonicalJson(envelope);
  return {
    key: subjectKey(claims),
    kind: claims.subject,
    envelope,
    envelopeCanonical,
    digest: sha256Hex(envelopeCanonical),
    fingerprint: sha256Hex(claimsCanonicalOf(envelopeCanonical)),
  };
}

/** The fingerprint of a root given as claims or as an envelope (its claims: everything but `type` and `anchored_at`). */
export function rootFingerprint(value: SubjectClaims | Envelope): string {
  const { type: _type, anchored_at: _at, ...claims } = value as SubjectClaims & Partial<Pick<Envelope, 'type' | 'anchored_at'>>;
  return sha256Hex(canonicalJson(claims));
}

/** `"anchored_at":"YYYY-MM-DDTHH:MM:SSZ",`: every envelope's first member (no claim sorts before it), always this long. */
const AT_MEMBER_LENGTH = '"anchored_at":"2026-01-01T00:00:00Z",'.length;
const TYPE_MEMBER = `,"type":${canonicalString(ENVELOPE_TYPE)}`;

/**
 * The claims' canonical JSON cut from their envelope's: the same text less its `anchored_at`
 * member (first) and its `type` member (after `subject`, so never first). Canonical JSON
 * escapes every `"` inside a string, so neither member's text can occur inside a value.
 */
export function claimsCanonicalOf(envelopeCanonical: string): string {
  const at = envelopeCanonical.startsWith('{"anchored_at":"') && envelopeCanonical[AT_MEMBER_LENGTH] === ',' ? AT_MEMBER_LENGTH : -1;
  const type = envelopeCanonical.indexOf(TYPE_MEMBER, AT_MEMBER_LENGTH);
  if (at < 0 || type < 0) throw new Error('not the canonical text of an envelope');
  return `{${envelopeCanonical.slice(at + 1, type)}${envelopeCanonical.slice(type + TYPE_MEMBER.length)}`;
}
