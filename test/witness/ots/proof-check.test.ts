import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BatchTree } from '../../../src/core/batch/batch-tree.js';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { batchProofs } from '../../../src/core/ots/batch-proof.js';
import { HeadersFileSource, type HeaderSource } from '../../../src/adapters/bitcoin/index.js';
import { SHA256, append, prepend } from '../../../src/core/ots/ops.js';
import { DetachedTimestampFile } from '../../../src/core/ots/codec.js';
import { checkDetachedProof } from '../../../src/core/ots/proof-check.js';
import { Timestamp } from '../../../src/core/ots/timestamp.js';
import { mineRegtestHeader } from './bitcoin/regtest-header.js';

function proof() {
  const ds = [createHash('sha256').update('a').digest(), createHash('sha256').update('b').digest()];
  const root = new Timestamp(new BatchTree(ds).root);
  const tip = root.addOp(append(Buffer.alloc(16, 3))).addOp(SHA256);
  tip.addAttestation(pendingAttestation('https://alice.example'));
  const block = tip.addOp(SHA256);
  block.addAttestation(bitcoinAttestation(7));
  // A second path to the same block (as two upgraded calendars give): checked once.
  root.addOp(append(Buffer.alloc(16, 4))).addOp(SHA256).addOp(SHA256).addAttestation(bitcoinAttestation(9));
  return { ds, file: batchProofs(ds, root)[0]!, merkleRoot: block.msg };
}

describe('checkDetachedProof', () => {
  it('reports the digest, the pending calendars and each Bitcoin attestation', async () => {
    const { ds, file, merkleRoot } = proof();
    const source = new HeadersFileSource(new Map([[7, mineRegtestHeader(merkleRoot, 1_700_000_000)]]));
    const check = await checkDetachedProof(file, { expectedDigest: ds[0], source, network: 'regtest' });
    expect(check.digest).toBe('match');
    expect(check.pending).toEqual([{ uri: 'https://alice.example', commitment: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(check.bitcoin.map((b) => [b.height, b.status, b.code])).toEqual([
      [7, 'verified', undefined],
      [9, 'unchecked', 'bitcoin_missing_header'],
    ]);
    expect(check.verified).toMatchObject({ height: 7, time: 1_700_000_000 });
  });

  it('marks attestations unchecked without a source, failed on a wrong block', async () => {
    const { ds, file } = proof();
    const none = await checkDetachedProof(file, { expectedDigest: ds[1] });
    expect(none.digest).toBe('mismatch');
    expect(none.bitcoin.every((b) => b.status === 'unchecked' && b.reason === 'no header source given')).toBe(true);
    const wrongBlock = new HeadersFileSource(new Map([[7, mineRegtestHeader(Buffer.alloc(32, 5))]]));
    const failed = await checkDetachedProof(file, { source: wrongBlock, network: 'regtest' });
    expect(failed.bitcoin[0]).toMatchObject({ status: 'failed', code: 'bitcoin_merkle_mismatch' });
    expect(failed.verified).toBeNull();
  });

  it('checks a block reached by several paths once', async () => {
    const root = new Timestamp(createHash('sha256').update('x').digest());
    // prepend-then-append and append-then-prepend reach the same message, then the same block.
    const a = root.addOp(prepend(Buffer.from('ab', 'hex'))).addOp(append(Buffer.from('cd', 'hex'))).addOp(SHA256);
    const b = root.addOp(append(Buffer.from('cd', 'hex'))).addOp(prepend(Buffer.from('ab', 'hex'))).addOp(SHA256);
    expect(a.msg.equals(b.msg)).toBe(true);
    a.addAttestation(bitcoinAttestation(7));
    b.addAttestation(bitcoinAttestation(7));
    let calls = 0;
    const counting: HeaderSource = { name: 'counting', headerAt: () => (calls++, Promise.reject(new Error('down'))) };
    const check = await checkDetachedProof(new DetachedTimestampFile('sha256', root), { source: counting });
    expect(calls).toBe(1);
    expect(check.bitcoin).toHaveLength(1);
    expect(check.bitcoin[0]).toMatchObject({ status: 'unchecked', code: 'bitcoin_source_error', reason: 'counting: down' });
  });
});
