/**
 * The one error the `.ots` codec throws: a stable `code` and, when the problem sits in
 * bytes being read, the byte offset (also named in the message).
 */
import { InputError } from '../errors/errors.js';

export const OTS_ERROR_CODES = [
  'ots_truncated',
  'ots_trailing_bytes',
  'ots_bad_magic',
  'ots_bad_version',
  'ots_bad_file_hash_op',
  'ots_unknown_op',
  'ots_bad_op_arg',
  'ots_message_too_long',
  'ots_bad_message',
  'ots_varuint_too_large',
  'ots_varuint_not_minimal',
  'ots_payload_too_long',
  'ots_payload_trailing',
  'ots_bad_uri',
  'ots_too_deep',
  'ots_too_large',
  'ots_duplicate_branch',
  'ots_branch_order',
  'ots_empty_timestamp',
  'ots_digest_mismatch',
  'ots_message_mismatch',
] as const;
export type OtsErrorCode = (typeof OTS_ERROR_CODES)[number];

export class OtsFormatError extends InputError {
  override readonly code: OtsErrorCode;
  /** Byte offset in the input where the problem was found, when there is one. */
  readonly offset: number | undefined;

  constructor(code: OtsErrorCode, message: string, offset?: number) {
    super(code, offset === undefined ? message : `${message} (at byte ${offset})`);
    this.code = code;
    this.offset = offset;
  }
}
