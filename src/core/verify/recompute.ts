/**
 * Stage `recompute`: the document's own values from its bytes, never from its claims —
 * a receipt's output hash from `canonical_bytes`, a workflow's root from its steps
 * under its `merkle_version`, a job timeline's chain head from its entries.
 */
import type { RecognizedDocument } from '../aer1/document.js';
import { checkChain, recomputeChain } from '../aer1/chain.js';
import { recomputeReceipt } from '../aer1/receipt.js';
import { recomputeWorkflow } from '../aer1/workflow.js';
import { Aer1Error } from '../errors/errors.js';
import { fail, pass, skip, type CheckResult, type PreparedInput, type RecomputedValues } from './types.js';
import { quoteBounded } from '../aer1/json-limits.js';

export interface RecomputeOutcome {
  readonly check: CheckResult;
  /** What the envelope must bind; null when nothing could be recomputed. */
  readonly values: RecomputedValues | null;
}

function receipt(doc: Extract<RecognizedDocument, { kind: 'receipt' }>): RecomputeOutcome {
  const r = doc.receipt;
  const declared = { kind: 'receipt' as const, receipt_uuid: r.id, output_sha256: r.declaredOutputHash };
  let re: ReturnType<typeof recomputeReceipt>;
  try {
    re = recomputeReceipt(r);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return { check: fail('recompute', err.message), values: declared };
  }
  const values = { ...declared, output_sha256: re.outputHash };
  if (re.byteLengthMatches === false) {
    return { check: fail('recompute', `canonical_byte_length declares ${r.declaredByteLength} bytes, canonical_bytes decodes to ${re.byteLength}`), values };
  }
  if (!re.outputHashMatches) {
    return { check: fail('recompute', `output_hash declares sha256:${r.declaredOutputHash}, canonical_bytes hash to sha256:${re.outputHash}`), values };
  }
  return { check: pass('recompute', `output hash sha256:${re.outputHash} from ${re.byteLength} bytes`), values };
}

function workflow(doc: Extract<RecognizedDocument, { kind: 'workflow-close' }>): RecomputeOutcome {
  const wf = doc.workflow;
  const base = {
    kind: 'workflow-close' as const,
    receipt_uuid: wf.receiptId,
    // the close's output_hash covers data the close does not carry: it is bound as declared
    output_sha256: wf.outputHash,
    workflow_id: wf.workflowId,
    merkle_version: wf.merkleVersion,
    step_count: wf.steps.length,
  };
  const declared = { ...base, merkle_root: wf.merkleRoot, rootRecomputed: false };
  let re: ReturnType<typeof recomputeWorkflow>;
  try {
    re = recomputeWorkflow(wf);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    // an unconfirmed construction may need members a step lacks; its root is not ours to judge
    const check = wf.merkleVersion === 'receipt-id-v0'
      ? fail('recompute', err.message)
      : skip('recompute', `construction not confirmed: merkle_version ${wf.merkleVersion} (${err.message}); step count ${wf.steps.length} still checked`);
    return { check, values: declared };
  }
  if (!re.known) {
    return { check: skip('recompute', `construction not confirmed: unknown merkle_version ${quoteBounded(re.construction)}; step count ${re.stepCount} still checked`), values: declared };
  }
  if (!re.confirmed) {
    return { check: skip('recompute', `construction not confirmed: merkle_version ${re.construction}; step count ${re.stepCount} still checked`), values: declared };
  }
  const values = { ...base, merkle_root: re.root!, rootRecomputed: true };
  if (re.rootMatches === false) {
    return { check: fail('recompute', `merkle_root declares ${re.declaredRoot}, the ${re.stepCount} steps give ${re.root} under ${re.construction}`), values };
  }
  return { check: pass('recompute', `merkle root ${re.root} over ${re.stepCount} steps (${re.construction})`), values };
}

function chain(doc: Extract<RecognizedDocument, { kind: 'chain' }>, open: boolean): RecomputeOutcome {
  const t = doc.timeline;
  let head: ReturnType<typeof recomputeChain>['head'];
  try {
    head = recomputeChain(t).head;
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return { check: fail('recompute', err.message), values: null };
  }
  // the head is recomputed from the entries; a wrapper's stale declared count must not hide truncation
  const values = { kind: 'chain-head' as const, ...head };
  try {
    checkChain(t);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return { check: fail('recompute', err.message), values };
  }
  const openNote = open ? ' (open timeline)' : '';
  return { check: pass('recompute', `chain head over ${head.entry_count} entries: final entry digest ${head.final_entry_digest}${openNote}`), values };
}

export function recompute(input: PreparedInput | null): RecomputeOutcome {
  if (!input) return { check: skip('recompute', 'no usable proof (see input)'), values: null };
  const doc = input.document;
  if (!doc) {
    const why = input.proofSource === 'standalone' ? 'no document given' : 'document not recognized (see input)';
    return { check: skip('recompute', why), values: null };
  }
  switch (doc.kind) {
    case 'receipt':
      return receipt(doc);
    case 'workflow-close':
      return workflow(doc);
    case 'chain':
      return chain(doc, input.openTimeline);
  }
}
