import { describe, expect, it } from 'vitest';
import { checkWorkflow, parseWorkflowClose, recomputeWorkflow } from '../../src/core/aer1/workflow.js';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { inputErrorOf, loadFixture, type WorkflowExample } from '../fixtures/index.js';

const example = () => loadFixture<WorkflowExample>('workflow-receipt-example');

describe('the worked workflow example', () => {
  it('recomputes its declared receipt-id-v0 root over 5 steps', () => {
    const wf = parseWorkflowClose(example());
    expect(wf.merkleVersion).toBe('receipt-id-v0');
    expect(wf.merkleVersionDeclared).toBe(false);
    const r = checkWorkflow(wf);
    expect(r).toEqual({
      construction: 'receipt-id-v0',
      known: true,
      confirmed: true,
      root: '7c4817ca249edfeae259b98abf63ed38a31d9dbeebf5ee23139410a7a7f63b37',
      stepCount: 5,
      declaredRoot: '7c4817ca249edfeae259b98abf63ed38a31d9dbeebf5ee23139410a7a7f63b37',
      rootMatches: true,
    });
  });

  it('parses in the {"receipt": ...} and MCP _receipt shapes, naming fields under their path', () => {
    expect(parseWorkflowClose({ receipt: example() }).path).toBe('receipt');
    expect(parseWorkflowClose({ content: [], _receipt: example() }).path).toBe('_receipt');
    const doc = example();
    doc.steps[1]!.seq = 7;
    expect(inputErrorOf(() => parseWorkflowClose({ _receipt: doc })).field).toBe('_receipt.steps[1].seq');
  });

  it('normalises sha256:-prefixed and upper-case digests to bare lowercase hex', () => {
    const doc = example();
    doc.merkle_root = `sha256:${doc.merkle_root.toUpperCase()}`;
    doc.output_hash = `sha256:${doc.output_hash}`;
    doc.steps[0]!.receipt_hash = `sha256:${String(doc.steps[0]!.receipt_hash).toUpperCase()}`;
    const wf = parseWorkflowClose(doc);
    expect(wf.merkleRoot).toBe(example().merkle_root);
    expect(wf.outputHash).toBe(example().output_hash);
    expect(wf.steps[0]!.receiptHash).toBe(example().steps[0]!.receipt_hash);
    expect(checkWorkflow(wf).rootMatches).toBe(true);
  });

  it('counts seq 1.0 as 1', () => {
    const text = JSON.stringify(example()).replace('"seq":1,', '"seq":1.0,');
    expect(text).toContain('"seq":1.0,');
    expect(parseWorkflowClose(JSON.parse(text)).steps[0]!.seq).toBe(1);
  });
});

