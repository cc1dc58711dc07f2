/**
 * The `zambo-receipt-anchor/1` envelope (SPEC section 3): the claims of one subject plus
 * `type` and `anchored_at`, serialized canonically; its SHA-256 is what witnesses commit to.
 */
import { InputError } from '../errors/errors.js';
import { canonicalBytes, canonicalJson } from '../aer1/canonical-json.js';
import { describeValue, isObject } from '../aer1/fields.js';
import { sha256 } from '../aer1/hash.js';
import type { DocumentLimits } from '../aer1/limits.js';
import { quoteBounded } from '../aer1/json-limits.js';
import {
  ENVELOPE_TYPE, parseClaims, type ChainHeadClaims, type ReceiptClaims, type SubjectClaims, type WorkflowCloseClaims,
} from './claims.js';

export * from './claims.js';

interface Stamp {
  readonly type: typeof ENVELOPE_TYPE;
  /** RFC 3339 UTC, whole seconds, `Z`. */
  readonly anchored_at: string;
}

export type ReceiptEnvelope = ReceiptClaims & Stamp;
export type WorkflowCloseEnvelope = WorkflowCloseClaims & Stamp;
export type ChainHeadEnvelope = ChainHeadClaims & Stamp;
/** Members exactly as SPEC section 3; absent values are omitted, never null. */
export type Envelope = ReceiptEnvelope | WorkflowCloseEnvelope | ChainHeadEnvelope;

const ANCHORED_AT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;

/** `anchored_at` for a moment: RFC 3339 UTC, truncated to whole seconds, `Z`. */
export function formatAnchoredAt(date: Date): string {
  const ms = date.getTime();
  if (!Number.isFinite(ms)) throw new InputError('bad_time', 'not a valid date', 'anchored_at');
  const text = new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  if (!ANCHORED_AT.test(text)) throw new InputError('bad_time', `year out of range for RFC 3339: ${text}`, 'anchored_at');
  return text;
}

/** Checks an `anchored_at` string: `YYYY-MM-DDTHH:MM:SSZ`, a real calendar time (no leap second, no fraction). */
export function checkAnchoredAt(value: unknown, field = 'anchored_at'): string {
  if (typeof value !== 'string') throw new InputError('not_string', `expected an RFC 3339 UTC time, got ${describeValue(value)}`, field);
  const m = ANCHORED_AT.exec(value);
  if (!m) throw new InputError('bad_time', `expected RFC 3339 UTC with whole seconds and Z (2026-01-31T12:00:00Z), got ${quoteBounded(value)}`, field);
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // not Date.UTC: it maps years 0-99 to 1900-1999
  date.setUTCHours(h, mi, s, 0);
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d
    || date.getUTCHours() !== h || date.getUTCMinutes() !== mi || date.getUTCSeconds() !== s) {
    throw new InputError('bad_time', `not a calendar time: ${quoteBounded(value)}`, field);
  }
  return value;
}

function sortedObject<T extends object>(obj: T): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj).sort()) out[key] = (obj as Record<string, unknown>)[key];
  return out as T;
}

/**
 * Builds the envelope for `claims` at `anchoredAt` (a Date, truncated to seconds, or a string
 * that must already be RFC 3339 UTC seconds with `Z`). Claims are re-checked strictly.
 * Members are stored in canonical order, so `JSON.stringify` shows them as hashed.
 */
export function buildEnvelope(claims: SubjectClaims, anchoredAt: Date | string, limits?: Partial<DocumentLimits>): Envelope {
  return stampEnvelope(parseClaims(claims, limits ? { limits } : {}), anchoredAt);
}

/**
 * buildEnvelope for claims parseClaims has just returned (the edge that read them): not
 * checked again. Anything else goes through buildEnvelope.
 */
export function stampEnvelope(checked: SubjectClaims, anchoredAt: Date | string): Envelope {
  const at = typeof anchoredAt === 'string' ? checkAnchoredAt(anchoredAt) : formatAnchoredAt(anchoredAt);
  return sortedObject({ ...checked, type: ENVELOPE_TYPE, anchored_at: at }) as Envelope;
}

/**
 * Strict validator for an envelope from an untrusted proof: exactly the members of its
 * subject, each of its type, `type` equal to `zambo-receipt-anchor/1`.
 */
export function parseEnvelope(value: unknown, limits?: Partial<DocumentLimits>): Envelope {
  if (!isObject(value)) throw new InputError('not_object', `expected an envelope object, got ${describeValue(value)}`, 'envelope');
  if (!Object.hasOwn(value, 'type')) throw new InputError('missing', 'required member is missing', 'type');
  if (value.type !== ENVELOPE_TYPE) throw new InputError('bad_type', `expected "${ENVELOPE_TYPE}", got ${quoteBounded(value.type)}`, 'type');
  if (!Object.hasOwn(value, 'anchored_at')) throw new InputError('missing', 'required member is missing', 'anchored_at');
  const anchoredAt = checkAnchoredAt(value.anchored_at);
  const claims = parseClaims(value, { extraMembers: ['type', 'anchored_at'], ...(limits ? { limits } : {}) });
  return buildEnvelope(claims, anchoredAt, limits);
}

/** The envelope's canonical JSON text (SPEC section 2), the bytes witnesses see. */
export function envelopeCanonical(env: Envelope): string {
  return canonicalJson(env);
}

/** d = SHA-256(canonical envelope bytes). */
export function envelopeDigest(env: Envelope): Buffer {
  return sha256(canonicalBytes(env));
}

/** The claims of an envelope (everything but `type` and `anchored_at`). */
export function claimsOf(value: SubjectClaims | Envelope): SubjectClaims {
  const { type: _type, anchored_at: _at, ...rest } = value as SubjectClaims & Partial<Stamp>;
  return rest as SubjectClaims;
}

/** The subject key for idempotency and look-ups: `receipt_uuid`, or `job_id` for chain heads. */
export function subjectKey(value: SubjectClaims | Envelope): string {
  return value.subject === 'chain-head' ? value.job_id : value.receipt_uuid;
}

/** True when both name the same root: every member equal except `anchored_at` (and `type`). */
export function sameRoot(a: SubjectClaims | Envelope, b: SubjectClaims | Envelope): boolean {
  return canonicalJson(claimsOf(a)) === canonicalJson(claimsOf(b));
}
