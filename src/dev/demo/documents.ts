/**
 * The three documents the demo anchors, minted fresh each run the way an issuer would:
 * a receipt (output hash over its canonical bytes), a workflow close (receipt-id-v0 root
 * over its steps) and a closed job timeline (entry digests chained to a final digest).
 * Pure: no I/O; randomness and the clock come in as arguments.
 */
import { randomUUID } from 'node:crypto';
import { canonicalBytes } from '../../core/aer1/canonical-json.js';
import { entryDigest, GENESIS_DIGEST } from '../../core/aer1/chain.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { receiptIdV0Root } from '../../core/aer1/merkle.js';

export interface DemoDocuments {
  receipt: Record<string, unknown>;
  workflow: WorkflowDocument;
  timeline: TimelineDocument;
}

export interface WorkflowStepDocument {
  seq: number;
  tool: string;
  receipt_id: string;
  receipt_hash: string;
  started_at: string;
  ended_at: string;
  status: string;
}

export interface WorkflowDocument {
  type: 'verifiable-workflow-receipt';
  version: string;
  workflow_id: string;
  receipt_id: string;
  session_id: string;
  goal: string;
  status: string;
  steps: WorkflowStepDocument[];
  merkle_root: string;
  output_hash: string;
  verify_url: string;
  [member: string]: unknown;
}

export interface TimelineEntryDocument {
  seq: number;
  job_id: string;
  id: string;
  tool: string;
  provenance_class: string;
  canonical_bytes: string;
  output_hash: string;
  prev_digest: string;
  close?: boolean;
}

export interface TimelineDocument {
  job_id: string;
  entries: TimelineEntryDocument[];
  final_entry_digest: string;
  entry_count: number;
  [member: string]: unknown;
}

export interface MintOptions {
  /** Clock for the documents' timestamps (default: now). */
  now?: Date;
  /** Source of ids (default: crypto.randomUUID). */
  uuid?: () => string;
}

const WORKFLOW_TOOLS = ['fetch_price', 'fetch_price', 'fetch_price', 'aggregate', 'format_report', 'publish_report'] as const;
const TIMELINE_TOOLS = ['load_orders', 'price_lookup', 'price_lookup', 'reconcile', 'write_ledger'] as const;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function base64Of(value: unknown): { base64: string; length: number; hash: string } {
  const bytes = canonicalBytes(value);
  return { base64: bytes.toString('base64'), length: bytes.length, hash: sha256Hex(bytes) };
}

/** A receipt whose `output_hash` is the SHA-256 of its decoded `canonical_bytes`. */
export function mintReceipt(opts: MintOptions = {}): Record<string, unknown> {
  const now = opts.now ?? new Date();
  const uuid = opts.uuid ?? randomUUID;
  const output = base64Of({ asset: 'BTC', price_usd: '64210.55', quoted_at: now.toISOString().replace(/\.\d{3}Z$/, 'Z'), source: 'aer1-anchor demo' });
  return {
    id: uuid(),
    tool: 'price_lookup',
    timestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    receipt_schema_version: '0.3',
    tool_context: { name: 'price_lookup', version: 'demo', scope: 'public' },
    provenance_class: 'EXECUTED BY ZAMBO',
    canonical_bytes: output.base64,
    canonical_byte_length: output.length,
    hash_algorithm: 'sha256',
    output_hash: `sha256:${output.hash}`,
    verification_status: 'execution_observed',
    status: 'success',
  };
}

/** Root of a workflow's steps under receipt-id-v0 (the rule when `merkle_version` is absent). */
export function workflowRoot(steps: readonly WorkflowStepDocument[]): string {
  return receiptIdV0Root(steps.map((s) => s.receipt_id));
}

/** A workflow close with one step per tool and a correct receipt-id-v0 `merkle_root`. */
export function mintWorkflow(opts: MintOptions = {}): WorkflowDocument {
  const start = (opts.now ?? new Date()).getTime() - 60_000;
  const uuid = opts.uuid ?? randomUUID;
  const workflowId = uuid();
  const steps: WorkflowStepDocument[] = WORKFLOW_TOOLS.map((tool, i) => {
    const began = start + i * 2_000;
    return {
      seq: i + 1,
      tool,
      receipt_id: uuid(),
      receipt_hash: sha256Hex(canonicalBytes({ step: i + 1, tool, workflow_id: workflowId })),
      started_at: iso(began),
      ended_at: iso(began + 150 + i * 10),
      status: 'ok',
    };
  });
  return {
    type: 'verifiable-workflow-receipt',
    version: '1',
    workflow_id: workflowId,
    receipt_id: uuid(),
    session_id: `demo-session-${workflowId.slice(0, 8)}`,
    goal: 'compare the BTC price across three sources and publish a report',
    status: 'ok',
    steps,
    merkle_root: workflowRoot(steps),
    output_hash: sha256Hex(canonicalBytes({ report: 'BTC 64210.55 USD (median of 3 sources)', workflow_id: workflowId })),
    verify_url: `https://example.invalid/workflow/${workflowId}`,
  };
}

/** A closed job timeline (draft section 7.1): entries chained by digest, the last one closing it. */
export function mintTimeline(opts: MintOptions = {}): TimelineDocument {
  const uuid = opts.uuid ?? randomUUID;
  const jobId = `job-${uuid().slice(0, 8)}`;
  let prev = GENESIS_DIGEST;
  const entries: TimelineEntryDocument[] = TIMELINE_TOOLS.map((tool, i) => {
    const output = base64Of({ entry: i, job: jobId, tool });
    const last = i === TIMELINE_TOOLS.length - 1;
    const entry: TimelineEntryDocument = {
      seq: i + 1,
      job_id: jobId,
      id: `r-${jobId}-${i}`,
      tool,
      provenance_class: 'LOGGED BY AGENT',
      canonical_bytes: output.base64,
      output_hash: output.hash,
      prev_digest: prev,
      ...(last ? { close: true } : {}),
    };
    prev = entryDigest(
      { seq: entry.seq, jobId, id: entry.id, tool, provenanceClass: entry.provenance_class, prevDigest: entry.prev_digest, close: last },
      output.hash,
    );
    return entry;
  });
  return { job_id: jobId, entries, final_entry_digest: prev, entry_count: entries.length };
}

export function mintDocuments(opts: MintOptions = {}): DemoDocuments {
  return { receipt: mintReceipt(opts), workflow: mintWorkflow(opts), timeline: mintTimeline(opts) };
}

/**
 * What a truncating issuer would hand an auditor: the same close (same `receipt_id`, same
 * anchor proof) with its last step removed and `merkle_root` recomputed so the document is
 * internally consistent. Only the anchored `step_count` and root can give it away.
 */
export function cutLastStep<T extends WorkflowDocument>(workflow: T): T {
  const steps = workflow.steps.slice(0, -1);
  return { ...workflow, steps, merkle_root: workflowRoot(steps) };
}
