/**
 * The `bitcoin` stage on real mainnet data: the shared hello-world `.ots` vector (a Bitcoin
 * attestation at block 358391) against the shared mainnet header for that height.
 */
import { describe, expect, it } from 'vitest';
import { parseDetached } from '../../src/core/ots/codec.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { BitcoinCheckCache, checkBitcoin } from '../../src/core/verify/bitcoin.js';
import { summarizeAttestations } from '../../src/core/verify/ots.js';
import { headersFile, readVector, sharedVectorsFor } from '../witness/ots/vector-files.js';

describe.runIf(sharedVectorsFor('the bitcoin stage on the mainnet hello-world vector (2 tests)'))('bitcoin stage on the hello-world vector', () => {
  // read in the tests, not while collecting: a skipped suite's body still runs
  const summary = () => summarizeAttestations(parseDetached(readVector('hello-world.txt.ots')));

  it('verifies block 358391 against the mainnet header', async () => {
    expect(summary().bitcoin.map((b) => b.height)).toEqual([358391]);
    const out = await checkBitcoin(summary(), { source: new HeadersFileSource(headersFile), network: 'mainnet', cache: new BitcoinCheckCache(), claim: undefined });
    expect(out.check.status).toBe('PASS');
    expect(out.check.detail).toMatch(/^block 358391 0{8}[0-9a-f]{56} \(time 2015-05-28T\d\d:\d\d:\d\dZ\): proof of work and merkle root check out against headers file /);
    expect(out.confirmed).toBe(true);
  });

  it('fails the attestation against that header with its merkle root changed (proof of work no longer holds either)', async () => {
    const header = new HeadersFileSource(headersFile);
    const raw = await header.headerAt(358391);
    const moved = { ...summary(), bitcoin: summary().bitcoin.map((b) => ({ ...b, height: 358392 })) };
    const out = await checkBitcoin(moved, { source: new HeadersFileSource(new Map([[358392, Buffer.concat([raw.subarray(0, 36), Buffer.alloc(32, 1), raw.subarray(68)])]])), network: 'mainnet', cache: new BitcoinCheckCache(), claim: undefined });
    expect(out.check.status).toBe('FAIL');
    expect(out.check.detail).toMatch(/does not meet the target|has merkle root/);
  });
});
