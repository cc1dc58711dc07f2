/**
 * Reading and writing timestamps and detached timestamp files (`.ots`), byte-exact with
 * python-opentimestamps `core/timestamp.py` + `core/serialize.py`, and stricter:
 * truncation, trailing bytes, unknown versions and ops, over-long arguments, messages
 * and varuints, non-minimal varuints, duplicate branches and nesting deeper than
 * python's limit are refused with an `OtsFormatError` naming the byte offset.
 *
 * The parser and the writer use explicit stacks: a hostile file cannot overflow the
 * call stack, and nesting is bounded by MAX_DEPTH either way.
 */
import { createHash } from 'node:crypto';
import { readAttestation, serializeAttestation } from './attestations.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { OtsFormatError } from './errors.js';
import { type Op, MAX_RESULT_LENGTH, applyOp, isBinaryKind, opArg, opKindForTag, opTag } from './ops.js';
import { Timestamp } from './timestamp.js';

export const HEADER_MAGIC = Buffer.from('004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294', 'hex');
export const MAJOR_VERSION = 1;

/**
 * python-opentimestamps refuses a node 256 ops below the root (`_recursion_limit=256`),
 * so a path holds at most 255 ops. Same bound here, for reading and for writing.
 */
export const MAX_DEPTH = 256;

/** Files this size or larger than any real proof (a few KB) are refused before parsing. */
export const DEFAULT_MAX_INPUT_BYTES = 1 << 20;
/** Sum of all node messages a parse may build (each message can be 4 KB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 32 << 20;

export interface ParseOptions {
  maxInputBytes?: number;
  maxMessageBytes?: number;
}

export type FileHashOp = 'sha256' | 'sha1' | 'ripemd160';
export const FILE_HASH_OPS: Readonly<Record<FileHashOp, { tag: number; length: number }>> = {
  sha1: { tag: 0x02, length: 20 },
  ripemd160: { tag: 0x03, length: 20 },
  sha256: { tag: 0x08, length: 32 },
};

/** A detached timestamp file: how the file was hashed, and the timestamp on its digest. */
export class DetachedTimestampFile {
  constructor(
    readonly hashOp: FileHashOp,
    readonly timestamp: Timestamp,
  ) {
    const want = FILE_HASH_OPS[hashOp].length;
    if (timestamp.msg.length !== want) {
      throw new OtsFormatError('ots_bad_message', `a ${hashOp} file digest is ${want} bytes, the timestamp is on ${timestamp.msg.length}`);
    }
  }

  /** The digest of the timestamped file (the timestamp's message). */
  get digest(): Buffer {
    return this.timestamp.msg;
  }
}

/** The file digest a detached timestamp of `content` would carry. */
export function hashFile(hashOp: FileHashOp, content: Uint8Array): Buffer {
  return createHash(hashOp).update(content).digest();
}

function atOffset<T>(offset: number, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof OtsFormatError && err.offset === undefined) throw new OtsFormatError(err.code, err.message, offset);
    throw err;
  }
}

function readOp(r: ByteReader, tag: number, tagOffset: number): Op {
  const kind = opKindForTag(tag);
  if (kind === undefined) throw new OtsFormatError('ots_unknown_op', `unknown op tag 0x${tag.toString(16).padStart(2, '0')}`, tagOffset);
  if (!isBinaryKind(kind)) return { kind };
  return { kind, arg: r.readVarbytes(1, MAX_RESULT_LENGTH, `${kind} argument`, 'ots_bad_op_arg') };
}

function branchKey(tag: number, bytes: Buffer): string {
  return `${tag}:${bytes.toString('latin1')}`;
}

interface Frame {
  node: Timestamp;
  depth: number;
  seen: Set<string> | undefined;
}

/** Reads one timestamp on `msg` from the reader (the reader is left after it). */
function readTimestamp(r: ByteReader, msg: Uint8Array, opts: ParseOptions): Timestamp {
  const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const root = atOffset(r.offset, () => new Timestamp(msg));
  let messageBytes = root.msg.length;
  const stack: Frame[] = [{ node: root, depth: 0, seen: undefined }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const first = r.readByte('a timestamp branch');
    const isLast = first !== 0xff;
    if (isLast) stack.pop(); // this node's last branch: once read, the node is complete
    const tagOffset = r.offset - (isLast ? 1 : 0);
    const tag = isLast ? first : r.readByte('a timestamp branch after 0xff');
    const { node } = frame;
    if (!isLast || frame.seen) frame.seen ??= new Set();

    if (tag === 0x00) {
      if (node.ops.length > 0) {
        throw new OtsFormatError('ots_branch_order', 'attestation after an op in the same node (writers put attestations first)', tagOffset);
      }
      const start = r.offset;
      const attestation = readAttestation(r);
      if (frame.seen) {
        const key = branchKey(0, serializeAttestation(attestation));
        if (frame.seen.has(key)) throw new OtsFormatError('ots_duplicate_branch', 'the same attestation twice in one node', start);
        frame.seen.add(key);
      }
      Timestamp.pushParsed(node, attestation);
      continue;
    }

    const op = readOp(r, tag, tagOffset);
    if (frame.seen) {
      const key = branchKey(tag, opArg(op) ?? Buffer.alloc(0));
      if (frame.seen.has(key)) throw new OtsFormatError('ots_duplicate_branch', `the same op (${op.kind}) twice in one node`, tagOffset);
      frame.seen.add(key);
    }
    const result = atOffset(tagOffset, () => applyOp(op, node.msg));
    const depth = frame.depth + 1;
    if (depth >= MAX_DEPTH) {
      throw new OtsFormatError('ots_too_deep', `timestamp nested deeper than ${MAX_DEPTH - 1} ops`, tagOffset);
    }
    messageBytes += result.length;
    if (messageBytes > maxMessageBytes) {
      throw new OtsFormatError('ots_too_large', `timestamp messages exceed ${maxMessageBytes} bytes in total`, tagOffset);
    }
    const child = new Timestamp(result);
    Timestamp.pushParsed(node, { op, timestamp: child });
    stack.push({ node: child, depth, seen: undefined });
  }
  return root;
}

