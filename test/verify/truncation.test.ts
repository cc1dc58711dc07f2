import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import type { CheckName } from '../../src/core/verify/types.js';
import { loadFixture, type ChainVector, type WorkflowExample } from '../fixtures/index.js';
import { attach, envelopeModeProof, type Json } from './build-proofs.js';

const workflow = loadFixture<WorkflowExample>('workflow-receipt-example');
const receipt = loadFixture('receipt-minimal');
const chain = loadFixture<ChainVector>('aer1-chain-v07');

function check(report: VerifyReport, name: CheckName): { status: string; detail: string } {
  return report.checks.find((c) => c.name === name)!;
}

function failing(report: VerifyReport): string[] {
  return report.checks.filter((c) => c.status === 'FAIL').map((c) => c.name);
}

function withSteps(steps: Json[], extra: Json = {}): WorkflowExample {
  return { ...workflow, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)), ...extra };
}

describe('workflow closes against their anchored root', () => {
  const anchored = envelopeModeProof(workflow).proof;

  it('passes the untouched close', async () => {
    const report = await verifyAnchor({ value: attach(workflow, anchored) });
    expect(report.verdict).toBe('PASS');
    expect(check(report, 'recompute')).toEqual({ name: 'recompute', status: 'PASS', detail: `merkle root ${workflow.merkle_root} over 5 steps (receipt-id-v0)` });
  });

  it('names truncation with both counts when the last step is removed and the root recomputed', async () => {
    const truncated = withSteps(workflow.steps.slice(0, 4));
    const report = await verifyAnchor({ value: attach(truncated, anchored) });
    expect(check(report, 'recompute').status).toBe('PASS');
    expect(check(report, 'envelope')).toMatchObject({ status: 'FAIL', detail: 'truncated: anchored 5 steps, receipt has 4' });
    expect(failing(report)).toEqual(['envelope']);
    expect(report.reason).toBe('envelope: truncated: anchored 5 steps, receipt has 4');
  });

  it('puts truncation first in the verdict even when the stale declared root also fails recompute', async () => {
    const report = await verifyAnchor({ value: attach({ ...workflow, steps: workflow.steps.slice(0, 4) }, anchored) });
    expect(failing(report)).toEqual(['recompute', 'envelope']);
    expect(report.reason).toBe('envelope: truncated: anchored 5 steps, receipt has 4 (also failing: recompute)');
  });

  it('names alteration when one step is altered and the root recomputed (same count)', async () => {
    const steps = workflow.steps.map((s, i) => (i === 2 ? { ...s, receipt_id: 'a090bdad-0000-48c9-bc89-e9e17700fb15' } : s));
    const altered = withSteps(steps);
    const report = await verifyAnchor({ value: attach(altered, anchored) });
    expect(check(report, 'recompute').status).toBe('PASS');
    expect(check(report, 'envelope')).toMatchObject({
      status: 'FAIL',
      detail: `altered: anchored merkle_root ${workflow.merkle_root}, its steps give ${altered.merkle_root} (same 5 steps)`,
    });
    expect(failing(report)).toEqual(['envelope']);
  });

  it('fails recompute and envelope when a step is altered and the declared root left alone', async () => {
    const steps = workflow.steps.map((s, i) => (i === 0 ? { ...s, receipt_id: 'e80168eb-0000-4ec9-8478-ac108f9397ff' } : s));
    const report = await verifyAnchor({ value: attach({ ...workflow, steps }, anchored) });
    expect(check(report, 'recompute').detail).toMatch(/^merkle_root declares [0-9a-f]{64}, the 5 steps give [0-9a-f]{64} under receipt-id-v0$/);
    expect(failing(report)).toEqual(['recompute', 'envelope']);
    expect(check(report, 'envelope').detail).toMatch(/^altered: anchored merkle_root/);
  });

  it('fails an extended workflow as altered, naming both counts', async () => {
    const extra = { ...workflow.steps[4]!, seq: 6, receipt_id: 'f0000000-0000-4000-8000-000000000006' };
    const report = await verifyAnchor({ value: attach(withSteps([...workflow.steps, extra]), anchored) });
    expect(check(report, 'envelope').detail).toBe('altered: anchored 5 steps, receipt has 6');
  });

  it('refuses a close with a step removed from the middle at input (seq gap)', async () => {
    const steps = [...workflow.steps.slice(0, 2), ...workflow.steps.slice(3)];
    const report = await verifyAnchor({ value: attach(withSteps(steps), anchored) });
    expect(check(report, 'input').status).toBe('FAIL');
    expect(check(report, 'input').detail).toMatch(/steps\[2\]\.seq/);
    expect(report.verdict).toBe('FAIL');
  });

  it('skips recompute for seq-output-v1 ("construction not confirmed") and still detects truncation by step count', async () => {
    const v1 = { ...workflow, merkle_version: 'seq-output-v1', merkle_root: 'c'.repeat(64) };
    const proof = envelopeModeProof(v1).proof;
    const whole = await verifyAnchor({ value: attach(v1, proof) });
    expect(check(whole, 'recompute').status).toBe('SKIP');
    expect(check(whole, 'recompute').detail).toMatch(/^construction not confirmed: merkle_version seq-output-v1/);
    expect(whole.verdict).toBe('PASS');

    const truncated = await verifyAnchor({ value: attach({ ...v1, steps: workflow.steps.slice(0, 3) }, proof) });
    expect(check(truncated, 'recompute').status).toBe('SKIP');
    expect(check(truncated, 'envelope').detail).toBe('truncated: anchored 5 steps, receipt has 3');
  });

  it('skips recompute for an unknown merkle_version', async () => {
    const future = { ...workflow, merkle_version: 'future-v9' };
    const report = await verifyAnchor({ value: attach(future, envelopeModeProof(future).proof) });
    expect(check(report, 'recompute')).toMatchObject({ status: 'SKIP', detail: expect.stringMatching(/^construction not confirmed: unknown merkle_version "future-v9"/) });
    expect(report.verdict).toBe('PASS');
  });
});

