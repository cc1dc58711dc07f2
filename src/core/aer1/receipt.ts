/**
 * AER-1 receipts (SPEC section 2): the three input shapes, and the output hash recomputed
 * from `canonical_bytes` with strict base64 and strict UTF-8.
 */
import { InputError } from '../errors/errors.js';
import { decodeBase64Strict, decodeUtf8Strict } from './base64.js';
import { checkLength, describeValue, isObject, memberPath, parseDigest, requireText, type JsonObject } from './fields.js';
import { sha256Hex } from './hash.js';
import { limitExceeded, resolveLimits, type ParseOptions } from './limits.js';
import { quoteBounded } from './json-limits.js';

/** Where the receipt object sat in the input: bare, `{"receipt": ...}`, or MCP `{"_receipt": ...}`. */
export type ReceiptShape = 'bare' | 'wrapped' | 'mcp';

export interface Receipt {
  readonly shape: ReceiptShape;
  /** Path of the receipt object in the input ('' for bare), prefix of every error field. */
  readonly path: string;
  /** The receipt `id` (becomes the envelope's `receipt_uuid`). */
  readonly id: string;
  /** `canonical_bytes` exactly as written (base64). */
  readonly canonicalBase64: string;
  /** `output_hash` as declared, normalised to bare lowercase hex. */
  readonly declaredOutputHash: string;
  /** `canonical_byte_length` when present. */
  readonly declaredByteLength: number | undefined;
  /** The receipt object itself (other members untouched). */
  readonly raw: JsonObject;
}

export interface ReceiptRecomputation {
  /** SHA-256 of the decoded bytes, bare lowercase hex. */
  readonly outputHash: string;
  readonly byteLength: number;
  readonly outputHashMatches: boolean;
  /** `null` when the receipt declares no `canonical_byte_length`. */
  readonly byteLengthMatches: boolean | null;
}

export type { ParseOptions };

/**
 * Finds the receipt object: `{"receipt": {...}}` and objects with a `_receipt` member (the
 * MCP tool-result shape) are unwrapped one level; anything else is taken as the bare receipt.
 */
export function unwrapReceipt(doc: unknown): { shape: ReceiptShape; path: string; receipt: unknown } {
  if (isObject(doc)) {
    if ('_receipt' in doc) return { shape: 'mcp', path: '_receipt', receipt: doc._receipt };
    if ('receipt' in doc && isObject(doc.receipt)) return { shape: 'wrapped', path: 'receipt', receipt: doc.receipt };
  }
  return { shape: 'bare', path: '', receipt: doc };
}

/**
 * Parses a receipt in any of its three shapes. Checks member types; decoding and hashing
 * happen in `recomputeReceipt`. A receipt without `canonical_bytes` is refused: without the
 * bytes nothing can be recomputed, and the envelope would bind an unchecked claim.
 */
export function parseReceipt(doc: unknown, options: ParseOptions = {}): Receipt {
  const { shape, path, receipt } = unwrapReceipt(doc);
  return parseReceiptAt(receipt, shape, path, options);
}

/** Parses an already unwrapped receipt object found at `path` in the input. */
export function parseReceiptAt(receipt: unknown, shape: ReceiptShape, path: string, options: ParseOptions = {}): Receipt {
  const limits = resolveLimits(options.limits);
  if (!isObject(receipt)) {
    throw new InputError('not_object', `expected a receipt object, got ${describeValue(receipt)}`, path || '$');
  }
  const id = requireText(receipt, 'id', path, limits);

  const bytesField = memberPath(path, 'canonical_bytes');
  if (!('canonical_bytes' in receipt)) throw new InputError('missing', 'required member is missing (the output hash cannot be recomputed without it)', bytesField);
  const canonicalBase64 = receipt.canonical_bytes;
  if (typeof canonicalBase64 !== 'string') {
    throw new InputError('not_string', `expected base64 text, got ${describeValue(canonicalBase64)}`, bytesField);
  }
  const maxBase64 = Math.ceil(limits.maxCanonicalBytes / 3) * 4;
  if (canonicalBase64.length > maxBase64) {
    throw limitExceeded('maxCanonicalBytes', Math.floor(canonicalBase64.length / 4) * 3, limits.maxCanonicalBytes, bytesField);
  }

  const hashField = memberPath(path, 'output_hash');
  if (!('output_hash' in receipt)) throw new InputError('missing', 'required member is missing', hashField);
  const declaredOutputHash = parseDigest(receipt.output_hash, hashField);

  if ('hash_algorithm' in receipt && receipt.hash_algorithm !== 'sha256') {
    throw new InputError('unsupported_hash', `only "sha256" is supported, got ${quoteBounded(receipt.hash_algorithm)}`, memberPath(path, 'hash_algorithm'));
  }
  const declaredByteLength = 'canonical_byte_length' in receipt
    ? checkLength(receipt.canonical_byte_length, memberPath(path, 'canonical_byte_length'))
    : undefined;

  return { shape, path, id, canonicalBase64, declaredOutputHash, declaredByteLength, raw: receipt };
}

/** Decodes `canonical_bytes` (strict base64, strict UTF-8) and hashes them; never trusts the declared values. */
export function recomputeReceipt(receipt: Receipt): ReceiptRecomputation {
  const field = memberPath(receipt.path, 'canonical_bytes');
  const bytes = decodeBase64Strict(receipt.canonicalBase64, field);
  decodeUtf8Strict(bytes, field);
  const outputHash = sha256Hex(bytes);
  return {
    outputHash,
    byteLength: bytes.length,
    outputHashMatches: outputHash === receipt.declaredOutputHash,
    byteLengthMatches: receipt.declaredByteLength === undefined ? null : receipt.declaredByteLength === bytes.length,
  };
}

/** `recomputeReceipt`, throwing an InputError when the declared hash or length disagrees with the bytes. */
export function checkReceipt(receipt: Receipt): ReceiptRecomputation {
  const r = recomputeReceipt(receipt);
  if (r.byteLengthMatches === false) {
    throw new InputError('byte_length_mismatch', `declares ${receipt.declaredByteLength} bytes, canonical_bytes decodes to ${r.byteLength}`, memberPath(receipt.path, 'canonical_byte_length'));
  }
  if (!r.outputHashMatches) {
    throw new InputError('output_hash_mismatch', `does not match the bytes: declared sha256:${receipt.declaredOutputHash}, recomputed sha256:${r.outputHash}`, memberPath(receipt.path, 'output_hash'));
  }
  return r;
}
