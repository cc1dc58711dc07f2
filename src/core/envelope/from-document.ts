/**
 * One entry point from an untrusted input to the claims an envelope binds: recognize the
 * document (receipt, workflow close, job timeline) or take the bare fields of SPEC section 3,
 * recompute everything, and refuse any mismatch.
 */
import { InputError } from '../errors/errors.js';
import { checkChain } from '../aer1/chain.js';
import { recognizeDocument, type RecognizedDocument } from '../aer1/document.js';
import { isObject } from '../aer1/fields.js';
import type { ParseOptions } from '../aer1/limits.js';
import { checkReceipt } from '../aer1/receipt.js';
import { checkWorkflow } from '../aer1/workflow.js';
import { parseClaims, type Evidence, type SubjectClaims } from './claims.js';

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
