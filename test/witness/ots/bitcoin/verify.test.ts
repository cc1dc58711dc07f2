import { describe, expect, it } from 'vitest';
import { BitcoinVerificationError, HeadersFileSource, type HeaderSource, verifyBitcoinAttestation } from '../../../../src/adapters/bitcoin/index.js';
import { parseDetached } from '../../../../src/core/ots/codec.js';
import { bitcoinAttestations } from '../../../../src/core/ots/timestamp.js';
import { headersFile, readVector, sharedVectorsFor } from '../vector-files.js';
import { mineRegtestHeader } from './regtest-header.js';

async function failure(p: Promise<unknown>): Promise<BitcoinVerificationError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(BitcoinVerificationError);
    return e as BitcoinVerificationError;
  }
  throw new Error('verification succeeded');
}

describe.runIf(sharedVectorsFor('verifying Bitcoin attestations of the shared vectors (3 tests)'))('verifying Bitcoin attestations of the shared vectors', () => {
  it('hello-world.txt.ots checks out at block 358391, time 1432827678', async () => {
    const [att] = bitcoinAttestations(parseDetached(readVector('hello-world.txt.ots')).timestamp);
    const result = await verifyBitcoinAttestation(att!.merkleRoot, att!.height, new HeadersFileSource(headersFile));
    expect(result).toEqual({ height: 358391, block_hash: '000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319', time: 1432827678 });
  });

  it('bad-stamp.txt.ots fails: its message is not the merkle root of block 358391', async () => {
    const [att] = bitcoinAttestations(parseDetached(readVector('bad-stamp.txt.ots')).timestamp);
    const e = await failure(verifyBitcoinAttestation(att!.merkleRoot, att!.height, new HeadersFileSource(headersFile)));
    expect(e.code).toBe('bitcoin_merkle_mismatch');
    expect(e.transient).toBe(false);
    expect(e.message).toMatch(/merkle root 8a1b66ec.*commits to/);
  });

  it('a height the source lacks is a missing header', async () => {
    const [att] = bitcoinAttestations(parseDetached(readVector('hello-world.txt.ots')).timestamp);
    const e = await failure(verifyBitcoinAttestation(att!.merkleRoot, 358392, new HeadersFileSource(headersFile)));
    expect(e.code).toBe('bitcoin_missing_header');
  });
});

describe('verifyBitcoinAttestation', () => {
  const root = Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1));
  const regtest = mineRegtestHeader(root, 1_700_000_123);
  const source = new HeadersFileSource(new Map([[7, regtest]]));

  it('accepts a regtest block on regtest and names its hash and time', async () => {
    const r = await verifyBitcoinAttestation(root, 7, source, 'regtest');
    expect(r.height).toBe(7);
    expect(r.time).toBe(1_700_000_123);
    expect(r.block_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses the same block on mainnet (easier than mainnet allows)', async () => {
    expect((await failure(verifyBitcoinAttestation(root, 7, source))).code).toBe('bitcoin_target_too_easy');
  });

  it('refuses a merkle root in display order (the bytes must be internal order)', async () => {
    const display = Buffer.from(root).reverse();
    expect((await failure(verifyBitcoinAttestation(display, 7, source, 'regtest'))).code).toBe('bitcoin_merkle_mismatch');
  });

  it('refuses a message that is not 32 bytes', async () => {
    expect((await failure(verifyBitcoinAttestation(Buffer.alloc(20), 7, source, 'regtest'))).code).toBe('bitcoin_merkle_mismatch');
  });

  it('refuses a header with broken proof of work', async () => {
    const broken = Buffer.from(regtest);
    for (let n = 0; n < 1000; n++) {
      broken.writeUInt32LE(n, 76);
      const s = new HeadersFileSource(new Map([[7, broken]]));
      try {
        await verifyBitcoinAttestation(root, 7, s, 'regtest');
      } catch (e) {
        expect((e as BitcoinVerificationError).code).toBe('bitcoin_bad_pow');
        return;
      }
    }
    throw new Error('every nonce met the target');
  });

  it('turns a source that throws anything into a transient source error', async () => {
    const flaky: HeaderSource = { name: 'flaky', headerAt: () => Promise.reject(new Error('socket hang up')) };
    const e = await failure(verifyBitcoinAttestation(root, 7, flaky, 'regtest'));
    expect(e.code).toBe('bitcoin_source_error');
    expect(e.message).toBe('flaky: socket hang up');
    expect(e.transient).toBe(true);
  });
});
