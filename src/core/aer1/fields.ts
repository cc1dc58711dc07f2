/**
 * Field readers for untrusted JSON: each one checks a single member and, on failure, throws
 * an InputError whose field is the member's path in the document (`steps[3].seq`).
 */
import { InputError } from '../errors/errors.js';
import { limitExceeded, type DocumentLimits } from './limits.js';

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `base` + `.key` (or just `key` at the top). */
export function memberPath(base: string, key: string): string {
  return base ? `${base}.${key}` : key;
}

/** `base` + `[i]` (or `$[i]` at the top, so the field is never just a number). */
export function indexPath(base: string, index: number): string {
  return `${base || '$'}[${index}]`;
}

export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return `the number ${value}`;
  return `a ${typeof value}`;
}

export function requireObject(value: unknown, field: string): JsonObject {
  if (!isObject(value)) throw new InputError('not_object', `expected an object, got ${describeValue(value)}`, field || '$');
  return value;
}

/** Matches an unpaired UTF-16 surrogate: such a string has no UTF-8 form to hash. */
const LONE_SURROGATE = /\p{Cs}/u;

/** A non-empty, well-formed string no longer than `maxLength`. */
export function checkText(value: unknown, field: string, maxLength: number, limit: keyof DocumentLimits = 'maxStringLength'): string {
  if (typeof value !== 'string') throw new InputError('not_string', `expected a string, got ${describeValue(value)}`, field);
  if (value.length === 0) throw new InputError('empty', 'must not be empty', field);
  if (value.length > maxLength) throw limitExceeded(limit, value.length, maxLength, field);
  if (LONE_SURROGATE.test(value)) throw new InputError('lone_surrogate', 'contains an unpaired UTF-16 surrogate', field);
  return value;
}

export function requireText(obj: JsonObject, key: string, base: string, limits: DocumentLimits): string {
  const field = memberPath(base, key);
  if (!Object.hasOwn(obj, key) || obj[key] === undefined) throw new InputError('missing', 'required member is missing', field);
  return checkText(obj[key], field, limits.maxStringLength);
}

export function optionalText(obj: JsonObject, key: string, base: string, limits: DocumentLimits): string | undefined {
  if (!Object.hasOwn(obj, key) || obj[key] === undefined) return undefined;
  return checkText(obj[key], memberPath(base, key), limits.maxStringLength);
}

const DIGEST = /^(?:sha256:)?([0-9a-fA-F]{64})$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** A SHA-256 digest as documents write it: optional `sha256:` prefix, either case → bare lowercase hex. */
export function parseDigest(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new InputError('not_string', `expected a SHA-256 hex digest, got ${describeValue(value)}`, field);
  const m = DIGEST.exec(value);
  if (!m) throw new InputError('bad_digest', 'expected 64 hex digits, optionally prefixed "sha256:"', field);
  return m[1]!.toLowerCase();
}

export function requireDigest(obj: JsonObject, key: string, base: string): string {
  const field = memberPath(base, key);
  if (!Object.hasOwn(obj, key) || obj[key] === undefined) throw new InputError('missing', 'required member is missing', field);
  return parseDigest(obj[key], field);
}

/** Exactly 64 lowercase hex digits, no prefix (envelope members, chain links). */
export function checkHex64(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new InputError('not_string', `expected 64 lowercase hex digits, got ${describeValue(value)}`, field);
  if (!HEX64.test(value)) throw new InputError('bad_hex', 'expected 64 lowercase hex digits without prefix', field);
  return value;
}

/**
 * A `seq` value: a JSON number with an integral value (`1.0` parses to 1 and counts as 1;
 * 1.5, strings and booleans do not).
 */
export function checkSeq(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InputError('seq_not_integer', `seq must be an integer, got ${describeValue(value)}`, field);
  }
  return value;
}

/** The seq rule shared by workflow steps and timeline entries: 1..n in order, no gap. */
export function checkSeqPosition(seq: number, index: number, field: string): void {
  const expected = index + 1;
  if (seq === expected) return;
  const what = seq > expected ? 'seq gap' : 'seq out of order';
  throw new InputError(seq > expected ? 'seq_gap' : 'seq_order', `${what}: expected ${expected}, found ${seq}`, field);
}

/** A positive safe integer (counts). */
export function checkCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InputError('bad_count', `expected a positive integer, got ${describeValue(value)}`, field);
  }
  return value;
}

/** A non-negative safe integer (byte lengths). */
export function checkLength(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InputError('bad_length', `expected a non-negative integer, got ${describeValue(value)}`, field);
  }
  return value;
}
