/**
 * Errors with stable codes. Input problems (a bad document, a broken proof) are
 * `InputError`s and name the field; usage problems (bad flags, unreadable files)
 * are `UsageError`s. CLIs map them to exit 1 and exit 2, without stack traces.
 *
 * The codes are closed sets, listed here and in docs/architecture.md (Error codes);
 * test/docs/error-codes.test.ts checks the two agree. A new code goes in both.
 */

/** What is wrong with a document, a proof or an option value (`InputError`). */
export const INPUT_ERROR_CODES = [
  'ambiguous', 'bad_base64', 'bad_calendar_url', 'bad_commitment', 'bad_config', 'bad_count',
  'bad_digest', 'bad_event_input', 'bad_headers_file', 'bad_hex', 'bad_length', 'bad_limit',
  'bad_option', 'bad_proof', 'bad_pubkey', 'bad_signing_key', 'bad_subject', 'bad_subjects',
  'bad_time', 'bad_type', 'bad_url', 'bad_utf8', 'bad_version', 'broken_link',
  'byte_length_mismatch', 'close_not_last', 'duplicate_receipt_id', 'empty', 'empty_job',
  'entry_count_mismatch', 'evidence_not_applicable', 'evidence_twice',
  'final_entry_digest_mismatch', 'job_id_mismatch', 'limit_exceeded', 'lone_surrogate',
  'merkle_root_mismatch', 'missing', 'no_entries', 'no_steps', 'not_array', 'not_boolean',
  'not_closed', 'not_finite', 'not_json', 'not_object', 'not_string', 'not_timeline',
  'output_hash_mismatch', 'seq_gap', 'seq_not_integer', 'seq_order', 'too_deep', 'too_large',
  'too_many_subjects', 'unknown_member', 'unknown_proof_version', 'unrecognized',
  'unsupported_hash',
] as const;
export type InputErrorCode = (typeof INPUT_ERROR_CODES)[number];
/**
 * The prefixes of InputError subclasses' own sets: OtsFormatError (`ots_*`,
 * core/ots/errors.ts), BitcoinVerificationError (`bitcoin_*`, core/bitcoin/errors.ts) and
 * LogFormatError (`log_*`, core/log/errors.ts),
 * each closed in its module (named by prefix here: core/errors imports nothing).
 */
export type InputSubclassCode = `ots_${string}` | `bitcoin_${string}` | `log_${string}`;

/** Why a command cannot run (`UsageError`; exit 2). Codes an input error carries through keep it. */
export const USAGE_ERROR_CODES = [
  'ambiguous', 'bad_config', 'cannot_listen', 'dev_relay_start', 'dev_relay_unavailable', 'folder_binding', 'key_file_exists',
  'key_file_permissions', 'no_proof', 'no_redis', 'no_signing_key', 'not_json', 'not_utf8',
  'redis_cluster', 'redis_schema', 'too_deep', 'unknown_proof_version', 'unreadable', 'unrecognized', 'unwritable',
  'usage',
] as const;
export type UsageErrorCode = (typeof USAGE_ERROR_CODES)[number];

/**
 * The base of every error with a code. Not made directly: each subclass takes only its
 * module's closed set (InputError, UsageError, ConflictError here; OtsFormatError,
 * BitcoinVerificationError, CalendarError, DemoError in their modules).
 */
export class Aer1Error extends Error {
  readonly code: string;
  protected constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input: names the problem and, where there is one, the field (`steps[3].seq`). */
export class InputError extends Aer1Error {
  readonly field: string | undefined;
  declare readonly code: InputErrorCode | InputSubclassCode;
  constructor(code: InputErrorCode | InputSubclassCode, message: string, field?: string) {
    super(code, field ? `${field}: ${message}` : message);
    this.field = field;
  }
}

/** Wrong command-line words, a file that cannot be read, JSON that does not parse. */
export class UsageError extends Aer1Error {
  declare readonly code: UsageErrorCode | InputError['code'];
  constructor(message: string, code: UsageErrorCode | InputError['code'] = 'usage') {
    super(code, message);
  }
}

/**
 * A JSON syntax error's reason without the text V8 quotes around it (a file's contents,
 * which may hold a token or a secret, and may span lines): always one line.
 */
export function jsonSyntaxReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, ' (text around it not shown)').replace(/\s+/g, ' ');
}

/** The same subject key arrived with a different root. */
export class ConflictError extends Aer1Error {
  declare readonly code: 'conflict';
  readonly key: string;
  constructor(key: string, message: string) {
    super('conflict', message);
    this.key = key;
  }
}
