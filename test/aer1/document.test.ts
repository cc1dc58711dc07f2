import { describe, expect, it } from 'vitest';
import { recognizeDocument } from '../../src/core/aer1/document.js';
import { claimsFromBareFields, claimsFromDocument, claimsFromInput } from '../../src/core/envelope/from-document.js';
import { inputErrorOf, loadFixture, type ChainVector, type WorkflowExample } from '../fixtures/index.js';

const receipt = () => loadFixture('receipt-minimal');
const workflow = () => loadFixture<WorkflowExample>('workflow-receipt-example');
const chain = () => loadFixture<ChainVector>('aer1-chain-v07');
const HEX = 'ab'.repeat(32);

describe('recognizeDocument', () => {
  it('recognizes receipts in all three shapes', () => {
    for (const doc of [receipt(), { receipt: receipt() }, { _receipt: receipt() }]) {
      expect(recognizeDocument(doc).kind).toBe('receipt');
    }
  });

  it('recognizes workflow closes, bare or wrapped', () => {
    for (const doc of [workflow(), { receipt: workflow() }, { _receipt: workflow() }]) {
      expect(recognizeDocument(doc).kind).toBe('workflow-close');
    }
  });

  it('recognizes job timelines as an array or as {"entries": [...]}', () => {
    expect(recognizeDocument(chain()).kind).toBe('chain');
    expect(recognizeDocument(chain().entries).kind).toBe('chain');
  });

  it.each([[{ foo: 1 }], ['text'], [42], [null]])('refuses %j as unrecognized', (doc) => {
    const err = inputErrorOf(() => recognizeDocument(doc));
    expect(err.code).toBe('unrecognized');
  });
});

describe('claimsFromDocument', () => {
  it('receipt → receipt_uuid and the recomputed output hash, with evidence when given', () => {
    expect(claimsFromDocument(receipt())).toEqual({
      subject: 'receipt',
      receipt_uuid: '00000000-0000-4000-8000-000000000001',
      output_sha256: '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
    });
    expect(claimsFromDocument({ _receipt: receipt() }, { evidence_sha256: HEX, evidence_byte_length: 0, evidence_url: 'https://example.org/e' })).toMatchObject({
      evidence_sha256: HEX, evidence_byte_length: 0, evidence_url: 'https://example.org/e',
    });
  });

  it('workflow close → root, version (receipt-id-v0 when absent) and step count', () => {
    const wf = workflow();
    expect(claimsFromDocument(wf)).toEqual({
      subject: 'workflow-close',
      receipt_uuid: wf.receipt_id,
      output_sha256: wf.output_hash,
      workflow_id: wf.workflow_id,
      merkle_root: wf.merkle_root,
      merkle_version: 'receipt-id-v0',
      step_count: 5,
    });
  });

  it('workflow close under an unconfirmed or unknown construction anchors the declared root', () => {
    for (const version of ['seq-output-v1', 'future-v7']) {
      const wf = workflow();
      wf.merkle_version = version;
      expect(claimsFromDocument(wf)).toMatchObject({ merkle_root: wf.merkle_root, merkle_version: version, step_count: 5 });
    }
  });

  it('job timeline → chain head', () => {
    const v = chain();
    expect(claimsFromDocument(v)).toEqual({ subject: 'chain-head', job_id: 'job-7a1f', final_entry_digest: v.final_entry_digest, entry_count: 5 });
  });

  it('throws on any recomputation mismatch', () => {
    const r = receipt();
    r.output_hash = `sha256:${HEX}`;
    expect(inputErrorOf(() => claimsFromDocument(r)).field).toBe('output_hash');
    const wf = workflow();
    wf.merkle_root = HEX;
    expect(inputErrorOf(() => claimsFromDocument({ receipt: wf })).field).toBe('receipt.merkle_root');
    const c = chain();
    c.entries[3]!.prev_digest = HEX;
    expect(inputErrorOf(() => claimsFromDocument(c)).field).toBe('entries[3].prev_digest');
  });

  it('refuses evidence for subjects other than receipts, and malformed evidence', () => {
    expect(inputErrorOf(() => claimsFromDocument(workflow(), { evidence_url: 'https://x.test/' })).field).toBe('evidence_url');
    expect(inputErrorOf(() => claimsFromDocument(receipt(), { evidence_sha256: HEX.toUpperCase() })).field).toBe('evidence_sha256');
    expect(inputErrorOf(() => claimsFromDocument(receipt(), { evidence_url: 'not a url' })).code).toBe('bad_url');
    expect(inputErrorOf(() => claimsFromDocument(receipt(), { evidence_byte_length: -1 })).field).toBe('evidence_byte_length');
  });
});

