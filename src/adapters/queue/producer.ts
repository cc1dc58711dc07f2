/**
 * The producer side of the intake queue, shared by `aer1-anchor enqueue` and
 * `POST /v1/anchors`: validate first (so bad input is refused at once with a reason),
 * refuse a known key with another root, then add the job under the subject key.
 */
import type { Queue } from 'bullmq';
import { ConflictError } from '../../core/errors/errors.js';
import { subjectKey } from '../../core/envelope/envelope.js';
import type { SubjectClaims } from '../../core/envelope/claims.js';
import type { AnchorStore } from '../state/anchor-store.js';
import { rootFingerprint } from './intake.js';
import { claimsFromJobData, type JobLimits } from './job-data.js';
import { ANCHOR_JOB } from './names.js';

export interface EnqueueOutcome {
  key: string;
  /** queued: a job was added; known: the subject is already anchored with this root; in-queue: a job for it waits. */
  result: 'queued' | 'known' | 'in-queue';
  status: string | null;
}

/** Job options every producer should use: retries for transient failures, ids freed when done. */
export const ANCHOR_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

/** BullMQ refuses custom job ids that read as integers or hold a ':' outside its `a:b:c` form. */
export function usableAsJobId(key: string): boolean {
  if (`${parseInt(key, 10)}` === key) return false;
  return !key.includes(':') || key.split(':').length === 3;
}

export async function enqueueAnchor(queue: Queue, store: AnchorStore, data: unknown, limits: JobLimits): Promise<EnqueueOutcome> {
  const claims: SubjectClaims = claimsFromJobData(data, limits);
  const key = subjectKey(claims);
  const fingerprint = rootFingerprint(claims);
  const existing = await store.redis.hmget(store.keys.subject(key), 'fp', 'status', 'digest');
  const [fp, status, digest] = existing;
  if (status && status !== 'rejected') {
    if (fp !== fingerprint) {
      throw new ConflictError(key, `conflict: subject ${key} is already anchored with another root (envelope digest ${digest}); refused, not re-anchored`);
    }
    return { key, result: 'known', status };
  }
  if (!usableAsJobId(key)) {
    // BullMQ would throw on this id: let it pick one; intake takes the key from the document and ACCEPT keeps it idempotent.
    await queue.add(ANCHOR_JOB, data, ANCHOR_JOB_OPTIONS);
    return { key, result: 'queued', status: null };
  }
  await queue.add(ANCHOR_JOB, data, { jobId: key, ...ANCHOR_JOB_OPTIONS });
  // BullMQ keeps the first job under an id: a different document already waiting there is a conflict too.
  const stored = await queue.getJob(key);
  if (stored && JSON.stringify(stored.data) !== JSON.stringify(data)) {
    let waiting: string | null = null;
    try {
      waiting = rootFingerprint(claimsFromJobData(stored.data, limits));
    } catch {
      // the waiting job is malformed; the worker will refuse it and free the id
    }
    if (waiting !== fingerprint) {
      throw new ConflictError(key, `conflict: a job for subject ${key} with another root is already queued; refused`);
    }
    return { key, result: 'in-queue', status: null };
  }
  return { key, result: 'queued', status: null };
}
