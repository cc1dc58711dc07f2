/**
 * Errors with stable codes. Input problems (a bad document, a broken proof) are
 * `InputError`s and name the field; usage problems (bad flags, unreadable files)
 * are `UsageError`s. CLIs map them to exit 1 and exit 2, without stack traces.
 */
export class Aer1Error extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input: names the problem and, where there is one, the field (`steps[3].seq`). */
export class InputError extends Aer1Error {
  readonly field: string | undefined;
  constructor(code: string, message: string, field?: string) {
    super(code, field ? `${field}: ${message}` : message);
    this.field = field;
  }
}

/** Wrong command-line words, a file that cannot be read, JSON that does not parse. */
export class UsageError extends Aer1Error {
  constructor(message: string, code = 'usage') {
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
  readonly key: string;
  constructor(key: string, message: string) {
    super('conflict', message);
    this.key = key;
  }
}
