/**
 * A log entry's bytes, pinned so others can read them (issue 26):
 * `d` (the envelope digest, 32 raw bytes) || kind (1 byte) || the subject key in UTF-8.
 * An entry bundle stores each as a big-endian uint16 length and the bytes, so an entry
 * is at most 65,535 bytes.
 */
import { decodeUtf8Strict } from '../aer1/base64.js';
import { LogFormatError } from './errors.js';

export const ENTRY_KINDS = { receipt: 1, workflow_close: 2, job_timeline: 3 } as const;
export type EntryKind = keyof typeof ENTRY_KINDS;
const KIND_OF_BYTE: Record<number, EntryKind> = { 1: 'receipt', 2: 'workflow_close', 3: 'job_timeline' };

const KIND_OF_SUBJECT: ReadonlyMap<string, EntryKind> = new Map([['receipt', 'receipt'], ['workflow-close', 'workflow_close'], ['chain-head', 'job_timeline']]);

/** A subject's kind (SPEC: `subject`) as its entry's kind; undefined for any other text. */
export function entryKindOfSubject(subject: string): EntryKind | undefined {
  return KIND_OF_SUBJECT.get(subject);
}

export const MAX_ENTRY_BYTES = 65_535;
const DIGEST_BYTES = 32;

export interface LogEntry {
  /** The envelope digest `d`, 32 bytes. */
  readonly digest: Uint8Array;
  readonly kind: EntryKind;
  /** The subject key. */
  readonly key: string;
}

export function encodeEntry(entry: LogEntry): Buffer {
  if (entry.digest.length !== DIGEST_BYTES) throw new LogFormatError('log_bad_entry', `d is ${entry.digest.length} bytes, not 32`, 'entry.d');
  const kind = ENTRY_KINDS[entry.kind];
  if (kind === undefined) throw new LogFormatError('log_bad_entry', `unknown kind ${JSON.stringify(entry.kind)}`, 'entry.kind');
  if (entry.key === '') throw new LogFormatError('log_bad_entry', 'empty subject key', 'entry.key');
  const key = Buffer.from(entry.key, 'utf8');
  if (key.toString('utf8') !== entry.key) throw new LogFormatError('log_bad_entry', 'the subject key is not well-formed Unicode (a lone surrogate)', 'entry.key');
  const size = DIGEST_BYTES + 1 + key.length;
  if (size > MAX_ENTRY_BYTES) throw new LogFormatError('log_too_large', `entry of ${size} bytes is over ${MAX_ENTRY_BYTES}`, 'entry.key');
  const out = Buffer.allocUnsafe(size);
  out.set(entry.digest, 0);
  out[DIGEST_BYTES] = kind;
  out.set(key, DIGEST_BYTES + 1);
  return out;
}

export function decodeEntry(bytes: Uint8Array, field = 'entry'): LogEntry {
  if (bytes.length > MAX_ENTRY_BYTES) throw new LogFormatError('log_too_large', `${bytes.length} bytes is over ${MAX_ENTRY_BYTES}`, field);
  if (bytes.length < DIGEST_BYTES + 2) throw new LogFormatError('log_bad_entry', `${bytes.length} bytes is shorter than d (32), kind (1) and a key (1 or more)`, field);
  const kind = KIND_OF_BYTE[bytes[DIGEST_BYTES]!];
  if (kind === undefined) throw new LogFormatError('log_bad_entry', `unknown kind byte 0x${bytes[DIGEST_BYTES]!.toString(16).padStart(2, '0')} (1 receipt, 2 workflow close, 3 job timeline)`, `${field}.kind`);
  const key = decodeUtf8Strict(bytes.subarray(DIGEST_BYTES + 1), `${field}.key`);
  return { digest: Buffer.from(bytes.subarray(0, DIGEST_BYTES)), kind, key };
}
