/**
 * C2SP tlog-witness `add-checkpoint` bodies: the request (`old <size>\n`, at most 63
 * base64 consistency-proof lines, an empty line, the signed checkpoint) and the 409
 * answer's `text/x.tlog.size` body (`<size>\n`). Pure: the client and the dev witness
 * both speak through these.
 */
import { decodeBase64Strict } from '../aer1/base64.js';
import { LogFormatError } from '../log/errors.js';
import { MAX_NOTE_BYTES } from '../log/note.js';
import { HASH_SIZE } from '../log/rfc6962.js';

/** tlog-witness: the client MUST NOT send more than 63 consistency proof lines. */
export const MAX_PROOF_LINES = 63;
export const TLOG_SIZE_TYPE = 'text/x.tlog.size';
/** The longest request: the old size line, 63 proof lines and the largest note. */
export const MAX_ADD_CHECKPOINT_BYTES = 'old 9007199254740991\n'.length + MAX_PROOF_LINES * 45 + 1 + MAX_NOTE_BYTES;

const SIZE = /^(0|[1-9][0-9]{0,15})$/;

function parseSize(text: string, field: string): number {
  if (!SIZE.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new LogFormatError('log_bad_proof', `${JSON.stringify(text.slice(0, 24))} is not a decimal size without leading zeros (below 2^53)`, field);
  }
  return Number(text);
}

export interface AddCheckpointRequest {
  readonly oldSize: number;
  readonly proof: readonly Buffer[];
  /** The signed checkpoint note, as sent. */
  readonly note: Buffer;
}

export function formatAddCheckpointRequest(oldSize: number, proof: readonly Uint8Array[], note: string | Uint8Array): Buffer {
  if (!Number.isSafeInteger(oldSize) || oldSize < 0) throw new RangeError(`old size ${oldSize} is not a size`);
  if (proof.length > MAX_PROOF_LINES) throw new RangeError(`${proof.length} proof hashes, over ${MAX_PROOF_LINES}`);
  for (const h of proof) if (h.length !== HASH_SIZE) throw new RangeError('a proof hash is 32 bytes');
  const head = `old ${oldSize}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n`;
  return Buffer.concat([Buffer.from(head, 'utf8'), typeof note === 'string' ? Buffer.from(note, 'utf8') : note]);
}

/** Parses a request body; every format fault is a LogFormatError naming the line (a 400). */
export function parseAddCheckpointRequest(body: Uint8Array, field = 'add-checkpoint'): AddCheckpointRequest {
  if (body.length > MAX_ADD_CHECKPOINT_BYTES) throw new LogFormatError('log_too_large', `${body.length} bytes, over ${MAX_ADD_CHECKPOINT_BYTES}`, field);
  const buf = Buffer.from(body.buffer, body.byteOffset, body.length);
  const blank = buf.indexOf('\n\n');
  if (blank < 0) throw new LogFormatError('log_bad_proof', 'no empty line after the old size and proof lines', field);
  const lines = buf.subarray(0, blank).toString('latin1').split('\n');
  const first = lines[0]!;
  if (!first.startsWith('old ')) throw new LogFormatError('log_bad_proof', 'the first line is not "old <size>"', `${field}.old`);
  const oldSize = parseSize(first.slice(4), `${field}.old`);
  const proofLines = lines.slice(1);
  if (proofLines.length > MAX_PROOF_LINES) throw new LogFormatError('log_bad_proof', `${proofLines.length} proof lines, over ${MAX_PROOF_LINES}`, `${field}.proof`);
  const proof = proofLines.map((line, i) => {
    let h: Buffer;
    try {
      h = decodeBase64Strict(line, `${field}.proof[${i}]`);
    } catch {
      throw new LogFormatError('log_bad_proof', 'not canonical base64', `${field}.proof[${i}]`);
    }
    if (h.length !== HASH_SIZE) throw new LogFormatError('log_bad_proof', `${h.length} bytes, not a 32-byte hash`, `${field}.proof[${i}]`);
    return h;
  });
  return { oldSize, proof, note: buf.subarray(blank + 2) };
}

/** The 409 body: the witness's latest cosigned size and a newline. */
export function formatTlogSize(size: number): string {
  return `${size}\n`;
}

export function parseTlogSize(body: Uint8Array, field = 'text/x.tlog.size body'): number {
  const text = Buffer.from(body).toString('latin1');
  if (!text.endsWith('\n') || text.length > 18) throw new LogFormatError('log_bad_proof', 'not "<size>\\n"', field);
  return parseSize(text.slice(0, -1), field);
}
