/**
 * Workflow receipts / workflow closes (draft-zambo-aer1 section 8): parsing, the step rules
 * (seq 1..n in order, no duplicate receipt_id) and the Merkle root under `merkle_version`.
 */
import { InputError } from '../errors/errors.js';
import {
  checkSeq, checkSeqPosition, checkText, describeValue, indexPath, memberPath, optionalText,
  parseDigest, requireDigest, requireObject, requireText, type JsonObject,
} from './fields.js';
import { limitExceeded, resolveLimits, type DocumentLimits } from './limits.js';
import { constructionRoot, DEFAULT_MERKLE_VERSION, merkleConstruction, type MerkleLeafInput } from './merkle.js';
import { unwrapReceipt, type ParseOptions } from './receipt.js';
import { quoteBounded } from './json-limits.js';

export const WORKFLOW_TYPE = 'verifiable-workflow-receipt';

export interface WorkflowStep extends MerkleLeafInput {
  readonly tool: string | undefined;
  readonly startedAt: string | undefined;
  readonly endedAt: string | undefined;
  readonly status: string | undefined;
}

export interface WorkflowClose {
  /** Path of the close object in the input ('' when bare). */
  readonly path: string;
  readonly workflowId: string;
  /** The close's own `receipt_id` (becomes the envelope's `receipt_uuid`). */
  readonly receiptId: string;
  /** `output_hash`, bare lowercase hex. */
  readonly outputHash: string;
  /** Declared `merkle_root`, bare lowercase hex. */
  readonly merkleRoot: string;
  /** `merkle_version` as declared, or receipt-id-v0 when absent. */
  readonly merkleVersion: string;
  readonly merkleVersionDeclared: boolean;
  readonly steps: readonly WorkflowStep[];
  readonly sessionId: string | undefined;
  readonly goal: string | undefined;
  readonly status: string | undefined;
  readonly verifyUrl: string | undefined;
  readonly raw: JsonObject;
}

export interface WorkflowRecomputation {
  /** The `merkle_version` the root is computed under. */
  readonly construction: string;
  /** False for a `merkle_version` the registry does not know. */
  readonly known: boolean;
  /** False unless the construction's bytes are pinned by a published vector. */
  readonly confirmed: boolean;
  /** Recomputed root (lowercase hex), or null when the construction is unknown. */
  readonly root: string | null;
  readonly stepCount: number;
  readonly declaredRoot: string;
  /** null when there is no recomputed root. */
  readonly rootMatches: boolean | null;
}

/** True when `obj` looks like a workflow close (typed as one, or carrying `steps`). */
export function looksLikeWorkflow(obj: JsonObject): boolean {
  return obj.type === WORKFLOW_TYPE || 'steps' in obj;
}

function parseStep(value: unknown, index: number, base: string, limits: DocumentLimits): WorkflowStep {
  const field = indexPath(base, index);
  const step = requireObject(value, field);
  const seqField = memberPath(field, 'seq');
  if (!('seq' in step)) throw new InputError('missing', 'required member is missing', seqField);
  const seq = checkSeq(step.seq, seqField);
  checkSeqPosition(seq, index, seqField);
  return {
    seq,
    receiptId: requireText(step, 'receipt_id', field, limits),
    receiptHash: 'receipt_hash' in step ? parseDigest(step.receipt_hash, memberPath(field, 'receipt_hash')) : undefined,
    field,
    tool: optionalText(step, 'tool', field, limits),
    startedAt: optionalText(step, 'started_at', field, limits),
    endedAt: optionalText(step, 'ended_at', field, limits),
    status: optionalText(step, 'status', field, limits),
  };
}

/** Parses a workflow close (bare, `{"receipt": ...}` or `{"_receipt": ...}`); enforces the step rules. */
export function parseWorkflowClose(doc: unknown, options: ParseOptions = {}): WorkflowClose {
  const { path, receipt } = unwrapReceipt(doc);
  return parseWorkflowCloseAt(receipt, path, options);
}

