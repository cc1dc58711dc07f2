/**
 * The one way a CLI entry point runs (aer1-anchord, aer1-anchor, aer1-verify-anchor):
 * exit 0 ok / PASS; 1 a check or a job failed (FAIL, a refused document, no such
 * subject); 2 usage or unreadable input (unknown flags, a missing or non-JSON file, a
 * bad config); 70 an internal error. Errors print one line, never a stack or a file's text.
 */
import { readFileSync } from 'node:fs';
import { parseJsonText } from '../../core/aer1/json-limits.js';

export { parseJsonText };
import { Aer1Error, InputError, UsageError } from '../../core/errors/errors.js';

export type Command = (argv: string[]) => Promise<number>;

/** node:util parseArgs throws TypeErrors with these codes for unknown or malformed flags. */
function isArgsError(err: unknown): err is Error {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && (err as NodeJS.ErrnoException).code!.startsWith('ERR_PARSE_ARGS_');
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError || isArgsError(err)) return 2;
  if (err instanceof Aer1Error) return 1;
  return 70;
}

export async function runMain(prog: string, command: Command, argv = process.argv.slice(2)): Promise<void> {
  let code: number;
  try {
    code = await command(argv);
  } catch (err) {
    code = exitCodeFor(err);
    if (err instanceof Aer1Error) {
      process.stderr.write(`${prog}: ${err.message}\n`);
    } else if (isArgsError(err)) {
      // parseArgs' advice on positionals that start with '-' makes a second sentence: keep the first
      process.stderr.write(`${prog}: ${err.message.split('. To specify a positional')[0]} (see --help)\n`);
    } else {
      process.stderr.write(`${prog}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    }
  }
  process.exitCode = code;
}

/** Reads a file (or stdin for `-`) as UTF-8 text; a missing or unreadable file is a UsageError. */
export function readInputText(file: string): string {
  const name = file === '-' ? 'stdin' : file;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`cannot read ${name}: ${reason}`, 'unreadable');
  }
  try {
    // Invalid UTF-8 is refused, not silently replaced with U+FFFD.
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`${name} is not valid UTF-8 text`, 'not_utf8');
  }
}


export function readJsonFile(file: string): unknown {
  return parseJsonText(readInputText(file), file === '-' ? 'stdin' : file);
}

export { InputError, UsageError };