describe('step rules', () => {
  it('refuses a duplicate receipt_id', () => {
    const doc = example();
    doc.steps[3]!.receipt_id = doc.steps[1]!.receipt_id;
    const err = inputErrorOf(() => parseWorkflowClose(doc));
    expect(err.code).toBe('duplicate_receipt_id');
    expect(err.field).toBe('steps[3].receipt_id');
  });

  it('refuses a seq gap', () => {
    const doc = example();
    doc.steps.splice(2, 1);
    const err = inputErrorOf(() => parseWorkflowClose(doc));
    expect(err.code).toBe('seq_gap');
    expect(err.field).toBe('steps[2].seq');
    expect(err.message).toContain('expected 3, found 4');
  });

  it('refuses steps out of order', () => {
    const doc = example();
    [doc.steps[1], doc.steps[2]] = [doc.steps[2]!, doc.steps[1]!];
    const err = inputErrorOf(() => parseWorkflowClose(doc));
    expect(err.code).toBe('seq_gap');
    expect(err.field).toBe('steps[1].seq');
    const doc2 = example();
    doc2.steps[2]!.seq = 2;
    expect(inputErrorOf(() => parseWorkflowClose(doc2)).code).toBe('seq_order');
  });

  it('refuses a sequence that does not start at 1', () => {
    const doc = example();
    doc.steps.forEach((s, i) => { s.seq = i; });
    expect(inputErrorOf(() => parseWorkflowClose(doc)).field).toBe('steps[0].seq');
  });

  it.each([[1.5], ['2'], [true], [null]])('refuses seq %j', (bad) => {
    const doc = example();
    doc.steps[1]!.seq = bad;
    const err = inputErrorOf(() => parseWorkflowClose(doc));
    expect(err.code).toBe('seq_not_integer');
    expect(err.field).toBe('steps[1].seq');
  });

  it('refuses an empty step list, a missing receipt_id and a malformed receipt_hash', () => {
    const empty = example();
    empty.steps = [];
    expect(inputErrorOf(() => parseWorkflowClose(empty)).code).toBe('no_steps');
    const noId = example();
    delete noId.steps[4]!.receipt_id;
    expect(inputErrorOf(() => parseWorkflowClose(noId)).field).toBe('steps[4].receipt_id');
    const badHash = example();
    badHash.steps[2]!.receipt_hash = 'abc';
    expect(inputErrorOf(() => parseWorkflowClose(badHash)).field).toBe('steps[2].receipt_hash');
  });

  it('refuses a receipt_id with an unpaired surrogate (it has no UTF-8 bytes to hash)', () => {
    const doc = example();
    doc.steps[0]!.receipt_id = 'ab\ud800';
    expect(inputErrorOf(() => parseWorkflowClose(doc)).code).toBe('lone_surrogate');
  });

  it('refuses a close that is not typed verifiable-workflow-receipt', () => {
    const doc = example();
    doc.type = 'workflow';
    const err = inputErrorOf(() => parseWorkflowClose(doc));
    expect(err.field).toBe('type');
    expect(err.message).toContain('verifiable-workflow-receipt');
  });

  it('names the maxSteps limit when a close has too many steps', () => {
    const err = inputErrorOf(() => parseWorkflowClose(example(), { limits: { maxSteps: 4 } }));
    expect(err.code).toBe('limit_exceeded');
    expect(err.field).toBe('steps');
    expect(err.message).toContain('maxSteps = 4');
  });

  it('recomputes a 20,000-step close', () => {
    const doc = example();
    doc.steps = Array.from({ length: 20_000 }, (_, i) => ({ seq: i + 1, receipt_id: `r-${i}` }));
    doc.merkle_root = receiptIdV0Root(doc.steps.map((s) => String(s.receipt_id)));
    expect(checkWorkflow(parseWorkflowClose(doc)).stepCount).toBe(20_000);
  });
});

describe('declared root', () => {
  it('refuses a merkle_root that does not match the steps (confirmed construction)', () => {
    const doc = example();
    doc.steps[4]!.receipt_id = 'ae795bf0-27f8-4cf2-8aef-3f8142b77218';
    const err = inputErrorOf(() => checkWorkflow(parseWorkflowClose(doc)));
    expect(err.code).toBe('merkle_root_mismatch');
    expect(err.field).toBe('merkle_root');
    expect(err.message).toContain('receipt-id-v0');
  });

  it('reports an unknown merkle_version as unknown, without a root and without throwing', () => {
    const doc = example();
    doc.merkle_version = 'receipt-id-v9';
    const wf = parseWorkflowClose(doc);
    expect(recomputeWorkflow(wf)).toMatchObject({ construction: 'receipt-id-v9', known: false, confirmed: false, root: null, rootMatches: null, stepCount: 5 });
    expect(checkWorkflow(wf).declaredRoot).toBe(doc.merkle_root);
  });

  it('computes seq-output-v1 but does not hold the declared root to it (not confirmed)', () => {
    const doc = example();
    doc.merkle_version = 'seq-output-v1';
    const r = checkWorkflow(parseWorkflowClose(doc));
    expect(r.confirmed).toBe(false);
    expect(r.known).toBe(true);
    expect(r.root).toMatch(/^[0-9a-f]{64}$/);
    expect(r.root).not.toBe(doc.merkle_root);
    expect(r.rootMatches).toBe(false);
  });

  it('seq-output-v1 needs every step receipt_hash', () => {
    const doc = example();
    doc.merkle_version = 'seq-output-v1';
    delete doc.steps[2]!.receipt_hash;
    expect(inputErrorOf(() => recomputeWorkflow(parseWorkflowClose(doc))).field).toBe('steps[2].receipt_hash');
  });
});
