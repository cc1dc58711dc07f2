/**
 * The log audit's outcomes that need no daemon (src/core/verify/log-audit.ts): a document
 * whose proof carries another envelope than the one logged under its key (same key, other
 * digest) is altered; a cut workflow with the genuine proof is truncated; an entry of
 * another kind under the key is altered; a proof that anchors nothing yet (no witness)
 * still holds the document to the logged envelope.
 */
import { describe, expect, it } from 'vitest';
import { buildEnvelope, envelopeDigest } from '../../src/core/envelope/envelope.js';
import { PROOF_VERSION } from '../../src/core/proof/format.js';
import { auditByLog, logAuditExitCode, type LoggedEntry } from '../../src/core/verify/log-audit.js';
import { cutLastStep, mintReceipt, mintWorkflow } from '../../src/dev/demo/documents.js';

function receiptProof(receipt: Record<string, unknown>, at: string) {
  const envelope = buildEnvelope({ subject: 'receipt', receipt_uuid: receipt.id as string, output_sha256: (receipt.output_hash as string).replace('sha256:', '') }, at);
  const d = envelopeDigest(envelope).toString('hex');
  return { d, proof: { version: PROOF_VERSION, envelope, digest: d, status: 'pending' } };
}

describe('auditByLog', () => {
  it('names same key, other digest (another anchored_at) altered; another kind altered; a proof with no witness is still held to the logged envelope', () => {
    const r1 = mintReceipt();
    const r2 = mintReceipt();
    const r3 = mintReceipt();
    const logged = receiptProof(r1, '2026-01-01T00:00:00Z');
    const remade = receiptProof(r1, '2026-01-02T00:00:00Z');
    const ok = receiptProof(r3, '2026-01-01T00:00:00Z');
    const entries = new Map<string, LoggedEntry>([
      [r1.id as string, { index: 0, kind: 'receipt', digest: logged.d }],
      [r2.id as string, { index: 1, kind: 'job_timeline', digest: receiptProof(r2, '2026-01-01T00:00:00Z').d }],
      [r3.id as string, { index: 2, kind: 'receipt', digest: ok.d }],
    ]);
    const report = auditByLog([
      { file: 'r1.json', value: { ...r1, anchor_proof: remade.proof } },
      { file: 'r2.json', value: { ...r2, anchor_proof: receiptProof(r2, '2026-01-01T00:00:00Z').proof } },
      { file: 'r3.json', value: { ...r3, anchor_proof: ok.proof } },
    ], { entries, logName: 'example.test/aer1 at size 3' });
    expect(report.rows.map((r) => [r.file, r.outcome])).toEqual([['r1.json', 'altered'], ['r2.json', 'altered'], ['r3.json', 'matching']]);
    expect(report.rows[0]!.detail).toBe(`same key, other digest: entry 0 (d ${logged.d}), the proof's envelope gives d ${remade.d}: the document and its proof are not what was logged`);
    expect(report.rows[1]!.detail).toContain('logs this key as a job_timeline, the document is a receipt');
    expect(logAuditExitCode(report)).toBe(1);
  });

  it('names a cut workflow truncated when it carries the genuine proof, and altered (same key, other digest) when it carries a re-made proof of its cut envelope', () => {
    const wf = mintWorkflow();
    const claims = (w: typeof wf) => ({ subject: 'workflow-close' as const, receipt_uuid: w.receipt_id, workflow_id: w.workflow_id, output_sha256: w.output_hash, merkle_root: w.merkle_root, merkle_version: 'receipt-id-v0', step_count: w.steps.length });
    const genuine = buildEnvelope(claims(wf), '2026-01-01T00:00:00Z');
    const cut = cutLastStep(wf);
    const cutEnvelope = buildEnvelope(claims(cut), '2026-01-01T00:00:00Z');
    const entries = new Map<string, LoggedEntry>([[wf.receipt_id, { index: 0, kind: 'workflow_close', digest: envelopeDigest(genuine).toString('hex') }]]);
    // the genuine proof on the cut document: the logged envelope itself says truncated
    const withGenuine = auditByLog([{ file: 'a.json', value: { ...cut, anchor_proof: { version: PROOF_VERSION, envelope: genuine, digest: envelopeDigest(genuine).toString('hex'), status: 'pending' } } }], { entries, logName: 'L' });
    expect(withGenuine.rows[0]).toMatchObject({ outcome: 'truncated', index: 0 });
    expect(withGenuine.rows[0]!.detail).toContain('truncated: anchored 6 steps, receipt has 5');
    // a re-made proof of the cut envelope: the document agrees with it, but it is not what was logged
    const remade = auditByLog([{ file: 'b.json', value: { ...cut, anchor_proof: { version: PROOF_VERSION, envelope: cutEnvelope, digest: envelopeDigest(cutEnvelope).toString('hex'), status: 'pending' } } }], { entries, logName: 'L' });
    expect(remade.rows[0]).toMatchObject({ outcome: 'altered', index: 0 });
    expect(remade.rows[0]!.detail).toMatch(/^same key, other digest: entry 0/);
  });
});
