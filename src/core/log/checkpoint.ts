/**
 * C2SP tlog-checkpoint: the note text `<origin>\n<size>\n<base64 root>\n[extension lines]`,
 * signed as a signed note by the log's key (whose name should be the origin).
 */
import { decodeBase64Strict } from '../aer1/base64.js';
import { LogFormatError } from './errors.js';
import { checkNote, parseNote, signNote, type LogSigner, type NoteCheck, type VerifierKey } from './note.js';
import { HASH_SIZE } from './rfc6962.js';

export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly root: Buffer;
  readonly extensions: readonly string[];
}

export function formatCheckpointText(cp: Checkpoint): string {
  if (cp.origin === '' || /[\n]/.test(cp.origin)) throw new RangeError('an origin is one non-empty line');
  if (!Number.isSafeInteger(cp.size) || cp.size < 0) throw new RangeError(`size ${cp.size} is not a tree size`);
  if (cp.root.length !== HASH_SIZE) throw new RangeError('a root hash is 32 bytes');
  for (const e of cp.extensions) if (e === '' || e.includes('\n')) throw new RangeError('an extension is one non-empty line');
  return [cp.origin, String(cp.size), cp.root.toString('base64'), ...cp.extensions].map((l) => `${l}\n`).join('');
}

/** Parses a checkpoint's note text (the signed part, with its final newline). */
export function parseCheckpointText(text: string, field = 'checkpoint'): Checkpoint {
  if (!text.endsWith('\n')) throw new LogFormatError('log_bad_checkpoint', 'the text does not end in a newline', field);
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw new LogFormatError('log_bad_checkpoint', `${lines.length} lines: a checkpoint has an origin, a size and a root hash`, field);
  const [origin, sizeText, rootText, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin === '') throw new LogFormatError('log_bad_checkpoint', 'empty origin line', `${field}.origin`);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) {
    throw new LogFormatError('log_bad_checkpoint', `${JSON.stringify(sizeText.slice(0, 24))} is not a decimal tree size without leading zeros (below 2^53)`, `${field}.size`);
  }
  let root: Buffer;
  try {
    root = decodeBase64Strict(rootText, `${field}.root`);
  } catch (err) {
    throw new LogFormatError('log_bad_checkpoint', (err as Error).message.replace(`${field}.root: `, ''), `${field}.root`);
  }
  if (root.length !== HASH_SIZE) throw new LogFormatError('log_bad_checkpoint', `the root hash is ${root.length} bytes, not 32`, `${field}.root`);
  extensions.forEach((e, i) => {
    if (e === '') throw new LogFormatError('log_bad_checkpoint', 'an extension line is empty', `${field}.extensions[${i}]`);
  });
  return { origin, size: Number(sizeText), root, extensions };
}

export function signCheckpoint(cp: Checkpoint, signer: LogSigner): string {
  return signNote(formatCheckpointText(cp), [signer]);
}

export type CheckpointCheck =
  | { readonly ok: true; readonly checkpoint: Checkpoint; readonly signedBy: readonly VerifierKey[] }
  | { readonly ok: false; readonly reason: Extract<NoteCheck, { ok: false }>['reason']; readonly message: string; readonly checkpoint: Checkpoint };

/**
 * Parses a signed checkpoint (format errors throw LogFormatError) and checks its
 * signatures against the keys the caller trusts (a failed check is a value).
 */
export function openCheckpoint(note: string | Uint8Array, trusted: readonly VerifierKey[], field = 'checkpoint'): CheckpointCheck {
  const parsed = parseNote(note, field);
  const checkpoint = parseCheckpointText(parsed.text, field);
  const result = checkNote(parsed, trusted);
  return result.ok ? { ok: true, checkpoint, signedBy: result.signedBy } : { ok: false, reason: result.reason, message: result.message, checkpoint };
}
