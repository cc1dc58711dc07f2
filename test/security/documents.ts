/**
 * Valid AER-1 documents built in the test (receipts, workflow closes, job timelines) with
 * chosen strings, so hostile variants can be made of each member.
 */
import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { entryDigest, GENESIS_DIGEST } from '../../src/core/aer1/chain.js';

export type Json = Record<string, unknown>;

/** A receipt whose output hash matches its bytes. */
export function receiptDoc(id: string = randomUUID(), payload: unknown = { n: id }): Json {
  const bytes = Buffer.from(JSON.stringify(payload));
  return {
    id,
    tool: 'example_tool',
    canonical_bytes: bytes.toString('base64'),
    canonical_byte_length: bytes.length,
    hash_algorithm: 'sha256',
    output_hash: `sha256:${sha256Hex(bytes)}`,
  };
}

export interface WorkflowOptions {
  receiptId?: string;
  workflowId?: string;
  /** Step i (0-based) → its receipt_id. */
  stepId?: (i: number) => string;
  /** Strings for the optional members of the close and of every step. */
  text?: string;
}

/** A workflow close of `n` steps whose receipt-id-v0 root matches its steps. */
export function workflowDoc(n: number, opts: WorkflowOptions = {}): Json {
  const stepId = opts.stepId ?? ((i: number) => `r${i.toString(36)}`);
  const ids = Array.from({ length: n }, (_, i) => stepId(i));
  const extra = opts.text === undefined ? {} : { tool: opts.text, status: opts.text, started_at: opts.text, ended_at: opts.text };
  const steps = ids.map((id, i) => ({ seq: i + 1, receipt_id: id, ...extra }));
  return {
    type: 'verifiable-workflow-receipt',
    version: '1',
    workflow_id: opts.workflowId ?? randomUUID(),
    receipt_id: opts.receiptId ?? randomUUID(),
    ...(opts.text === undefined ? {} : { session_id: opts.text, goal: opts.text, status: opts.text }),
    steps,
    merkle_root: receiptIdV0Root(ids),
    output_hash: sha256Hex(Buffer.from(ids.join(','))),
  };
}

/** A closed job timeline of `n` entries whose digests chain (draft section 7.1). */
export function timelineDoc(n: number, jobId: string = `job-${randomUUID()}`, text = 'tool'): Json[] {
  const out: Json[] = [];
  let prev = GENESIS_DIGEST;
  for (let i = 0; i < n; i++) {
    const bytes = Buffer.from(JSON.stringify({ job: jobId, entry: i }));
    const entry = {
      seq: i + 1,
      job_id: jobId,
      id: `${jobId}-${i}`,
      tool: text,
      provenance_class: 'LOGGED BY AGENT',
      canonical_bytes: bytes.toString('base64'),
      prev_digest: prev,
      ...(i === n - 1 ? { close: true } : {}),
    };
    prev = entryDigest({ seq: entry.seq, jobId, id: entry.id, tool: entry.tool, provenanceClass: entry.provenance_class, prevDigest: prev, close: i === n - 1 }, sha256Hex(bytes));
    out.push(entry);
  }
  return out;
}
