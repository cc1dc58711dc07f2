/**
 * The one way a CLI entry point runs (aer1-anchord, aer1-anchor, aer1-verify-anchor):
 * exit 0 ok / PASS; 1 a check or a job failed (FAIL, a refused document, no such
 * subject); 2 usage or unreadable input (unknown flags, a missing or non-JSON file, a
 * bad config); 70 an internal error. Errors print one line, never a stack or a file's text.
 */
import { readFileSync } from 'node:fs';
import { duplicateMember, jsonTextDepth, MAX_JSON_DEPTH, quoteBounded } from '../../core/aer1/json-limits.js';
import { Aer1Error, InputError, jsonSyntaxReason, UsageError } from '../../core/errors/errors.js';

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

/** Parses JSON text from a named source; unparseable or too deeply nested JSON is a UsageError (exit 2). */
export function parseJsonText(text: string, source: string): unknown {
  if (jsonTextDepth(text) > MAX_JSON_DEPTH) {
    throw new UsageError(`${source} is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any JSON input)`, 'too_deep');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not JSON: ${jsonSyntaxReason(err)}`, 'not_json');
  }
  const twice = duplicateMember(text);
  if (twice) throw new UsageError(`${source} reads two ways: member ${quoteBounded(twice.name, 60)} twice in ${twice.at.length > 200 ? `${twice.at.slice(0, 200)}…` : twice.at} (JSON.parse keeps the last, other readers the first)`, 'ambiguous');
  return value;
}

export function readJsonFile(file: string): unknown {
  return parseJsonText(readInputText(file), file === '-' ? 'stdin' : file);
}

export { InputError, UsageError };
