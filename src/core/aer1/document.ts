/**
 * One entry point from an untrusted input to the claims an envelope binds: recognize the
 * document (receipt, workflow close, job timeline) or take the bare fields of SPEC section 3,
 * recompute everything, and refuse any mismatch.
 */
import { InputError } from '../errors/errors.js';
import { parseClaims, type Evidence, type SubjectClaims } from '../envelope/claims.js';
import { checkChain, parseTimeline, type Timeline } from './chain.js';
import { isObject } from './fields.js';
import type { ParseOptions } from './limits.js';
import { checkReceipt, parseReceiptAt, unwrapReceipt, type Receipt } from './receipt.js';
import { checkWorkflow, looksLikeWorkflow, parseWorkflowCloseAt, WORKFLOW_TYPE, type WorkflowClose } from './workflow.js';

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

const EVIDENCE_KEYS = ['evidence_sha256', 'evidence_byte_length', 'evidence_url'] as const;

function givenEvidence(extra: Evidence | undefined): Evidence {
  const out: Record<string, unknown> = {};
  for (const key of EVIDENCE_KEYS) if (extra?.[key] !== undefined) out[key] = extra[key];
  return out as Evidence;
}

/** Claims for a recognized document, after recomputing its output hash, Merkle root or chain head. */
export function claimsFromRecognized(doc: RecognizedDocument, extra?: Evidence, options: ParseOptions = {}): SubjectClaims {
  const evidence = givenEvidence(extra);
  const claimsOptions = options.limits ? { limits: options.limits } : {};
  if (doc.kind !== 'receipt') {
    const first = Object.keys(evidence)[0];
    if (first !== undefined) throw new InputError('evidence_not_applicable', `evidence is only anchored for receipts, not for a ${doc.kind}`, first);
  }
  switch (doc.kind) {
    case 'receipt': {
      const r = checkReceipt(doc.receipt);
      return parseClaims({ subject: 'receipt', receipt_uuid: doc.receipt.id, output_sha256: r.outputHash, ...evidence }, claimsOptions);
    }
    case 'workflow-close': {
      const wf = doc.workflow;
      checkWorkflow(wf);
      // Unconfirmed or unknown constructions anchor the declared root; it still binds step_count.
      return parseClaims({
        subject: 'workflow-close',
        receipt_uuid: wf.receiptId,
        output_sha256: wf.outputHash,
        workflow_id: wf.workflowId,
        merkle_root: wf.merkleRoot,
        merkle_version: wf.merkleVersion,
        step_count: wf.steps.length,
      }, claimsOptions);
    }
    case 'chain': {
      if (!doc.timeline.closed) {
        const last = doc.timeline.entries.at(-1)!;
        throw new InputError('not_closed', 'the last entry must have close: true (open timelines are not anchored)', `${last.field}.close`);
      }
      const { head } = checkChain(doc.timeline);
      return parseClaims({ subject: 'chain-head', ...head }, claimsOptions);
    }
  }
}

/** Recognizes a full document and returns its claims; any mismatch is an InputError naming the field. */
export function claimsFromDocument(doc: unknown, extra?: Evidence, options: ParseOptions = {}): SubjectClaims {
  return claimsFromRecognized(recognizeDocument(doc, options), extra, options);
}

/**
 * Claims from the bare envelope fields (SPEC section 3 minus `type` and `anchored_at`):
 * lowercase bare hex digests, positive integer counts, non-empty strings, no unknown member.
 * A workflow close without `merkle_version` gets receipt-id-v0.
 */
export function claimsFromBareFields(obj: unknown, options: ParseOptions = {}): SubjectClaims {
  return parseClaims(obj, { defaultMerkleVersion: true, ...(options.limits ? { limits: options.limits } : {}) });
}

/** True for input that carries bare fields (an object with a `subject` member) rather than a document. */
export function isBareFields(input: unknown): boolean {
  return isObject(input) && Object.hasOwn(input, 'subject');
}

/**
 * What the queue, HTTP and CLI accept: bare fields or a full document. Evidence given in
 * `extra` joins a receipt's claims; giving a member both ways is refused.
 */
export function claimsFromInput(input: unknown, extra?: Evidence, options: ParseOptions = {}): SubjectClaims {
  if (!isBareFields(input)) return claimsFromDocument(input, extra, options);
  const fields = input as Record<string, unknown>;
  const evidence = givenEvidence(extra);
  for (const key of Object.keys(evidence)) {
    if (Object.hasOwn(fields, key)) throw new InputError('evidence_twice', 'given both in the input and separately', key);
  }
  return claimsFromBareFields({ ...fields, ...evidence }, options);
}
