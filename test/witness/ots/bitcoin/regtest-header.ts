/** Regtest-difficulty headers with real proof of work, for tests (about one nonce in two works). */
import { randomBytes } from 'node:crypto';
import { parseBlockHeader, hashToNumber, targetFromBits } from '../../../../src/core/bitcoin/header.js';

export const REGTEST_BITS = 0x207fffff;

export function mineRegtestHeader(merkleRoot: Buffer, time = 1_700_000_000, prev: Buffer = randomBytes(32)): Buffer {
  const raw = Buffer.alloc(80);
  raw.writeInt32LE(0x20000000, 0);
  prev.copy(raw, 4);
  merkleRoot.copy(raw, 36);
  raw.writeUInt32LE(time, 68);
  raw.writeUInt32LE(REGTEST_BITS, 72);
  const target = targetFromBits(REGTEST_BITS);
  for (let nonce = 0; nonce < 10_000; nonce++) {
    raw.writeUInt32LE(nonce, 76);
    if (hashToNumber(parseBlockHeader(raw).hash) <= target) return raw;
  }
  throw new Error('no nonce in 10000 met the regtest target');
}
