/**
 * The one error the log's formats throw (entries, tiles, entry bundles, signed notes,
 * checkpoints, keys): a stable `log_*` code and a message that names the field.
 */
import { InputError } from '../errors/errors.js';

export const LOG_ERROR_CODES = [
  'log_bad_entry',
  'log_bad_bundle',
  'log_bad_tile',
  'log_bad_note',
  'log_bad_checkpoint',
  'log_bad_key',
  'log_bad_proof',
  'log_too_large',
] as const;
export type LogErrorCode = (typeof LOG_ERROR_CODES)[number];

export class LogFormatError extends InputError {
  override readonly code: LogErrorCode;
  constructor(code: LogErrorCode, message: string, field?: string) {
    super(code, message, field);
    this.code = code;
  }
}
