/**
 * Bitcoin block headers (80 bytes) with real proof of work: what `POST /mine` appends to
 * the headers file. Hashes are in internal byte order unless a name says "display".
 */
import { sha256 } from '../../core/aer1/hash.js';

/** Regtest's proof-of-work limit as compact bits: about one hash in two qualifies. */
export const REGTEST_BITS = 0x207fffff;

export function sha256d(data: Uint8Array): Buffer {
  return sha256(sha256(data));
}

/** The 256-bit target encoded by compact `bits` (negative or overflowing forms are refused). */
export function targetFromBits(bits: number): bigint {
  const exponent = bits >>> 24;
  const mantissa = bits & 0x007fffff;
  if (bits & 0x00800000) throw new RangeError(`bits ${bits.toString(16)} encode a negative target`);
  const target =
    exponent <= 3 ? BigInt(mantissa >>> (8 * (3 - exponent))) : BigInt(mantissa) << BigInt(8 * (exponent - 3));
  if (target >> 256n !== 0n) throw new RangeError(`bits ${bits.toString(16)} overflow 256 bits`);
  return target;
}

/** A hash (internal byte order) read as Bitcoin reads it: a little-endian number. */
export function hashToBigInt(hash: Uint8Array): bigint {
  return BigInt('0x' + (Buffer.from(hash).reverse().toString('hex') || '0'));
}

export function meetsTarget(headerHash: Uint8Array, bits: number): boolean {
  return hashToBigInt(headerHash) <= targetFromBits(bits);
}

export interface HeaderFields {
  version: number;
  /** Previous block hash, internal byte order (32 zero bytes for the first block). */
  prevHash: Buffer;
  /** Merkle root, internal byte order: the message a Bitcoin attestation commits to. */
  merkleRoot: Buffer;
  time: number;
  bits: number;
  nonce: number;
}

export function serializeHeader(h: HeaderFields): Buffer {
  if (h.prevHash.length !== 32 || h.merkleRoot.length !== 32) throw new RangeError('header hashes are 32 bytes');
  const out = Buffer.alloc(80);
  out.writeInt32LE(h.version, 0);
  h.prevHash.copy(out, 4);
  h.merkleRoot.copy(out, 36);
  out.writeUInt32LE(h.time, 68);
  out.writeUInt32LE(h.bits >>> 0, 72);
  out.writeUInt32LE(h.nonce >>> 0, 76);
  return out;
}

export function parseHeader(header: Buffer): HeaderFields {
  if (header.length !== 80) throw new RangeError(`a block header is 80 bytes, got ${header.length}`);
  return {
    version: header.readInt32LE(0),
    prevHash: Buffer.from(header.subarray(4, 36)),
    merkleRoot: Buffer.from(header.subarray(36, 68)),
    time: header.readUInt32LE(68),
    bits: header.readUInt32LE(72),
    nonce: header.readUInt32LE(76),
  };
}

/**
 * Searches nonces until the header's double SHA-256 meets its target. At regtest bits
 * this takes a couple of tries; harder bits are refused after `maxTries`.
 */
export function mineHeader(fields: Omit<HeaderFields, 'nonce'>, maxTries = 1_000_000): { header: Buffer; hash: Buffer } {
  const target = targetFromBits(fields.bits);
  const header = serializeHeader({ ...fields, nonce: 0 });
  for (let nonce = 0; nonce < maxTries; nonce++) {
    header.writeUInt32LE(nonce, 76);
    const hash = sha256d(header);
    if (hashToBigInt(hash) <= target) return { header, hash };
  }
  throw new RangeError(`no nonce below ${maxTries} meets bits ${fields.bits.toString(16)}`);
}
