/**
 * The one error RFC 3161 parsing throws (responses, tokens, PEM trust anchors,
 * the proof's `timestamps` list): a stable `tsa_*` code and a message naming the field.
 * A token that parses but fails a check is not an error: it is a FAIL result.
 */
import { Aer1Error } from '../errors/errors.js';

export const TSA_FORMAT_ERROR_CODES = [
  'tsa_bad_response',
  'tsa_bad_token',
  'tsa_bad_pem',
  'tsa_bad_proof',
  'tsa_too_large',
] as const;
export type TsaFormatErrorCode = (typeof TSA_FORMAT_ERROR_CODES)[number];

export class TsaFormatError extends Aer1Error {
  declare readonly code: TsaFormatErrorCode;
  readonly field: string | undefined;
  constructor(code: TsaFormatErrorCode, message: string, field?: string) {
    super(code, field ? `${field}: ${message}` : message);
    this.field = field;
  }
}
