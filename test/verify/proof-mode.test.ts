/**
 * `nostr.mode` in a proof (auto mode says which kind of event a subject got): optional and
 * informative, checked against the proof's shape; a contradiction is refused by field name.
 */
import { describe, expect, it } from 'vitest';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { parseAnchorProof } from '../../src/core/proof/format.js';
import { InputError } from '../../src/core/errors/errors.js';
import { loadFixture } from '../fixtures/index.js';
import { attach, batchModeProofs, envelopeModeProof, receiptNumber, type Json } from './build-proofs.js';

const receipt = loadFixture('receipt-minimal');

function withMode(proof: Json, mode: unknown): Json {
  return { ...proof, nostr: { ...(proof.nostr as Json), mode } };
}

describe('nostr.mode in a proof', () => {
  it('passes when it names the proof\'s own shape, and the report says the same mode', async () => {
    const env = envelopeModeProof(receipt, { noOts: true }).proof;
    const r1 = await verifyAnchor({ value: attach(receipt, withMode(env, 'envelope')) });
    expect(r1.verdict).toBe('PASS');
    expect(r1.witnesses.nostr?.mode).toBe('envelope');
    const docs = [receiptNumber(1), receiptNumber(2), receiptNumber(3)];
    const { proofs } = batchModeProofs(docs, { noOts: true });
    const r2 = await verifyAnchor({ value: attach(docs[1], withMode(proofs[1]!, 'batch')) });
    expect(r2.verdict).toBe('PASS');
    expect(r2.witnesses.nostr?.mode).toBe('batch');
  });

  it('refuses a mode that contradicts the shape, or an unknown one, naming nostr.mode', async () => {
    const env = envelopeModeProof(receipt, { noOts: true }).proof;
    const batch = batchModeProofs([receiptNumber(1), receiptNumber(2)], { noOts: true }).proofs[0]!;
    for (const [proof, mode, msg] of [
      [env, 'batch', /needs the batch inclusion path/],
      [batch, 'envelope', /contradicts itself/],
      [env, 'auto', /expected "envelope" or "batch"/],
    ] as const) {
      let err: unknown;
      try {
        parseAnchorProof(withMode(proof, mode));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InputError);
      expect((err as InputError).message).toMatch(msg);
      expect((err as InputError).field).toBe('anchor_proof.nostr.mode');
    }
    // what the verifier makes of it: the input check fails, naming the member
    const report = await verifyAnchor({ value: attach(receipt, withMode(env, 'batch')) });
    expect(report.verdict).toBe('FAIL');
    expect(report.checks.find((c) => c.name === 'input')).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('anchor_proof.nostr.mode') });
  });
});
