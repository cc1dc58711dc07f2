/**
 * Timestamp operations: the edges of a timestamp tree. Tags, argument limits and
 * message limits follow python-opentimestamps `opentimestamps/core/op.py`.
 */
import * as crypto from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { OtsFormatError } from './errors.js';

export type UnaryOpKind = 'sha256' | 'sha1' | 'ripemd160' | 'keccak256' | 'reverse' | 'hexlify';
export type BinaryOpKind = 'append' | 'prepend';
export type Op = { readonly kind: UnaryOpKind } | { readonly kind: BinaryOpKind; readonly arg: Buffer };

/** Longest message an op may read, and longest result it may produce. */
export const MAX_MSG_LENGTH = 4096;
export const MAX_RESULT_LENGTH = 4096;

export const OP_TAGS: Readonly<Record<Op['kind'], number>> = {
  sha1: 0x02,
  ripemd160: 0x03,
  sha256: 0x08,
  keccak256: 0x67,
  append: 0xf0,
  prepend: 0xf1,
  reverse: 0xf2,
  hexlify: 0xf3,
};

const KIND_BY_TAG = new Map<number, Op['kind']>(Object.entries(OP_TAGS).map(([k, t]) => [t, k as Op['kind']]));

export function opKindForTag(tag: number): Op['kind'] | undefined {
  return KIND_BY_TAG.get(tag);
}

export function isBinaryKind(kind: Op['kind']): kind is BinaryOpKind {
  return kind === 'append' || kind === 'prepend';
}

export const SHA256: Op = { kind: 'sha256' };
export const SHA1: Op = { kind: 'sha1' };
export const RIPEMD160: Op = { kind: 'ripemd160' };
export const KECCAK256: Op = { kind: 'keccak256' };
export const REVERSE: Op = { kind: 'reverse' };
export const HEXLIFY: Op = { kind: 'hexlify' };

export function append(arg: Uint8Array): Op {
  return binary('append', arg);
}

export function prepend(arg: Uint8Array): Op {
  return binary('prepend', arg);
}

function binary(kind: BinaryOpKind, arg: Uint8Array): Op {
  if (arg.length < 1 || arg.length > MAX_RESULT_LENGTH) {
    throw new OtsFormatError('ots_bad_op_arg', `${kind} argument must be 1..${MAX_RESULT_LENGTH} bytes, got ${arg.length}`);
  }
  return { kind, arg: Buffer.from(arg) };
}

/** The argument of a binary op, or undefined for a unary one. */
export function opArg(op: Op): Buffer | undefined {
  return 'arg' in op ? op.arg : undefined;
}

// crypto.hash (one-shot, Node >= 20.12) is markedly cheaper than createHash per call.
const oneShot = typeof crypto.hash === 'function';

function nodeHash(name: string, msg: Uint8Array): Buffer {
  return oneShot ? crypto.hash(name, msg, 'buffer') : crypto.createHash(name).update(msg).digest();
}

/**
 * Applies an op to a message, with python-opentimestamps' limits: messages up to 4096
 * bytes (hexlify: 2048), results up to 4096, no reverse/hexlify of an empty message.
 * Throws OtsFormatError('ots_message_too_long' | 'ots_bad_message').
 */
export function applyOp(op: Op, msg: Uint8Array): Buffer {
  const maxMsg = op.kind === 'hexlify' ? MAX_RESULT_LENGTH / 2 : MAX_MSG_LENGTH;
  if (msg.length > maxMsg) {
    throw new OtsFormatError('ots_message_too_long', `${op.kind} on a ${msg.length}-byte message (limit ${maxMsg})`);
  }
  let result: Buffer;
  switch (op.kind) {
    case 'sha256':
      result = nodeHash('sha256', msg);
      break;
    case 'sha1':
      result = nodeHash('sha1', msg);
      break;
    case 'ripemd160':
      result = nodeHash('ripemd160', msg);
      break;
    case 'keccak256':
      // the original Keccak padding (python-opentimestamps' OpKECCAK256), not SHA3-256
      result = Buffer.from(keccak_256(msg));
      break;
    case 'append':
      result = Buffer.concat([msg, op.arg]);
      break;
    case 'prepend':
      result = Buffer.concat([op.arg, msg]);
      break;
    case 'reverse':
      if (msg.length === 0) throw new OtsFormatError('ots_bad_message', 'reverse of an empty message');
      result = Buffer.from(msg).reverse();
      break;
    case 'hexlify':
      if (msg.length === 0) throw new OtsFormatError('ots_bad_message', 'hexlify of an empty message');
      result = Buffer.from(Buffer.from(msg).toString('hex'), 'latin1');
      break;
  }
  if (result.length > MAX_RESULT_LENGTH) {
    throw new OtsFormatError('ots_message_too_long', `${opToString(op)} gives a ${result.length}-byte message (limit ${MAX_RESULT_LENGTH})`);
  }
  return result;
}

/** Applies ops in order. */
export function evaluateOps(msg: Uint8Array, ops: readonly Op[]): Buffer {
  let m: Buffer = Buffer.from(msg);
  for (const op of ops) m = applyOp(op, m);
  return m;
}

/** python-opentimestamps order: by tag, then by argument (bytes, shorter prefix first). */
export function compareOps(a: Op, b: Op): number {
  const ta = OP_TAGS[a.kind];
  const tb = OP_TAGS[b.kind];
  if (ta !== tb) return ta - tb;
  const aa = opArg(a);
  const ab = opArg(b);
  return aa && ab ? Buffer.compare(aa, ab) : 0;
}

export function opsEqual(a: Op, b: Op): boolean {
  return compareOps(a, b) === 0;
}

/** `sha256`, `append 0a1b…`, as `ots info` prints them. */
export function opToString(op: Op): string {
  const arg = opArg(op);
  return arg ? `${op.kind} ${arg.toString('hex')}` : op.kind;
}

/** The bytes of an op: tag, then varbytes argument for append/prepend. */
export function opTag(op: Op): number {
  return OP_TAGS[op.kind];
}
