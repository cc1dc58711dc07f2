/**
 * The demo's documents are what a real issuer would mint: the daemon's own parser accepts
 * each and derives the expected claims; cutting the workflow's last step leaves a document
 * that is consistent on its own (its root recomputes) but anchors fewer steps.
 */
import { describe, expect, it } from 'vitest';
import { claimsFromDocument } from '../../src/core/envelope/from-document.js';
import { checkWorkflow, parseWorkflowClose } from '../../src/core/aer1/workflow.js';
import { cutLastStep, mintDocuments } from '../../src/dev/demo/documents.js';

describe('demo documents', () => {
  const docs = mintDocuments({ now: new Date('2026-10-04T12:00:00Z') });

  it('the receipt hashes to its declared output_hash', () => {
    const claims = claimsFromDocument(docs.receipt);
    expect(claims).toMatchObject({ subject: 'receipt', receipt_uuid: docs.receipt.id });
    expect(`sha256:${(claims as { output_sha256: string }).output_sha256}`).toBe(docs.receipt.output_hash);
  });

  it('the workflow close has 6 steps under a correct receipt-id-v0 root', () => {
    const claims = claimsFromDocument(docs.workflow);
    expect(claims).toMatchObject({ subject: 'workflow-close', receipt_uuid: docs.workflow.receipt_id, step_count: 6, merkle_version: 'receipt-id-v0', merkle_root: docs.workflow.merkle_root });
  });

  it('the job timeline is closed and chains to its declared final digest', () => {
    const claims = claimsFromDocument(docs.timeline);
    expect(claims).toMatchObject({ subject: 'chain-head', job_id: docs.timeline.job_id, entry_count: 5, final_entry_digest: docs.timeline.final_entry_digest });
  });

  it('each run mints new keys', () => {
    const again = mintDocuments();
    expect(again.receipt.id).not.toBe(docs.receipt.id);
    expect(again.workflow.receipt_id).not.toBe(docs.workflow.receipt_id);
    expect(again.timeline.job_id).not.toBe(docs.timeline.job_id);
  });

  it('cutting the last step keeps receipt_id and recomputes a root that matches the remaining steps', () => {
    const cut = cutLastStep(docs.workflow);
    expect(cut.receipt_id).toBe(docs.workflow.receipt_id);
    expect(cut.steps).toEqual(docs.workflow.steps.slice(0, 5));
    expect(cut.merkle_root).not.toBe(docs.workflow.merkle_root);
    const r = checkWorkflow(parseWorkflowClose(cut));
    expect(r.rootMatches).toBe(true);
    expect(r.stepCount).toBe(5);
  });
});
