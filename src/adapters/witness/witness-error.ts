import { Aer1Error } from '../../core/errors/errors.js';

/**
 * Why a witness gave no cosignature. `retryable` is false for the witness's own verdicts
 * (404, 403, 422, 400, a size ahead of ours, a bad cosignature): sending the same
 * checkpoint again cannot change them, so they are recorded, never retried blindly.
 */
export const WITNESS_ERROR_CODES = [
  'witness_unknown_origin',
  'witness_forbidden',
  'witness_inconsistent',
  'witness_bad_request',
  'witness_ahead',
  'witness_conflict',
  'witness_http_status',
  'witness_timeout',
  'witness_network',
  'witness_too_large',
  'witness_bad_response',
  'witness_bad_cosignature',
] as const;
export type WitnessErrorCode = (typeof WITNESS_ERROR_CODES)[number];

const RETRYABLE: ReadonlySet<WitnessErrorCode> = new Set(['witness_timeout', 'witness_network', 'witness_http_status', 'witness_conflict']);

export class WitnessError extends Aer1Error {
  declare readonly code: WitnessErrorCode;
  /** The witness's submission prefix. */
  readonly url: string;
  /** The HTTP status, when the witness answered one. */
  readonly status: number | undefined;
  /** The witness's latest cosigned size, when a 409 said it. */
  readonly knownSize: number | undefined;
  /** A later attempt may succeed (a timeout, a network fault, a 5xx, a 409 race); the rest are verdicts. */
  readonly retryable: boolean;

  constructor(code: WitnessErrorCode, url: string, message: string, extra: { status?: number; knownSize?: number } = {}) {
    super(code, `witness ${url}: ${message}`);
    this.url = url;
    this.status = extra.status;
    this.knownSize = extra.knownSize;
    this.retryable = RETRYABLE.has(code) && !(code === 'witness_http_status' && (extra.status ?? 500) < 500);
  }
}