function checkSize(bytes: Uint8Array, opts: ParseOptions): void {
  const max = opts.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  if (bytes.length > max) throw new OtsFormatError('ots_too_large', `input of ${bytes.length} bytes exceeds ${max}`, 0);
}

function checkEnd(r: ByteReader): void {
  if (!r.atEnd) throw new OtsFormatError('ots_trailing_bytes', `${r.remaining} bytes after the end of the timestamp`, r.offset);
}

/**
 * A serialized timestamp on `msg`, without file header: what a calendar answers to
 * `POST /digest` or `GET /timestamp/<commitment>`. The whole input must be used.
 */
export function parseTimestamp(bytes: Uint8Array, msg: Uint8Array, opts: ParseOptions = {}): Timestamp {
  checkSize(bytes, opts);
  const r = new ByteReader(bytes);
  const ts = readTimestamp(r, msg, opts);
  checkEnd(r);
  return ts;
}

/** A detached timestamp file: magic, major version 1, file hash op, digest, timestamp, end. */
export function parseDetached(bytes: Uint8Array, opts: ParseOptions = {}): DetachedTimestampFile {
  checkSize(bytes, opts);
  const r = new ByteReader(bytes);
  const magic = r.readBytes(Math.min(HEADER_MAGIC.length, r.remaining), 'the file magic');
  if (!magic.equals(HEADER_MAGIC)) {
    throw new OtsFormatError(
      magic.length < HEADER_MAGIC.length && HEADER_MAGIC.subarray(0, magic.length).equals(magic) ? 'ots_truncated' : 'ots_bad_magic',
      'not an OpenTimestamps proof (bad magic bytes)',
      0,
    );
  }
  const versionOffset = r.offset;
  const major = r.readVaruint('major version');
  if (major !== MAJOR_VERSION) {
    throw new OtsFormatError('ots_bad_version', `major version ${major} is not supported (only ${MAJOR_VERSION})`, versionOffset);
  }
  const opOffset = r.offset;
  const tag = r.readByte('the file hash op');
  const hashOp = (Object.keys(FILE_HASH_OPS) as FileHashOp[]).find((k) => FILE_HASH_OPS[k].tag === tag);
  if (!hashOp) {
    throw new OtsFormatError('ots_bad_file_hash_op', `file hash op 0x${tag.toString(16).padStart(2, '0')} is not sha256, sha1 or ripemd160`, opOffset);
  }
  const digest = r.readBytes(FILE_HASH_OPS[hashOp].length, `the ${hashOp} file digest`);
  const timestamp = readTimestamp(r, digest, opts);
  checkEnd(r);
  return new DetachedTimestampFile(hashOp, timestamp);
}

type WriteItem = { node: Timestamp; depth: number } | Uint8Array;

function writeTimestamp(w: ByteWriter, root: Timestamp): void {
  const stack: WriteItem[] = [{ node: root, depth: 0 }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (item instanceof Uint8Array) {
      w.write(item);
      continue;
    }
    const { node, depth } = item;
    const atts = node.attestations;
    const ops = node.ops;
    const total = atts.length + ops.length;
    if (total === 0) throw new OtsFormatError('ots_empty_timestamp', `empty timestamp on ${node.msg.toString('hex')} (no attestation, no op) cannot be written`);
    if (depth >= MAX_DEPTH) throw new OtsFormatError('ots_too_deep', `timestamp nested deeper than ${MAX_DEPTH - 1} ops cannot be written`);
    // Branch bytes in order; pushed reversed so the stack pops them in order.
    const items: WriteItem[] = [];
    let i = 0;
    for (const a of atts) {
      const prefix = ++i < total ? [0xff, 0x00] : [0x00];
      items.push(Buffer.concat([Buffer.from(prefix), serializeAttestation(a)]));
    }
    for (const { op, timestamp } of ops) {
      const head = new ByteWriter();
      if (++i < total) head.writeByte(0xff);
      head.writeByte(opTag(op));
      const arg = opArg(op);
      if (arg) head.writeVarbytes(arg);
      items.push(head.bytes(), { node: timestamp, depth: depth + 1 });
    }
    for (let k = items.length - 1; k >= 0; k--) stack.push(items[k]!);
  }
}

/** A timestamp without file header (as calendars send them). */
export function serializeTimestamp(ts: Timestamp): Buffer {
  const w = new ByteWriter();
  writeTimestamp(w, ts);
  return w.bytes();
}

export function serializeDetached(file: DetachedTimestampFile): Buffer {
  const w = new ByteWriter();
  w.write(HEADER_MAGIC);
  w.writeVaruint(MAJOR_VERSION);
  w.writeByte(FILE_HASH_OPS[file.hashOp].tag);
  w.write(file.digest);
  writeTimestamp(w, file.timestamp);
  return w.bytes();
}
