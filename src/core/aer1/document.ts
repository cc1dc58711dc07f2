/**
 * Which AER-1 document an untrusted input is — receipt, workflow close or job timeline —
 * with its shape and step rules enforced. The claims an envelope binds are made from it
 * in src/core/envelope/from-document.ts.
 */
import { InputError } from '../errors/errors.js';
import { parseTimeline, type Timeline } from './chain.js';
import { isObject } from './fields.js';
import type { ParseOptions } from './limits.js';
import { parseReceiptAt, unwrapReceipt, type Receipt } from './receipt.js';
import { looksLikeWorkflow, parseWorkflowCloseAt, WORKFLOW_TYPE, type WorkflowClose } from './workflow.js';

export type RecognizedDocument =
  | { readonly kind: 'receipt'; readonly receipt: Receipt }
  | { readonly kind: 'workflow-close'; readonly workflow: WorkflowClose }
  | { readonly kind: 'chain'; readonly timeline: Timeline };

const RECEIPT_MARKERS = ['id', 'canonical_bytes', 'output_hash'];

/** Top-level members that make an object a receipt or a workflow close in its own right. */
const OWN_DOCUMENT_MEMBERS = ['canonical_bytes', 'output_hash', 'steps', 'merkle_root', 'workflow_id'];

/**
 * One document, one reading. An object that is itself a receipt or workflow close and
 * also wraps another one (`receipt`, `_receipt`) or carries timeline `entries` could be
 * read as either; anchoring or verifying one of them would ignore the other, so it is
 * refused (`ambiguous`), never guessed.
 */
function refuseTwoReadings(doc: unknown): void {
  if (!isObject(doc)) return;
  const readings: string[] = [];
  const own = OWN_DOCUMENT_MEMBERS.filter((k) => Object.hasOwn(doc, k));
  if (own.length || doc.type === WORKFLOW_TYPE) readings.push(`its own ${own.length ? own.join(', ') : 'type'}`);
  for (const wrapper of ['receipt', '_receipt']) if (Object.hasOwn(doc, wrapper)) readings.push(`a "${wrapper}" member`);
  if (Object.hasOwn(doc, 'entries')) readings.push('timeline "entries"');
  if (readings.length > 1) {
    throw new InputError('ambiguous', `the document could be read two ways: it has ${readings.join(' and ')}`, '$');
  }
}

/**
 * Classifies and parses a document: a JSON array or an object with `entries` is a job
 * timeline; otherwise the receipt object is unwrapped (`receipt` / `_receipt`) and is a
 * workflow close when typed as one or carrying `steps`, else a receipt. Shape and step
 * rules are enforced here (InputError); hashes are recomputed by the `check*` functions.
 */
export function recognizeDocument(doc: unknown, options: ParseOptions = {}): RecognizedDocument {
  refuseTwoReadings(doc);
  if (Array.isArray(doc) || (isObject(doc) && Object.hasOwn(doc, 'entries'))) {
    return { kind: 'chain', timeline: parseTimeline(doc, options) };
  }
  const { shape, path, receipt } = unwrapReceipt(doc);
  if (isObject(receipt) && looksLikeWorkflow(receipt)) {
    return { kind: 'workflow-close', workflow: parseWorkflowCloseAt(receipt, path, options) };
  }
  if (shape === 'bare' && !(isObject(receipt) && RECEIPT_MARKERS.some((k) => Object.hasOwn(receipt, k)))) {
    throw new InputError('unrecognized', 'not a receipt, a workflow close or a job timeline', '$');
  }
  return { kind: 'receipt', receipt: parseReceiptAt(receipt, shape, path, options) };
}
