/**
 * Fuzzing the proof JSON parser (parseAnchorProof) and the verifier pipeline behind it
 * (verifyAnchor): arbitrary JSON never crashes them (only InputError from the parser, only
 * UsageError out of the pipeline, every other problem a FAIL line); and a structurally
 * mutated genuine input (document + attached proof) that still PASSes is the same anchor:
 * same envelope digest, same signed event, no Bitcoin block the original did not have, and
 * no OTS confirmation for a proof that was only pending.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Aer1Error, InputError, UsageError } from '../../src/core/errors/errors.js';
import { parseAnchorProof } from '../../src/core/proof/format.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { loadFixture } from '../fixtures/index.js';
import { attach, batchModeProofs, envelopeModeProof, receiptNumber, type Json } from '../verify/build-proofs.js';
import { jsonMutation, mutateJson } from './json-mutation.js';
import { fuzzParams } from './settings.js';

const HEIGHT = 321;
const receipt = receiptNumber(1);
const workflow = loadFixture('workflow-receipt-example');
const chain = loadFixture<{ entries: Json[] }>('aer1-chain-v07');
const confirmedReceipt = envelopeModeProof(receipt, { mineAt: HEIGHT });
const pendingWorkflow = envelopeModeProof(workflow, { nostrStatus: 'pending' });
const confirmedChain = envelopeModeProof({ entries: chain.entries }, { mineAt: HEIGHT + 1 });
const batch = batchModeProofs([receiptNumber(2), receiptNumber(3), receiptNumber(4)], { mineAt: HEIGHT + 2 });

const headers = new Map<number, Buffer>();
for (const b of [confirmedReceipt.block, confirmedChain.block, batch.block]) if (b) headers.set(b.height, b.header);

interface Genuine {
  name: string;
  value: Json;
  report?: VerifyReport;
}

const genuine: Genuine[] = [
  { name: 'confirmed receipt', value: attach(receipt, confirmedReceipt.proof) },
  { name: 'pending workflow close', value: attach(workflow, pendingWorkflow.proof) },
  { name: 'confirmed job timeline', value: attach({ entries: chain.entries }, confirmedChain.proof) },
  { name: 'batch-mode receipt', value: attach(receiptNumber(3), batch.proofs[1]!) },
  { name: 'standalone proof', value: confirmedReceipt.proof },
];

/** Verifies; a rejection other than UsageError is a crash (rethrown). */
async function verify(value: unknown, opts: VerifyOptions): Promise<VerifyReport | null> {
  try {
    return await verifyAnchor({ value }, opts);
  } catch (err) {
    if (err instanceof UsageError) return null;
    throw err;
  }
}

function verifiedBlocks(r: VerifyReport): string[] {
  return (r.witnesses.ots?.bitcoin ?? []).filter((b) => b.verified).map((b) => `${b.height}:${b.block_hash}`);
}

