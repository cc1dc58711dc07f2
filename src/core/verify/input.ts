/**
 * Stage `input`: what was given. A receipt, workflow close or job timeline with its
 * `anchor_proof` attached or given separately, or a bare `aer1-anchor-proof-v1` alone.
 * Input that cannot be verified at all (no proof anywhere, a proof of an unknown version,
 * a file that could be read two ways, JSON nested too deep)
 * is a UsageError: the CLI says so in one line and exits 2.
 */
import { recognizeDocument, type RecognizedDocument } from '../aer1/document.js';
import { isObject } from '../aer1/fields.js';
import { MAX_JSON_DEPTH, quoteBounded, valueDepth } from '../aer1/json-limits.js';
import { Aer1Error, InputError, UsageError } from '../errors/errors.js';
import { PROOF_VERSION, parseAnchorProof, type AnchorProof } from '../proof/format.js';
import { fail, pass, type CheckResult, type PreparedInput } from './types.js';

export const PROOF_MEMBER = 'anchor_proof';

/** The members of an `aer1-anchor-proof-v1` object (SPEC §5); a bare proof carries nothing else. */
export const PROOF_MEMBERS: readonly string[] = ['version', 'envelope', 'digest', 'status', 'nostr', 'ots', 'log'];

/** A bare proof file: it names a proof version or carries the proof's own members. */
export function looksLikeProof(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  if (typeof value.version === 'string' && value.version.startsWith('aer1-anchor-proof')) return true;
  return Object.hasOwn(value, 'envelope') && Object.hasOwn(value, 'digest');
}

/** Names a few members, bounded, for a message. */
function memberList(names: readonly string[]): string {
  const shown = names.slice(0, 5).map((n) => quoteBounded(n, 40)).join(', ');
  return names.length > 5 ? `${shown} and ${names.length - 5} more` : shown;
}

/**
 * A file that carries proof members beside anything else could be read as a bare proof
 * (checking nothing of the document) or as a document: refused, never guessed (exit 2).
 */
function refuseMixedProof(value: Record<string, unknown>): void {
  const extra = Object.keys(value).filter((k) => !PROOF_MEMBERS.includes(k));
  if (extra.length === 0) return;
  throw new UsageError(
    `ambiguous input: it carries anchor-proof members (${memberList(Object.keys(value).filter((k) => PROOF_MEMBERS.includes(k)))}) and also ${memberList(extra)}; `
    + `it could be read as a bare proof or as a document. Give the document with its proof as the "${PROOF_MEMBER}" member, or with --proof FILE`,
    'ambiguous',
  );
}

/**
 * Where the attached proof sits: top level, or on the unwrapped receipt (`receipt` /
 * `_receipt`). Proofs in both places are two readings of one file: refused (exit 2).
 */
export function findAttached(value: unknown): { proof: unknown; document: unknown } | null {
  if (!isObject(value)) return null;
  const found: Array<{ proof: unknown; document: unknown; where: string }> = [];
  if (Object.hasOwn(value, PROOF_MEMBER)) {
    const { [PROOF_MEMBER]: proof, ...document } = value;
    found.push({ proof, document, where: PROOF_MEMBER });
  }
  for (const wrapper of ['_receipt', 'receipt']) {
    const inner = value[wrapper];
    if (isObject(inner) && Object.hasOwn(inner, PROOF_MEMBER)) {
      const { [PROOF_MEMBER]: proof, ...rest } = inner;
      found.push({ proof, document: { ...value, [wrapper]: rest }, where: `${wrapper}.${PROOF_MEMBER}` });
    }
  }
  if (found.length > 1) {
    throw new UsageError(`ambiguous input: it carries more than one anchor proof (${found.map((f) => f.where).join(' and ')})`, 'ambiguous');
  }
  return found[0] ?? null;
}

/** parseAnchorProof, with an unknown version turned into a UsageError (exit 2). */
function readProof(value: unknown, where: string): AnchorProof {
  try {
    return parseAnchorProof(value);
  } catch (err) {
    if (err instanceof InputError && err.code === 'unknown_proof_version') {
      const version = isObject(value) ? value.version : undefined;
      throw new UsageError(`${where}: unknown proof version ${quoteBounded(version)} (this tool reads ${PROOF_VERSION})`, 'unknown_proof_version');
    }
    throw err;
  }
}

function describeDocument(doc: RecognizedDocument): string {
  switch (doc.kind) {
    case 'receipt':
      return `receipt ${doc.receipt.id}`;
    case 'workflow-close':
      return `workflow close ${doc.workflow.receiptId} (${doc.workflow.steps.length} steps)`;
    case 'chain':
      return `job timeline ${doc.timeline.jobId} (${doc.timeline.entries.length} entries)`;
  }
}

/**
 * A proof with no witness, or whose witnesses carry only status claims, anchors nothing. Its
 * anchor log inclusion is checkable on its own (the path, the checkpoint's signature, and
 * the checkpoint's TSA tokens and cosignatures), before the Nostr and OTS cuts reach it.
 */
function nothingCheckable(proof: AnchorProof): string | null {
  if (!proof.nostr && !proof.ots && !proof.log) return 'the proof names no witness (no nostr, no ots, no log): nothing anchors this subject';
  if (!proof.nostr?.event && !proof.ots?.proof && !proof.log) {
    return 'the proof carries nothing checkable (no signed Nostr event, no .ots, no anchor log inclusion): its status claims are not evidence';
  }
  return null;
}

