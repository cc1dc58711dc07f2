/**
 * What an anchoring job may carry (SPEC section 7): a full document (receipt, workflow
 * close, job timeline), the same wrapped as `{"document": ..., "evidence_*": ...}`, or
 * the bare envelope fields (`{"subject": ..., ...}`). Read once, here, at the edge (readSubject).
 */
import { assertValueDepth } from '../../core/aer1/json-limits.js';
import { Aer1Error, InputError } from '../../core/errors/errors.js';
import { claimsFromInput } from '../../core/envelope/from-document.js';
import { prepareSubject, type PreparedSubject } from '../../core/envelope/prepared.js';
import type { SubjectClaims, Evidence } from '../../core/envelope/claims.js';
import type { DocumentLimits } from '../../core/aer1/limits.js';

export interface JobLimits extends Partial<DocumentLimits> {
  maxJobBytes: number;
}

const EVIDENCE_MEMBERS = ['evidence_sha256', 'evidence_byte_length', 'evidence_url'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Size of the job's JSON in bytes; refuses jobs over the limit before any parsing work. */
export function checkJobSize(data: unknown, maxJobBytes: number): number {
  assertValueDepth(data, 'job data'); // before anything walks it
  let text: string | undefined;
  try {
    text = JSON.stringify(data);
  } catch {
    throw new InputError('not_json', 'job data is not JSON-serializable', '$');
  }
  if (text === undefined) throw new InputError('empty_job', 'job data is empty', '$');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxJobBytes) {
    throw new InputError('too_large', `job data is ${bytes} bytes, over the limit maxJobBytes = ${maxJobBytes}`, '$');
  }
  return bytes;
}

/**
 * Largest canonical envelope accepted. Its Nostr event carries it escaped once more, plus an
 * alt tag naming the key, and must stay well under the 64 KiB common relays (strfry) accept;
 * every member is bounded, but 4,096 non-ASCII characters escape to 24 KiB each.
 */
export const MAX_ENVELOPE_BYTES = 16 * 1024;

/** The same limit on an envelope's canonical text (any anchored_at: they all have one length). */
export function checkCanonicalSize(canonical: string): string {
  if (canonical.length > MAX_ENVELOPE_BYTES) {
    throw new InputError('too_large', `its envelope would be ${canonical.length} bytes of canonical JSON, over the limit of ${MAX_ENVELOPE_BYTES} (so its Nostr event fits what relays accept)`, '$');
  }
  return canonical;
}

/** One subject's job data, read and prepared once (readSubject): what the producer and the intake pass on. */
export interface SubjectInput extends PreparedSubject {
  /** The data as given: what its queue job carries. */
  readonly data: unknown;
  /** Bytes of its JSON (checkJobSize). */
  readonly bytes: number;
}

/**
 * Reads one subject's job data (or an HTTP body's subject, or a CLI file: they carry the same)
 * and prepares it with its envelope stamped `anchoredAt`: the size of the data, the document
 * or bare fields, then the envelope's size. An InputError naming the field when it is wrong.
 * The producer's envelope only sizes the subject; the intake stamps the one it accepts.
 */
export function readSubject(data: unknown, limits: JobLimits, anchoredAt: Date | string = new Date()): SubjectInput {
  const bytes = checkJobSize(data, limits.maxJobBytes);
  const prepared = prepareSubject(claimsFromJobData(data, limits), anchoredAt);
  checkCanonicalSize(prepared.envelopeCanonical);
  return { ...prepared, data, bytes };
}

/** A subject read (readSubject), or the error that refused it. */
export type ReadOutcome = SubjectInput | Aer1Error;

/** readSubject with a refusal (an Aer1Error) returned, not thrown: a bulk job's subjects are refused one by one. */
export function readOutcome(data: unknown, limits: JobLimits, anchoredAt: Date | string = new Date()): ReadOutcome {
  try {
    return readSubject(data, limits, anchoredAt);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return err;
  }
}

/** Each of `subjects` read once, in the order given (readOutcome). */
export function readSubjects(subjects: readonly unknown[], limits: JobLimits, anchoredAt: Date | string = new Date()): ReadOutcome[] {
  return subjects.map((data) => readOutcome(data, limits, anchoredAt));
}

/** The claims of one subject's job data, its size not checked (readSubject checks it first). */
function claimsFromJobData(data: unknown, limits: JobLimits): SubjectClaims {
  const { maxJobBytes: _ignored, ...docLimits } = limits;
  const options = { limits: docLimits };
  if (isObject(data) && Object.hasOwn(data, 'document')) {
    for (const key of Object.keys(data)) {
      if (key !== 'document' && !(EVIDENCE_MEMBERS as readonly string[]).includes(key)) {
        throw new InputError('unknown_member', 'unknown member of a job wrapper (document, evidence_sha256, evidence_byte_length, evidence_url)', key);
      }
    }
    const evidence: Record<string, unknown> = {};
    for (const m of EVIDENCE_MEMBERS) if (data[m] !== undefined) evidence[m] = data[m];
    return claimsFromInput(data.document, evidence as Evidence, options);
  }
  return claimsFromInput(data, undefined, options);
}

/**
 * A bulk job carries many subjects: `{"subjects": [...]}`, each element what a
 * single-subject job carries. A top-level array stays one subject (a job timeline), and no
 * single-subject form has a `subjects` member, so the member alone tells them apart.
 */
export function isBulkJobData(data: unknown): data is Record<string, unknown> {
  return isObject(data) && Object.hasOwn(data, 'subjects');
}

/**
 * The subjects of a bulk job, its wrapper checked: the whole job within `maxJobBytes`
 * (checkJobSize), then `{"subjects": [1..maxSubjectsPerJob]}`; an InputError naming the member
 * when it is wrong. What the intake and the shard router both check before the subjects.
 */
export function bulkSubjectsOf(data: Record<string, unknown>, limits: { maxJobBytes: number; maxSubjectsPerJob: number }): unknown[] {
  checkJobSize(data, limits.maxJobBytes);
  const { maxSubjectsPerJob } = limits;
  const extra = Object.keys(data).find((k) => k !== 'subjects');
  if (extra !== undefined) throw new InputError('unknown_member', `unknown member next to "subjects" in a bulk job: ${JSON.stringify(extra.slice(0, 64))}`, extra.slice(0, 64));
  const list = data.subjects;
  if (!Array.isArray(list)) throw new InputError('bad_subjects', 'a bulk job\'s "subjects" must be an array of subjects', 'subjects');
  if (list.length === 0) throw new InputError('bad_subjects', 'a bulk job\'s "subjects" is empty', 'subjects');
  if (list.length > maxSubjectsPerJob) {
    throw new InputError('too_many_subjects', `a bulk job holds ${list.length} subjects, over the limit queue.maxSubjectsPerJob = ${maxSubjectsPerJob}`, 'subjects');
  }
  return list;
}

/** A bulk job's subjects, or why the job is refused as a whole (bulkSubjectsOf's message). */
export function bulkSubjectsOrReason(data: Record<string, unknown>, limits: { maxJobBytes: number; maxSubjectsPerJob: number }): { list: unknown[] } | { reason: string } {
  try {
    return { list: bulkSubjectsOf(data, limits) };
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return { reason: err.message };
  }
}
