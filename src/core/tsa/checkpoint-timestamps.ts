/**
 * The TSA tokens of a proof, `anchor_proof.log.timestamps = [{ url, token }]`, checked
 * against the checkpoint they time-stamp: each token's imprint is the SHA-256 of the
 * checkpoint's note body (the signed text, without its signature lines). One result per
 * token; the verifier's stage reports them.
 */
import { decodeBase64Strict } from '../aer1/base64.js';
import { TsaFormatError } from './errors.js';
import { MAX_TOKEN_BYTES, checkTimeStampToken, type TimestampCheck } from './token-check.js';
import type { TsaTrustAnchors } from './trust-anchors.js';

/** More tokens than this under one checkpoint is refused (a proof names a few TSAs). */
export const MAX_TIMESTAMPS = 32;
const MAX_URL_LENGTH = 2048;

export interface CheckpointTimestamp {
  readonly url: string;
  /** Base64 of the DER TimeStampToken. */
  readonly token: string;
}

export interface CheckpointTimestampResult extends TimestampCheck {
  readonly url: string;
}

/**
 * Reads the proof's `timestamps` member: an array of `{ url, token }` objects with nothing
 * else. A malformed list is a TsaFormatError naming the field (the proof is broken); a
 * token that does not check is a FAIL result, not an error.
 */
export function parseCheckpointTimestamps(value: unknown, field = 'anchor_proof.log.timestamps'): CheckpointTimestamp[] {
  if (!Array.isArray(value)) throw new TsaFormatError('tsa_bad_proof', 'not an array', field);
  if (value.length > MAX_TIMESTAMPS) throw new TsaFormatError('tsa_too_large', `${value.length} tokens, over ${MAX_TIMESTAMPS}`, field);
  return value.map((item: unknown, i) => {
    const where = `${field}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new TsaFormatError('tsa_bad_proof', 'not an object', where);
    const extra = Object.keys(item).filter((k) => k !== 'url' && k !== 'token');
    if (extra.length > 0) throw new TsaFormatError('tsa_bad_proof', `unknown member "${extra[0]}"`, where);
    const { url, token } = item as Record<string, unknown>;
    if (typeof url !== 'string' || url.length === 0 || url.length > MAX_URL_LENGTH) {
      throw new TsaFormatError('tsa_bad_proof', `a string of 1..${MAX_URL_LENGTH} characters`, `${where}.url`);
    }
    if (typeof token !== 'string' || token.length === 0) throw new TsaFormatError('tsa_bad_proof', 'a base64 string', `${where}.token`);
    if (token.length > Math.ceil(MAX_TOKEN_BYTES / 3) * 4) throw new TsaFormatError('tsa_too_large', `over ${MAX_TOKEN_BYTES} bytes`, `${where}.token`);
    return { url, token };
  });
}

/**
 * Checks each token against `noteBody` and the caller's trust anchors (none: every sound
 * token is "untrusted", never PASS). `timestamps` is the proof's raw member; `now` is the
 * checker's clock (default: the current time).
 */
export async function checkCheckpointTimestamps(
  noteBody: string | Uint8Array,
  timestamps: unknown,
  trustAnchors: TsaTrustAnchors,
  now: Date = new Date(),
): Promise<CheckpointTimestampResult[]> {
  const data = typeof noteBody === 'string' ? new TextEncoder().encode(noteBody) : noteBody;
  const list = parseCheckpointTimestamps(timestamps);
  const results: CheckpointTimestampResult[] = [];
  for (const [i, { url, token }] of list.entries()) {
    const field = `anchor_proof.log.timestamps[${i}].token`;
    let der: Uint8Array;
    try {
      der = decodeBase64Strict(token, field);
    } catch (err) {
      results.push({ url, status: 'FAIL', genTime: null, tsa: null, serial: null, detail: (err as Error).message });
      continue;
    }
    results.push({ url, ...(await checkTimeStampToken(der, { data, trustAnchors, now }, field)) });
  }
  return results;
}
