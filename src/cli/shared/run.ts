/**
 * The one way a CLI entry point runs (aer1-anchord, aer1-anchor, aer1-verify-anchor):
 * exit 0 ok / PASS; 1 a check or a job failed (FAIL, a refused document, no such
 * subject); 2 usage or unreadable input (unknown flags, a missing or non-JSON file, a
 * bad config); 3 nothing established (the verifier's INCONCLUSIVE, returned by the command);
 * 70 an internal error. Errors print one line, never a stack or a file's text.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { parseJsonText } from '../../core/aer1/json-limits.js';
import { displayName } from '../../core/verify/names.js';

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

/** The largest input file read (documents, proofs, headers and trust files alike). */
export const MAX_INPUT_BYTES = 64 * 1024 * 1024;

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isDirectory()) return 'a directory';
  if (st.isSocket()) return 'a socket';
  return 'not a file';
}

/** Reads from an open descriptor until its end, refusing past `cap` bytes (the file may grow while read). */
function readBounded(fd: number, name: string, cap: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.alloc(1024 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (err) {
      throw new UsageError(`cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unreadable');
    }
    if (n === 0) break;
    total += n;
    if (total > cap) throw new UsageError(`${name}: more than the input cap of ${cap} bytes: refused`, 'unreadable');
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks, total);
}

/**
 * The bytes of an input file (or stdin for `-`), bounded: opened without blocking (a FIFO
 * with no writer cannot hang the run), checked to be a regular file on the open
 * descriptor (not before: the name could be swapped between), and refused over `cap`
 * bytes by its size before anything is read. Each refusal is a one-line UsageError.
 */
export function readInputBytes(file: string, cap = MAX_INPUT_BYTES): Buffer {
  if (file === '-') return readBounded(0, 'stdin', cap);
  const name = displayName(file);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new UsageError(`cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unreadable');
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UsageError(`${name}: not a regular file (${kindOf(st)}): refused`, 'unreadable');
    if (st.size > cap) throw new UsageError(`${name}: ${st.size} bytes, over the input cap of ${cap} bytes: refused`, 'unreadable');
    return readBounded(fd, name, cap);
  } finally {
    closeSync(fd);
  }
}

/** Reads a file (or stdin for `-`) as UTF-8 text, bounded (readInputBytes); a missing or unreadable file is a UsageError. */
export function readInputText(file: string): string {
  const name = file === '-' ? 'stdin' : displayName(file);
  const bytes = readInputBytes(file);
  try {
    // Invalid UTF-8 is refused, not silently replaced with U+FFFD.
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`${name} is not valid UTF-8 text`, 'not_utf8');
  }
}


export function readJsonFile(file: string): unknown {
  return parseJsonText(readInputText(file), file === '-' ? 'stdin' : displayName(file));
}

export { InputError, UsageError };
