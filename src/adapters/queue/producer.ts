/**
 * The producer side of the intake queue, shared by `aer1-anchor enqueue` and
 * `POST /v1/anchors`: validate first (so bad input is refused at once with a reason),
 * refuse a known key with another root, then add the job under the subject key.
 * `enqueueAnchors` does the same for many subjects, as bulk jobs. Each subject is read once
 * (readSubject); `enqueueSubject(s)` take subjects read already, as `POST /v1/anchors` does.
 */
import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import { Aer1Error, ConflictError, InputError } from '../../core/errors/errors.js';
import type { KnownSubjects } from '../state/subjects.js';
import { readSubject, readSubjects, type JobLimits, type ReadOutcome, type SubjectInput } from '../intake/job-data.js';
import { ANCHOR_JOB } from '../bullmq/names.js';

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

export async function enqueueAnchor(queue: Queue, known: KnownSubjects, data: unknown, limits: JobLimits): Promise<EnqueueOutcome> {
  return enqueueSubject(queue, known, readSubject(data, limits), limits);
}

/** `enqueueAnchor` for a subject read already (readSubject). */
export async function enqueueSubject(queue: Queue, known: KnownSubjects, subject: SubjectInput, limits: JobLimits): Promise<EnqueueOutcome> {
  const { key, fingerprint, data } = subject;
  const { fingerprint: fp, status, digest } = (await known.intakeStates([key]))[0]!;
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
      waiting = readSubject(stored.data, limits).fingerprint;
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

/** `{"subjects":[]}` */
const BULK_WRAPPER_BYTES = 15;

/** queue.maxSubjectsPerJob's default: the most subjects a bulk job carries. */
export const DEFAULT_MAX_SUBJECTS_PER_JOB = 1000;

/** One subject of `enqueueAnchors`, in the order given: queued in a bulk job, already known, or refused. */
export type BulkEnqueueOutcome =
  | (EnqueueOutcome & { index: number; /** The bulk job it rides in (queued only). */ job?: string })
  | { index: number; key?: string; error: { code: string; message: string; field?: string } };

export interface BulkEnqueueOptions {
  /** Most subjects per bulk job (the daemon's queue.maxSubjectsPerJob; default 1,000). */
  maxSubjectsPerJob?: number;
  /** Called after each bulk job is added, with its subjects' outcomes (what is queued should Redis fail later). */
  onJobAdded?: (outcomes: BulkEnqueueOutcome[]) => void;
}

/**
 * A bulk job's id: a digest of the subject keys and roots it carries, so adding the same
 * list twice while the first job waits is one job (BullMQ keeps the first under an id).
 */
export function bulkJobId(items: ReadonlyArray<{ key: string; fingerprint: string }>): string {
  const h = createHash('sha256');
  for (const { key, fingerprint } of items) h.update(`${key.length}:${key}${fingerprint}`);
  return `bulk-${h.digest('hex').slice(0, 40)}`;
}

/**
 * Enqueues many subjects as bulk jobs (`{"subjects": [...]}`), up to `maxSubjectsPerJob` per
 * job and `limits.maxJobBytes` of JSON per job.
 * Each subject is validated on its own: a bad one is reported in its place and the rest go
 * on; a key already anchored with this root is `known`, with another root a conflict. The
 * same key twice in the list rides once. A Redis error stops the call and is thrown, with
 * the jobs added before it still queued (adding the same list again is safe: the daemon
 * accepts nothing twice).
 */
export async function enqueueAnchors(queue: Queue, known: KnownSubjects, subjects: readonly unknown[], limits: JobLimits, opts: BulkEnqueueOptions = {}): Promise<BulkEnqueueOutcome[]> {
  return enqueueSubjects(queue, known, readSubjects(subjects, limits), limits, opts);
}

/** `enqueueAnchors` for subjects read already (readSubjects); a refused one is reported in its place. */
export async function enqueueSubjects(queue: Queue, known: KnownSubjects, subjects: readonly ReadOutcome[], limits: JobLimits, opts: BulkEnqueueOptions = {}): Promise<BulkEnqueueOutcome[]> {
  const max = opts.maxSubjectsPerJob ?? DEFAULT_MAX_SUBJECTS_PER_JOB;
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxSubjectsPerJob must be a positive integer, got ${max}`);
  const out: Array<BulkEnqueueOutcome | null> = subjects.map(() => null);
  const parsed: Array<{ index: number; data: unknown; bytes: number; key: string; fingerprint: string }> = [];
  subjects.forEach((s, index) => {
    if (s instanceof Aer1Error) {
      const field = s instanceof InputError && s.field !== undefined ? { field: s.field } : {};
      out[index] = { index, error: { code: s.code, message: s.message, ...field } };
    } else parsed.push({ index, data: s.data, bytes: s.bytes, key: s.key, fingerprint: s.fingerprint });
  });
  const states = await known.intakeStates(parsed.map((p) => p.key));
  const toQueue: typeof parsed = [];
  const seen = new Map<string, { fingerprint: string; index: number }>();
  parsed.forEach((p, i) => {
    const { fingerprint: fp, status, digest } = states[i]!;
    if (status && status !== 'rejected') {
      if (fp !== p.fingerprint) {
        out[p.index] = { index: p.index, key: p.key, error: { code: 'conflict', message: `conflict: subject ${p.key} is already anchored with another root (envelope digest ${digest}); refused, not re-anchored` } };
      } else {
        out[p.index] = { index: p.index, key: p.key, result: 'known', status };
      }
      return;
    }
    const first = seen.get(p.key);
    if (first && first.fingerprint !== p.fingerprint) {
      out[p.index] = { index: p.index, key: p.key, error: { code: 'conflict', message: `conflict: subjects[${first.index}] has the same key ${p.key} with another root; refused` } };
      return;
    }
    if (!first) {
      seen.set(p.key, { fingerprint: p.fingerprint, index: p.index });
      toQueue.push(p);
    } else {
      out[p.index] = { index: p.index, key: p.key, result: 'queued', status: null };
    }
  });
  const jobOf = new Map<string, string>();
  // a job closes at `max` subjects or at limits.maxJobBytes of JSON (the daemon holds a bulk job to it as a whole)
  const sizes = toQueue.map((p) => p.bytes + 1);
  for (let i = 0; i < toQueue.length; ) {
    let j = i;
    let bytes = BULK_WRAPPER_BYTES;
    while (j < toQueue.length && j - i < max && (j === i || bytes + sizes[j]! <= limits.maxJobBytes)) bytes += sizes[j++]!;
    const chunk = toQueue.slice(i, j);
    i = j;
    const job = bulkJobId(chunk);
    await queue.add(ANCHOR_JOB, { subjects: chunk.map((p) => p.data) }, { jobId: job, ...ANCHOR_JOB_OPTIONS });
    for (const p of chunk) {
      out[p.index] = { index: p.index, key: p.key, result: 'queued', status: null, job };
      jobOf.set(p.key, job);
    }
    opts.onJobAdded?.(chunk.map((p) => out[p.index]!));
  }
  // repeats of a key ride in its first one's job
  return out.map((o) => (o && !('error' in o) && o.result === 'queued' && o.job === undefined ? { ...o, job: jobOf.get(o.key)! } : o!));
}
