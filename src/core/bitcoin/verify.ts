/**
 * Checking an OTS Bitcoin attestation: fetch the header at the attested height, check
 * its proof of work (its own bits, and the network's easiest target), and that its
 * merkle root is the attested message (internal byte order).
 */
import { BitcoinVerificationError } from './errors.js';
import { type BitcoinNetwork, checkProofOfWork, displayHex, parseBlockHeader } from './header.js';
import type { HeaderSource } from './header-source.js';

export interface VerifiedBlock {
  height: number;
  /** Display order (as explorers print it). */
  block_hash: string;
  /** The header's time, Unix seconds. */
  time: number;
}

export async function verifyBitcoinAttestation(
  msg: Uint8Array,
  height: number,
  source: HeaderSource,
  network: BitcoinNetwork = 'mainnet',
): Promise<VerifiedBlock> {
  if (msg.length !== 32) {
    throw new BitcoinVerificationError('bitcoin_merkle_mismatch', `a Bitcoin attestation commits to a 32-byte merkle root, this one to ${msg.length} bytes`);
  }
  let raw: Buffer;
  try {
    raw = await source.headerAt(height);
  } catch (err) {
    if (err instanceof BitcoinVerificationError) throw err;
    throw new BitcoinVerificationError('bitcoin_source_error', `${source.name}: ${(err as Error).message}`);
  }
  const header = parseBlockHeader(raw);
  checkProofOfWork(header, network);
  if (!header.merkleRoot.equals(msg)) {
    throw new BitcoinVerificationError(
      'bitcoin_merkle_mismatch',
      `block ${height} (${displayHex(header.hash)}) has merkle root ${displayHex(header.merkleRoot)}, the proof commits to ${displayHex(msg)}`,
    );
  }
  return { height, block_hash: displayHex(header.hash), time: header.time };
}

/**
 * How many blocks the source's chain holds from the attested one (itself counted), up to
 * `need`: each following header must meet its proof of work and name the one before as
 * its parent. A header the source lacks ends the count (not an error: not yet mined).
 */
export async function countConfirmations(height: number, blockHash: string, need: number, source: HeaderSource, network: BitcoinNetwork = 'mainnet'): Promise<number> {
  let parent = blockHash;
  let count = 1;
  for (let h = height + 1; count < need; h++) {
    let raw: Buffer;
    try {
      raw = await source.headerAt(h);
    } catch {
      return count;
    }
    const header = parseBlockHeader(raw);
    checkProofOfWork(header, network);
    if (displayHex(header.prevBlock) !== parent) {
      throw new BitcoinVerificationError('bitcoin_bad_header', `block ${h} (${displayHex(header.hash)}) does not follow block ${h - 1} ${parent} in ${source.name}`);
    }
    parent = displayHex(header.hash);
    count++;
  }
  return count;
}
