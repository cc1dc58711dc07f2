import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BitcoinVerificationError, POW_LIMITS, checkProofOfWork, displayHex, parseBlockHeader, targetFromBits } from '../../../../src/adapters/bitcoin/index.js';
import { headersFile, sharedVectorsFor } from '../vector-files.js';
import { mineRegtestHeader } from './regtest-header.js';

function code(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return (e as BitcoinVerificationError).code;
  }
}

describe('compact bits', () => {
  it('decode as Bitcoin Core SetCompact does', () => {
    expect(targetFromBits(0x1d00ffff)).toBe(0xffffn << 208n);
    expect(targetFromBits(0x01123456)).toBe(0x12n);
    expect(targetFromBits(0x02008000)).toBe(0x80n);
    expect(targetFromBits(0x05009234)).toBe(0x92340000n);
    expect(targetFromBits(0x20123456)).toBe(0x123456n << 232n);
    expect(targetFromBits(0x181686f5)).toBe(0x1686f5n << 168n);
  });

  it('refuse negative, overflowing and zero targets', () => {
    expect(code(() => targetFromBits(0x04923456))).toBe('bitcoin_bad_bits');
    expect(code(() => targetFromBits(0x01fedcba))).toBe('bitcoin_bad_bits');
    expect(code(() => targetFromBits(0xff123456))).toBe('bitcoin_bad_bits');
    expect(code(() => targetFromBits(0x22000100))).toBe('bitcoin_bad_bits');
    expect(code(() => targetFromBits(0x00000000))).toBe('bitcoin_bad_bits');
    expect(code(() => targetFromBits(0x01003456))).toBe('bitcoin_bad_bits');
  });

  it('place the network limits where chainparams puts them', () => {
    expect(POW_LIMITS.mainnet.toString(16).padStart(64, '0')).toBe('00000000' + 'f'.repeat(56));
    expect(POW_LIMITS.regtest.toString(16)).toBe('7' + 'f'.repeat(63));
    // The easiest mainnet difficulty (genesis bits) is within the limit; one step easier is not.
    expect(targetFromBits(0x1d00ffff) <= POW_LIMITS.mainnet).toBe(true);
    expect(targetFromBits(0x1d010000) > POW_LIMITS.mainnet).toBe(true);
  });
});

describe('block headers', () => {
  it('refuse anything but 80 bytes', () => {
    expect(code(() => parseBlockHeader(Buffer.alloc(79)))).toBe('bitcoin_bad_header');
    expect(code(() => parseBlockHeader(Buffer.alloc(81)))).toBe('bitcoin_bad_header');
  });

  it('a regtest header passes on regtest and is too easy for mainnet', () => {
    const raw = mineRegtestHeader(Buffer.alloc(32, 1));
    const header = parseBlockHeader(raw);
    expect(code(() => checkProofOfWork(header, 'regtest'))).toBe('ok');
    expect(code(() => checkProofOfWork(header, 'mainnet'))).toBe('bitcoin_target_too_easy');
  });

  it('a regtest header whose hash misses its target fails', () => {
    const raw = mineRegtestHeader(Buffer.alloc(32, 2));
    // Find a nonce that misses (about one in two does).
    for (let n = 0; n < 1000; n++) {
      raw.writeUInt32LE(n, 76);
      const h = parseBlockHeader(raw);
      if (h.hash[31]! & 0x80) {
        expect(code(() => checkProofOfWork(h, 'regtest'))).toBe('bitcoin_bad_pow');
        return;
      }
    }
    throw new Error('no missing nonce found in 1000');
  });
});

describe.runIf(sharedVectorsFor('the shared mainnet headers vector (block 358391)'))('the shared headers vector', () => {
  it('block 358391 parses, hashes and meets mainnet proof of work', () => {
    const hex = (JSON.parse(readFileSync(headersFile, 'utf8')) as Record<string, string>)['358391']!;
    const header = parseBlockHeader(Buffer.from(hex, 'hex'));
    expect(displayHex(header.hash)).toBe('000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319');
    expect(displayHex(header.merkleRoot)).toBe('8a1b66ecb7cbd07d8139a7e7d7f2c41aab1f5009b8364aaf61d03ad245e47e00');
    expect(header.time).toBe(1432827678);
    expect(header.bits).toBe(0x181686f5);
    expect(header.version).toBe(2);
    expect(code(() => checkProofOfWork(header, 'mainnet'))).toBe('ok');
    const tampered = Buffer.from(header.raw);
    tampered.writeUInt32LE((header.nonce ^ 1) >>> 0, 76);
    expect(code(() => checkProofOfWork(parseBlockHeader(tampered), 'mainnet'))).toBe('bitcoin_bad_pow');
  });
});
