/** Why a Bitcoin attestation did not check out; `transient` when asking again later may help. */
import { InputError } from '../errors/errors.js';

export const BITCOIN_ERROR_CODES = [
  'bitcoin_bad_header',
  'bitcoin_bad_bits',
  'bitcoin_target_too_easy',
  'bitcoin_bad_pow',
  'bitcoin_merkle_mismatch',
  'bitcoin_header_mismatch',
  'bitcoin_missing_header',
  'bitcoin_source_error',
] as const;
export type BitcoinErrorCode = (typeof BITCOIN_ERROR_CODES)[number];

export class BitcoinVerificationError extends InputError {
  override readonly code: BitcoinErrorCode;
  /** The header source failed or does not know the block yet: not a verdict on the proof. */
  readonly transient: boolean;

  constructor(code: BitcoinErrorCode, message: string) {
    super(code, message);
    this.code = code;
    this.transient = code === 'bitcoin_missing_header' || code === 'bitcoin_source_error';
  }
}