/** Parses an already unwrapped workflow close found at `path` in the input. */
export function parseWorkflowCloseAt(value: unknown, path: string, options: ParseOptions = {}): WorkflowClose {
  const limits = resolveLimits(options.limits);
  const wf = requireObject(value, path);

  const typeField = memberPath(path, 'type');
  if (!('type' in wf)) throw new InputError('missing', `required member is missing (expected "${WORKFLOW_TYPE}")`, typeField);
  if (wf.type !== WORKFLOW_TYPE) throw new InputError('bad_type', `expected "${WORKFLOW_TYPE}", got ${quoteBounded(wf.type)}`, typeField);
  if ('version' in wf && typeof wf.version !== 'string' && !Number.isSafeInteger(wf.version)) {
    throw new InputError('bad_version', `expected a string or an integer, got ${describeValue(wf.version)}`, memberPath(path, 'version'));
  }

  const workflowId = requireText(wf, 'workflow_id', path, limits);
  const receiptId = requireText(wf, 'receipt_id', path, limits);
  const outputHash = requireDigest(wf, 'output_hash', path);
  const merkleRoot = requireDigest(wf, 'merkle_root', path);
  const merkleVersionDeclared = 'merkle_version' in wf;
  const merkleVersion = merkleVersionDeclared
    ? checkText(wf.merkle_version, memberPath(path, 'merkle_version'), limits.maxStringLength)
    : DEFAULT_MERKLE_VERSION;
  const sessionId = optionalText(wf, 'session_id', path, limits);
  const goal = optionalText(wf, 'goal', path, limits);
  const status = optionalText(wf, 'status', path, limits);
  const verifyUrl = 'verify_url' in wf ? checkText(wf.verify_url, memberPath(path, 'verify_url'), limits.maxUrlLength, 'maxUrlLength') : undefined;

  const stepsField = memberPath(path, 'steps');
  if (!('steps' in wf)) throw new InputError('missing', 'required member is missing', stepsField);
  const rawSteps = wf.steps;
  if (!Array.isArray(rawSteps)) throw new InputError('not_array', `expected an array, got ${describeValue(rawSteps)}`, stepsField);
  if (rawSteps.length === 0) throw new InputError('no_steps', 'a workflow close needs at least one step', stepsField);
  if (rawSteps.length > limits.maxSteps) throw limitExceeded('maxSteps', rawSteps.length, limits.maxSteps, stepsField);

  const steps: WorkflowStep[] = [];
  // The odd-node rule makes [r1..r5] and [r1..r5, r5] share a root: a repeated id is refused.
  const firstSeen = new Map<string, number>();
  rawSteps.forEach((raw, i) => {
    const step = parseStep(raw, i, stepsField, limits);
    const earlier = firstSeen.get(step.receiptId);
    if (earlier !== undefined) {
      throw new InputError('duplicate_receipt_id', `duplicate receipt_id ${quoteBounded(step.receiptId)} (first at ${indexPath(stepsField, earlier)})`, memberPath(step.field, 'receipt_id'));
    }
    firstSeen.set(step.receiptId, i);
    steps.push(step);
  });

  return {
    path, workflowId, receiptId, outputHash, merkleRoot, merkleVersion, merkleVersionDeclared, steps,
    sessionId, goal, status, verifyUrl, raw: wf,
  };
}

/** Recomputes the root under the close's `merkle_version`; an unknown version gives `root: null`, not an error. */
export function recomputeWorkflow(wf: WorkflowClose): WorkflowRecomputation {
  const construction = merkleConstruction(wf.merkleVersion);
  const root = construction ? constructionRoot(construction, wf.steps) : null;
  return {
    construction: wf.merkleVersion,
    known: construction !== undefined,
    confirmed: construction?.confirmed ?? false,
    root,
    stepCount: wf.steps.length,
    declaredRoot: wf.merkleRoot,
    rootMatches: root === null ? null : root === wf.merkleRoot,
  };
}

/**
 * `recomputeWorkflow`, throwing an InputError when a confirmed construction gives a root other
 * than the declared one. Unconfirmed and unknown constructions pass with the declared root:
 * the project cannot stand behind their bytes either way.
 */
export function checkWorkflow(wf: WorkflowClose): WorkflowRecomputation {
  const r = recomputeWorkflow(wf);
  if (r.confirmed && r.rootMatches === false) {
    throw new InputError('merkle_root_mismatch', `does not match the steps under ${r.construction}: declared ${r.declaredRoot}, recomputed ${r.root}`, memberPath(wf.path, 'merkle_root'));
  }
  return r;
}

