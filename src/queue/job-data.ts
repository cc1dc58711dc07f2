/**
 * What an anchoring job may carry (SPEC section 7): a full document (receipt, workflow
 * close, job timeline), the same wrapped as `{"document": ..., "evidence_*": ...}`, or
 * the bare envelope fields (`{"subject": ..., ...}`). Parsed once, here, at the edge.
 */
import { InputError } from '../errors.js';
import { claimsFromInput } from '../aer1/document.js';
import type { SubjectClaims, Evidence } from '../envelope/claims.js';
import type { DocumentLimits } from '../aer1/limits.js';

export interface JobLimits extends Partial<DocumentLimits> {
  maxJobBytes: number;
}

const EVIDENCE_MEMBERS = ['evidence_sha256', 'evidence_byte_length', 'evidence_url'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Size of the job's JSON; refuses jobs over the limit before any parsing work. */
export function checkJobSize(data: unknown, maxJobBytes: number): void {
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

export function claimsFromJobData(data: unknown, limits: JobLimits): SubjectClaims {
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
