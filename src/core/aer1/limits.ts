/**
 * Size guards for untrusted documents. Every document the daemon or the verifier reads is
 * bounded by these before any hashing; exceeding one is an InputError that names the limit.
 */
import { InputError } from '../errors/errors.js';

export interface DocumentLimits {
  /** Steps in one workflow close. */
  readonly maxSteps: number;
  /** Entries in one job timeline. */
  readonly maxEntries: number;
  /** UTF-16 length of any string member that is read (ids, tools, names, goal). */
  readonly maxStringLength: number;
  /** UTF-16 length of a URL member (`evidence_url`, `verify_url`). */
  readonly maxUrlLength: number;
  /** Decoded size of one `canonical_bytes` payload. */
  readonly maxCanonicalBytes: number;
}

export const DEFAULT_LIMITS: Readonly<DocumentLimits> = Object.freeze({
  maxSteps: 100_000,
  maxEntries: 100_000,
  maxStringLength: 4096,
  maxUrlLength: 8192,
  maxCanonicalBytes: 16 * 1024 * 1024,
});

/** Options every document parser takes. */
export interface ParseOptions {
  readonly limits?: Partial<DocumentLimits>;
  /**
   * Parse a job timeline whose last entry does not close it (`Timeline.closed` false)
   * instead of refusing it. For the verifier, which reports such a timeline as truncated;
   * claims are never made from an open timeline.
   */
  readonly allowOpenTimeline?: boolean;
}

/** Defaults overridden by `partial`; each limit must be a positive safe integer. */
export function resolveLimits(partial?: Partial<DocumentLimits>): DocumentLimits {
  const limits = { ...DEFAULT_LIMITS, ...(partial ?? {}) };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new InputError('bad_limit', `limit must be a positive integer, got ${String(value)}`, name);
    }
  }
  return limits;
}

/** The error every guard throws: `steps: 100001 exceeds the limit maxSteps = 100000`. */
export function limitExceeded(limit: keyof DocumentLimits, actual: number, max: number, field: string): InputError {
  return new InputError('limit_exceeded', `${actual} exceeds the limit ${limit} = ${max}`, field);
}
