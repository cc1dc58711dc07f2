/**
 * What an anchoring job may carry (SPEC section 7): a full document (receipt, workflow
 * close, job timeline), the same wrapped as `{"document": ..., "evidence_*": ...}`, or
 * the bare envelope fields (`{"subject": ..., ...}`). Parsed once, here, at the edge.
 */
import { assertValueDepth } from '../../core/aer1/json-limits.js';
import { InputError } from '../../core/errors/errors.js';
import { claimsFromInput } from '../../core/envelope/from-document.js';
import { buildEnvelope, envelopeCanonical } from '../../core/envelope/envelope.js';
import type { SubjectClaims, Evidence } from '../../core/envelope/claims.js';
import type { DocumentLimits } from '../../core/aer1/limits.js';

export interface JobLimits extends Partial<DocumentLimits> {
  maxJobBytes: number;
}

const EVIDENCE_MEMBERS = ['evidence_sha256', 'evidence_byte_length', 'evidence_url'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Size of the job's JSON; refuses jobs over the limit before any parsing work. */
export function checkJobSize(data: unknown, maxJobBytes: number): void {
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
}

/**
 * Largest canonical envelope accepted. Its Nostr event carries it escaped once more, plus an
 * alt tag naming the key, and must stay well under the 64 KiB common relays (strfry) accept;
 * every member is bounded, but 4,096 non-ASCII characters escape to 24 KiB each.
 */
export const MAX_ENVELOPE_BYTES = 16 * 1024;

export function checkEnvelopeSize(claims: SubjectClaims): SubjectClaims {
  // anchored_at has one length; canonical JSON is ASCII, so characters are bytes
  checkCanonicalSize(envelopeCanonical(buildEnvelope(claims, '1970-01-01T00:00:00Z')));
  return claims;
}

/** The same limit on an envelope's canonical text already built (any anchored_at: they all have one length). */
export function checkCanonicalSize(canonical: string): string {
  if (canonical.length > MAX_ENVELOPE_BYTES) {
    throw new InputError('too_large', `its envelope would be ${canonical.length} bytes of canonical JSON, over the limit of ${MAX_ENVELOPE_BYTES} (so its Nostr event fits what relays accept)`, '$');
  }
  return canonical;
}

export function claimsFromJobData(data: unknown, limits: JobLimits): SubjectClaims {
  return checkEnvelopeSize(claimsFromJobDataUnchecked(data, limits));
}

/**
 * claimsFromJobData without the envelope's size: for the intake, which builds the envelope
 * anyway and checks its text (checkCanonicalSize) before anything is written.
 */
export function claimsFromJobDataUnchecked(data: unknown, limits: JobLimits): SubjectClaims {
  checkJobSize(data, limits.maxJobBytes);
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