describe('the proof parser and the verifier under fuzzing', () => {
  // some headers were cached by an earlier genuine run: each verification gets a fresh source
  const opts = (): VerifyOptions => ({ headerSource: new HeadersFileSource(headers), network: 'regtest' });

  it('the genuine inputs pass (confirmed where mined)', async () => {
    for (const g of genuine) {
      g.report = (await verify(g.value, opts()))!;
      expect(g.report.verdict, `${g.name}: ${g.report.reason}`).toBe('PASS');
    }
    expect(genuine[0]!.report!.witnesses.ots?.verified).toBe('confirmed');
    expect(genuine[1]!.report!.witnesses.ots?.verified).toBe('pending');
  });

  it('arbitrary JSON: parseAnchorProof throws only InputError; verifyAnchor only UsageError', async () => {
    let slowest = 0;
    const input = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      // proof-shaped objects with arbitrary members
      fc.record({ version: fc.constantFrom('aer1-anchor-proof-v1', 'x'), envelope: fc.jsonValue({ maxDepth: 2 }), digest: fc.oneof(fc.string(), fc.constant('ab'.repeat(32))), status: fc.jsonValue({ maxDepth: 1 }), nostr: fc.jsonValue({ maxDepth: 3 }), ots: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: ['version'] }),
    );
    await fc.assert(
      fc.asyncProperty(input, fc.boolean(), async (v, asAttached) => {
        try {
          parseAnchorProof(v);
        } catch (err) {
          expect(err).toBeInstanceOf(InputError);
        }
        const value = asAttached ? { ...receipt, anchor_proof: v } : v;
        const t0 = performance.now();
        const report = await verify(value, opts());
        slowest = Math.max(slowest, performance.now() - t0);
        if (report) expect(report.verdict).toBe('FAIL');
      }),
      fuzzParams(1500),
    );
    console.log(`fuzz proofs arbitrary: slowest verification ${slowest.toFixed(1)} ms`);
  });

  it('mutated genuine inputs: no crash; a mutant that passes is the same anchor', { timeout: 120_000 }, async () => {
    const counts = { usage: 0, fail: 0, pass: 0 };
    let slowest = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat(genuine.length - 1), fc.array(jsonMutation, { minLength: 1, maxLength: 3 }), async (i, mutations) => {
        const g = genuine[i]!;
        const mutant = mutations.reduce<unknown>((v, m) => mutateJson(v, m), g.value);
        const t0 = performance.now();
        const report = await verify(mutant, opts());
        slowest = Math.max(slowest, performance.now() - t0);
        if (!report) {
          counts.usage++;
          return;
        }
        for (const c of report.checks) expect(c.detail).not.toMatch(/\n/);
        if (report.verdict === 'FAIL') {
          counts.fail++;
          return;
        }
        counts.pass++;
        const original = g.report!;
        expect(report.subject.digest, g.name).toBe(original.subject.digest);
        expect(report.subject.key, g.name).toBe(original.subject.key);
        if (report.witnesses.nostr?.event_id) expect(report.witnesses.nostr.event_id).toBe(original.witnesses.nostr?.event_id);
        for (const b of verifiedBlocks(report)) expect(verifiedBlocks(original)).toContain(b);
        if (original.witnesses.ots?.verified !== 'confirmed') expect(report.witnesses.ots?.verified).not.toBe('confirmed');
      }),
      fuzzParams(1500),
    );
    expect(counts.fail).toBeGreaterThan(0);
    console.log(`fuzz proofs mutations: ${JSON.stringify(counts)}, slowest verification ${slowest.toFixed(1)} ms`);
  });

  it('mutated proof text (bytes of the JSON): parse errors or the same outcomes as above', async () => {
    const text = JSON.stringify(genuine[0]!.value);
    await fc.assert(
      fc.asyncProperty(fc.nat(text.length - 1), fc.integer({ min: 1, max: 127 }), async (at, xor) => {
        const mutated = text.slice(0, at) + String.fromCharCode(text.charCodeAt(at) ^ xor) + text.slice(at + 1);
        let value: unknown;
        try {
          value = JSON.parse(mutated);
        } catch {
          return;
        }
        const report = await verify(value, opts());
        if (report?.verdict === 'PASS') expect(report.subject.digest).toBe(genuine[0]!.report!.subject.digest);
      }),
      fuzzParams(1500),
    );
  });

  it('errors thrown are typed: parseAnchorProof on mutated genuine proofs', () => {
    fc.assert(
      fc.property(fc.array(jsonMutation, { minLength: 1, maxLength: 3 }), (mutations) => {
        const mutant = mutations.reduce<unknown>((v, m) => mutateJson(v, m), confirmedReceipt.proof);
        try {
          parseAnchorProof(mutant);
        } catch (err) {
          expect(err).toBeInstanceOf(Aer1Error);
        }
      }),
      fuzzParams(2000),
    );
  });
});