const KNOWN_MEMBERS: Record<string, readonly string[]> = {
  '': PROOF_MEMBERS,
  nostr: ['status', 'mode', 'event', 'relays', 'batch'],
  ots: ['status', 'proof', 'calendars', 'bitcoin'],
};

/** A member name for a message: JSON-quoted, non-ASCII as \u escapes (a look-alike shows), bounded. */
function escapedName(name: string): string {
  const q = quoteBounded(name, 40);
  return q.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Members of the proof, its `nostr` and its `ots` that this verifier does not define: never
 * read, never counted (a newer exporter may add some), named in the input line so a
 * look-alike key hiding something is seen. Empty string when there are none.
 */
function unknownMembers(raw: Record<string, unknown>, prefix: string): string {
  const found: string[] = [];
  for (const [where, known] of Object.entries(KNOWN_MEMBERS)) {
    const obj = where === '' ? raw : raw[where];
    if (!isObject(obj)) continue;
    for (const k of Object.keys(obj)) if (!known.includes(k)) found.push(`${prefix}${where ? `${where}.` : ''}${escapedName(k)}`);
  }
  if (found.length === 0) return '';
  return `; not read (members this verifier does not know): ${found.slice(0, 3).join(', ')}${found.length > 3 ? ` and ${found.length - 3} more` : ''}`;
}

/** Deep nesting is refused before any stage walks the value. */
function assertDepth(value: unknown, what: string): void {
  if (valueDepth(value) > MAX_JSON_DEPTH) throw new UsageError(`${what} is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any JSON input)`, 'too_deep');
}

export interface InputOutcome {
  readonly check: CheckResult;
  /** Null when the proof itself is malformed: nothing further can be checked. */
  readonly prepared: PreparedInput | null;
}

/**
 * Reads one input: `value` is the parsed FILE, `givenProof` the parsed `--proof FILE`.
 * Throws UsageError when there is no proof, its version is unknown, the input is
 * ambiguous or nested too deep. A proof that anchors nothing is a FAIL at `input`, unless
 * `witnessRequired` is false (the log audit holds the document to the proof's envelope only).
 */
export function readInput(value: unknown, givenProof?: unknown, { witnessRequired = true }: { witnessRequired?: boolean } = {}): InputOutcome {
  let rawProof: unknown;
  let document: unknown;
  let proofSource: PreparedInput['proofSource'];
  let note = '';
  assertDepth(value, 'the input');
  if (givenProof !== undefined) assertDepth(givenProof, 'the --proof file');
  if (looksLikeProof(value)) {
    refuseMixedProof(value);
    if (givenProof !== undefined) throw new UsageError('FILE is itself an anchor proof; --proof goes with a receipt, workflow close or job timeline', 'usage');
    rawProof = value;
    proofSource = 'standalone';
  } else {
    const attached = findAttached(value);
    if (givenProof !== undefined) {
      rawProof = givenProof;
      document = attached ? attached.document : value;
      proofSource = 'given';
      if (attached) note = `; its ${PROOF_MEMBER} member is ignored (--proof given)`;
    } else if (attached) {
      rawProof = attached.proof;
      document = attached.document;
      proofSource = 'attached';
    } else {
      throw new UsageError(`no anchor proof: attach it as the "${PROOF_MEMBER}" member or give it with --proof FILE`, 'no_proof');
    }
  }

  let proof: AnchorProof;
  try {
    proof = readProof(rawProof, proofSource === 'given' ? 'the --proof file' : proofSource === 'attached' ? PROOF_MEMBER : 'the proof');
  } catch (err) {
    if (err instanceof UsageError || !(err instanceof Aer1Error)) throw err;
    return { check: fail('input', `not a valid ${PROOF_VERSION}: ${err.message}`), prepared: null };
  }
  const base = { proofSource, proof, rawProof: rawProof as Record<string, unknown> };
  const nothing = witnessRequired ? nothingCheckable(proof) : null;
  if (nothing) return { check: fail('input', nothing), prepared: null };
  const unread = unknownMembers(rawProof as Record<string, unknown>, proofSource === 'attached' ? `${PROOF_MEMBER}.` : '');
  const proofWordsBase = proofSource === 'standalone' ? `standalone ${PROOF_VERSION} (no document given)` : `${PROOF_VERSION} ${proofSource === 'given' ? 'given with --proof' : 'attached'}`;
  const proofWords = `${proofWordsBase}${unread}`;

  if (proofSource === 'standalone') {
    return { check: pass('input', proofWords), prepared: { ...base, document: null, openTimeline: false } };
  }
  let recognized: RecognizedDocument;
  try {
    // An open timeline (its closing entry cut off) is what truncation leaves: read it, say so later.
    recognized = recognizeDocument(document, { allowOpenTimeline: true });
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    if (err.code === 'ambiguous') throw new UsageError(`ambiguous input: ${err.message}`, 'ambiguous');
    return { check: fail('input', `document not recognized: ${err.message}`), prepared: { ...base, document: null, openTimeline: false } };
  }
  const openTimeline = recognized.kind === 'chain' && !recognized.timeline.closed;
  const openNote = openTimeline ? ' (open: its last entry does not close it)' : '';
  return {
    check: pass('input', `${describeDocument(recognized)}${openNote}, ${proofWords}${note}`),
    prepared: { ...base, document: recognized, openTimeline },
  };
}