describe('receipts against their anchored output hash', () => {
  const anchored = envelopeModeProof(receipt).proof;

  it('names alteration when the bytes and declared hash were both changed', async () => {
    const bytes = Buffer.from('{"a":1}');
    const altered = { ...receipt, canonical_bytes: bytes.toString('base64'), canonical_byte_length: bytes.length, output_hash: `sha256:${sha256Hex(bytes)}` };
    const report = await verifyAnchor({ value: attach(altered, anchored) });
    expect(check(report, 'recompute').status).toBe('PASS');
    expect(check(report, 'envelope').detail).toBe(`altered: output_sha256 anchored ${(anchored.envelope as Json).output_sha256 as string}, the receipt's bytes hash to ${sha256Hex(bytes)}`);
  });

  it('fails recompute when the bytes no longer match the declared hash', async () => {
    const report = await verifyAnchor({ value: attach({ ...receipt, canonical_bytes: 'e31=' }, anchored) });
    expect(check(report, 'recompute').status).toBe('FAIL');
    expect(report.verdict).toBe('FAIL');
  });
});

describe('job timelines against their anchored chain head', () => {
  const anchored = envelopeModeProof(chain).proof;

  it('passes the closed timeline given as {"entries": [...], "anchor_proof": {...}}', async () => {
    const report = await verifyAnchor({ value: attach(chain, anchored) });
    expect(report.verdict).toBe('PASS');
    expect(check(report, 'recompute').detail).toBe(`chain head over 5 entries: final entry digest ${chain.final_entry_digest}`);
  });

  it('names truncation when the last entries are dropped (the timeline left open)', async () => {
    const report = await verifyAnchor({ value: chain.entries.slice(0, 3), proof: anchored });
    expect(check(report, 'input')).toMatchObject({ status: 'PASS', detail: expect.stringContaining('open: its last entry does not close it') });
    expect(check(report, 'recompute').status).toBe('PASS');
    expect(check(report, 'envelope')).toMatchObject({ status: 'FAIL', detail: 'truncated: anchored 5 entries, timeline has 3' });
  });

  it('names truncation even when the timeline file still declares the anchored entry_count', async () => {
    const report = await verifyAnchor({ value: { ...chain, entries: chain.entries.slice(0, 4), anchor_proof: anchored } });
    expect(check(report, 'recompute')).toMatchObject({ status: 'FAIL', detail: 'entry_count: declares 5 entries, the timeline has 4' });
    expect(check(report, 'envelope').detail).toBe('truncated: anchored 5 entries, timeline has 4');
    expect(report.reason).toBe('envelope: truncated: anchored 5 entries, timeline has 4 (also failing: recompute)');
  });

  it('names truncation when the shortened timeline was re-closed', async () => {
    const entries = chain.entries.slice(0, 4).map((e, i) => (i === 3 ? { ...e, close: true } : e));
    const report = await verifyAnchor({ value: { entries, anchor_proof: anchored } });
    expect(check(report, 'envelope').detail).toBe('truncated: anchored 5 entries, timeline has 4');
  });

  it('names alteration when the last entry\'s bytes change (same count)', async () => {
    const bytes = Buffer.from('{"changed":true}');
    const entries = chain.entries.map((e, i) => (i === 4 ? { ...e, canonical_bytes: bytes.toString('base64') } : e));
    const report = await verifyAnchor({ value: entries, proof: anchored });
    expect(check(report, 'envelope').detail).toMatch(/^altered: anchored final_entry_digest [0-9a-f]{64}, the entries give [0-9a-f]{64} \(same 5 entries\)$/);
  });
});
