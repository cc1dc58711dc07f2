/**
 * Bitcoin block headers (80 bytes): fields, block hash (double SHA-256), the target
 * encoded in compact `bits` (Bitcoin Core `arith_uint256::SetCompact`) and the
 * proof-of-work check (`CheckProofOfWork`), with each network's easiest allowed target.
 * Hashes are in internal byte order; `displayHex` gives what explorers print.
 */
import { createHash } from 'node:crypto';
import { BitcoinVerificationError } from './errors.js';

export type BitcoinNetwork = 'mainnet' | 'regtest';
export const BITCOIN_NETWORKS: readonly BitcoinNetwork[] = ['mainnet', 'regtest'];

/** consensus.powLimit of each network (chainparams.cpp). */
export const POW_LIMITS: Readonly<Record<BitcoinNetwork, bigint>> = {
  mainnet: BigInt('0x00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff'),
  regtest: BigInt('0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff'),
};

export const HEADER_LENGTH = 80;

export interface BlockHeader {
  version: number;
  /** Previous block hash, internal byte order. */
  prevBlock: Buffer;
  /** Merkle root, internal byte order (what an OTS Bitcoin attestation's message equals). */
  merkleRoot: Buffer;
  time: number;
  bits: number;
  nonce: number;
  /** Block hash, internal byte order. */
  hash: Buffer;
  raw: Buffer;
}

export function sha256d(data: Uint8Array): Buffer {
  return createHash('sha256').update(createHash('sha256').update(data).digest()).digest();
}

/** Reversed hex: how explorers and bitcoind print hashes. */
export function displayHex(internal: Uint8Array): string {
  return Buffer.from(internal).reverse().toString('hex');
}

export function parseBlockHeader(raw: Uint8Array): BlockHeader {
  if (raw.length !== HEADER_LENGTH) {
    throw new BitcoinVerificationError('bitcoin_bad_header', `a block header is ${HEADER_LENGTH} bytes, got ${raw.length}`);
  }
  const b = Buffer.from(raw);
  return {
    version: b.readInt32LE(0),
    prevBlock: b.subarray(4, 36),
    merkleRoot: b.subarray(36, 68),
    time: b.readUInt32LE(68),
    bits: b.readUInt32LE(72),
    nonce: b.readUInt32LE(76),
    hash: sha256d(b),
    raw: b,
  };
}

/** The target a compact `bits` encodes; negative, overflowing and zero targets are refused. */
export function targetFromBits(bits: number): bigint {
  const size = bits >>> 24;
  const word = bits & 0x007fffff;
  const hex = `0x${(bits >>> 0).toString(16).padStart(8, '0')}`;
  if (word !== 0 && (bits & 0x00800000) !== 0) throw new BitcoinVerificationError('bitcoin_bad_bits', `bits ${hex} encode a negative target`);
  if (word !== 0 && (size > 34 || (word > 0xff && size > 33) || (word > 0xffff && size > 32))) {
    throw new BitcoinVerificationError('bitcoin_bad_bits', `bits ${hex} overflow 256 bits`);
  }
  const target = size <= 3 ? BigInt(word >>> (8 * (3 - size))) : BigInt(word) << BigInt(8 * (size - 3));
  if (target === 0n) throw new BitcoinVerificationError('bitcoin_bad_bits', `bits ${hex} encode a zero target`);
  return target;
}

/** A hash as Bitcoin compares it with a target: a little-endian 256-bit number. */
export function hashToNumber(hash: Uint8Array): bigint {
  return BigInt(`0x${displayHex(hash)}`);
}

/**
 * The header's hash meets the target in its own `bits`, and that target is no easier
 * than the network allows. Throws BitcoinVerificationError otherwise.
 */
export function checkProofOfWork(header: BlockHeader, network: BitcoinNetwork): void {
  const target = targetFromBits(header.bits);
  if (target > POW_LIMITS[network]) {
    throw new BitcoinVerificationError(
      'bitcoin_target_too_easy',
      `block ${displayHex(header.hash)}: bits 0x${header.bits.toString(16)} allow a target easier than ${network} permits`,
    );
  }
  if (hashToNumber(header.hash) > target) {
    throw new BitcoinVerificationError('bitcoin_bad_pow', `block ${displayHex(header.hash)} does not meet the target of its bits 0x${header.bits.toString(16)}`);
  }
}
