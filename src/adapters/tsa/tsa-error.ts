import { Aer1Error } from '../../core/errors/errors.js';

export const TSA_ERROR_CODES = [
  'bad_url',
  'bad_option',
  'timeout',
  'network',
  'http_status',
  'too_large',
  'bad_response',
  'refused',
  'bad_token',
] as const;
export type TsaErrorCode = (typeof TSA_ERROR_CODES)[number];

/** A TSA that did not give a usable token; the message names the TSA URL. */
export class TsaError extends Aer1Error {
  declare readonly code: TsaErrorCode;
  /** The TSA's URL as configured. */
  readonly url: string;
  /** The HTTP status, when the TSA answered one. */
  readonly status: number | undefined;

  constructor(code: TsaErrorCode, url: string, message: string, status?: number) {
    super(code, `TSA ${url}: ${message}`);
    this.url = url;
    this.status = status;
  }
}