describe('claimsFromBareFields', () => {
  const bareReceipt = { subject: 'receipt', receipt_uuid: 'r-1', output_sha256: HEX };
  const bareWorkflow = { subject: 'workflow-close', receipt_uuid: 'w-1', output_sha256: HEX, workflow_id: 'wf', merkle_root: HEX, step_count: 12 };
  const bareChain = { subject: 'chain-head', job_id: 'job-1', final_entry_digest: HEX, entry_count: 3 };

  it('accepts each subject, defaulting merkle_version to receipt-id-v0', () => {
    expect(claimsFromBareFields(bareReceipt)).toEqual(bareReceipt);
    expect(claimsFromBareFields(bareWorkflow)).toEqual({ ...bareWorkflow, merkle_version: 'receipt-id-v0' });
    expect(claimsFromBareFields({ ...bareWorkflow, merkle_version: 'seq-output-v1' })).toMatchObject({ merkle_version: 'seq-output-v1' });
    expect(claimsFromBareFields(bareChain)).toEqual(bareChain);
  });

  it.each([
    [{ ...bareReceipt, colour: 'red' }, 'colour', 'unknown_member'],
    [{ ...bareReceipt, anchored_at: '2026-01-01T00:00:00Z' }, 'anchored_at', 'unknown_member'],
    [{ ...bareReceipt, workflow_id: 'x' }, 'workflow_id', 'unknown_member'],
    [{ ...bareReceipt, output_sha256: HEX.toUpperCase() }, 'output_sha256', 'bad_hex'],
    [{ ...bareReceipt, output_sha256: `sha256:${HEX}` }, 'output_sha256', 'bad_hex'],
    [{ ...bareReceipt, receipt_uuid: '' }, 'receipt_uuid', 'empty'],
    [{ ...bareReceipt, receipt_uuid: 7 }, 'receipt_uuid', 'not_string'],
    [{ ...bareReceipt, evidence_sha256: null }, 'evidence_sha256', 'not_string'],
    [{ subject: 'receipt', receipt_uuid: 'r' }, 'output_sha256', 'missing'],
    [{ ...bareWorkflow, step_count: 0 }, 'step_count', 'bad_count'],
    [{ ...bareWorkflow, step_count: 1.5 }, 'step_count', 'bad_count'],
    [{ ...bareWorkflow, step_count: '12' }, 'step_count', 'bad_count'],
    [{ ...bareWorkflow, step_count: 2 ** 53 }, 'step_count', 'bad_count'],
    [{ ...bareChain, entry_count: -1 }, 'entry_count', 'bad_count'],
    [{ ...bareChain, receipt_uuid: 'x' }, 'receipt_uuid', 'unknown_member'],
    [{ ...bareChain, subject: 'chain' }, 'subject', 'bad_subject'],
    [{ job_id: 'x' }, 'subject', 'missing'],
  ])('refuses %j naming %s', (fields, field, code) => {
    const err = inputErrorOf(() => claimsFromBareFields(fields));
    expect(err.field).toBe(field);
    expect(err.code).toBe(code);
  });

  it('names the maxStringLength limit', () => {
    const err = inputErrorOf(() => claimsFromBareFields({ ...bareChain, job_id: 'j'.repeat(11) }, { limits: { maxStringLength: 10 } }));
    expect(err.message).toContain('maxStringLength = 10');
  });
});

describe('claimsFromInput', () => {
  it('takes bare fields when the input has a subject member, a document otherwise', () => {
    expect(claimsFromInput({ subject: 'chain-head', job_id: 'j', final_entry_digest: HEX, entry_count: 1 }).subject).toBe('chain-head');
    expect(claimsFromInput(receipt()).subject).toBe('receipt');
  });

  it('joins separately given evidence to bare receipt fields, refusing a member given twice', () => {
    const fields = { subject: 'receipt', receipt_uuid: 'r', output_sha256: HEX, evidence_url: 'https://a.test/' };
    expect(claimsFromInput(fields, { evidence_sha256: HEX })).toMatchObject({ evidence_sha256: HEX, evidence_url: 'https://a.test/' });
    expect(inputErrorOf(() => claimsFromInput(fields, { evidence_url: 'https://b.test/' })).code).toBe('evidence_twice');
  });
});
