/**
 * Intake: the BullMQ worker on the issuers' queue. Each job is validated once, turned
 * into an envelope, and accepted into state atomically; the job id is the subject key,
 * so a second job for the same root is a no-op and one for another root is a conflict.
 * Refused jobs fail without retry, with the reason recorded in state. A job that met a Redis
 * refusing writes (full, read-only, unreachable) is not failed: it waits, delayed, and tries
 * again, however long Redis refuses, so it never spends its attempts and is never deleted
 * without a record.
 */
import { DelayedError, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { Aer1Error } from '../../core/errors/errors.js';
import { canonicalJson } from '../../core/aer1/canonical-json.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { buildEnvelope, envelopeCanonical, subjectKey } from '../../core/envelope/envelope.js';
import type { SubjectClaims } from '../../core/envelope/claims.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { WitnessName } from '../state/keys.js';
import { claimsFromJobData, type JobLimits } from './job-data.js';
import { backoffDelay } from './backoff.js';
import { ANCHOR_JOB } from './names.js';
import { boundedFailures } from './failed-attempts.js';
import { stalledJobOptions } from './stalled.js';
import { quoteBounded } from '../../core/aer1/json-limits.js';
import { redisRefusal } from '../redis/redis-refusal.js';

export interface IntakeResult {
  key: string;
  result: 'created' | 'duplicate';
  digest: string;
}

export interface Anchoring {
  witnesses: readonly WitnessName[];
  /** Batchers a new subject enters. */
  inboxes: readonly WitnessName[];
  /** Envelope mode: signs the subject's event (stored with it atomically). */
  signEnvelope?: (canonical: string, digestHex: string) => { id: string; json: string };
  /** After a subject is accepted (or found again): make sure its witness work is queued. */
  afterAccept: (key: string, nostrEventId: string | null) => Promise<void>;
}

/** The fingerprint of a subject's root: its claims without `anchored_at`. */
export function rootFingerprint(claims: SubjectClaims): string {
  return sha256Hex(canonicalJson(claims));
}

/** BullMQ gives jobs added without an id a numeric one; those take the key from the document. */
function isGeneratedJobId(id: string | undefined): boolean {
  return id === undefined || /^\d+$/.test(id);
}

export class IntakeProcessor {
  private readonly store: AnchorStore;
  private readonly limits: JobLimits;
  private readonly anchoring: Anchoring;
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(store: AnchorStore, limits: JobLimits, anchoring: Anchoring, log: Logger, now: () => Date = () => new Date()) {
    this.store = store;
    this.limits = limits;
    this.anchoring = anchoring;
    this.log = log.child({ part: 'intake' });
    this.now = now;
  }

  /** Records a job refused before its data is read (another job name), like any refusal; always throws. */
  async refuse(jobId: string | undefined, reason: string): Promise<never> {
    if (jobId !== undefined) await this.store.reject(jobId, reason);
    this.log.warn({ jobId, reason }, 'job refused');
    throw new UnrecoverableError(`refused: ${reason}`);
  }

  /** Validates and accepts one job's data under `jobId`; throws UnrecoverableError when refused. */
  async process(jobId: string | undefined, data: unknown): Promise<IntakeResult> {
    let claims: SubjectClaims;
    try {
      claims = claimsFromJobData(data, this.limits);
    } catch (err) {
      if (!(err instanceof Aer1Error)) throw err;
      const reason = err.message;
      if (jobId !== undefined) await this.store.reject(jobId, reason);
      this.log.warn({ jobId, reason }, 'job refused');
      throw new UnrecoverableError(`refused: ${reason}`);
    }
    const key = subjectKey(claims);
    if (jobId !== undefined && jobId !== key && !isGeneratedJobId(jobId)) {
      const reason = `job id ${quoteBounded(jobId)} is not the subject key ${quoteBounded(key)} (receipt_uuid, or job_id for chain heads)`;
      await this.store.reject(jobId, reason);
      throw new UnrecoverableError(`refused: ${reason}`);
    }
    const envelope = buildEnvelope(claims, this.now());
    const canonical = envelopeCanonical(envelope);
    const digest = sha256Hex(canonical);
    const event = this.anchoring.signEnvelope?.(canonical, digest);
    const res = await this.store.accept({
      key,
      kind: claims.subject,
      envelopeCanonical: canonical,
      digest,
      fingerprint: rootFingerprint(claims),
      witnesses: this.anchoring.witnesses,
      inboxes: this.anchoring.inboxes,
      nostrEvent: event,
    });
    if (res.result === 'conflict') {
      const reason = `conflict: subject ${key} is already anchored with another root (envelope digest ${res.digest}); refused, not re-anchored`;
      await this.store.reject(key, reason, 'conflict');
      this.log.warn({ key }, 'conflicting root refused');
      throw new UnrecoverableError(reason);
    }
    const record = res.result === 'created' ? null : await this.store.getRecord(key);
    await this.anchoring.afterAccept(key, res.result === 'created' ? (event?.id ?? null) : (record?.nostrEventId ?? null));
    return { key, result: res.result, digest: res.result === 'created' ? digest : res.digest };
  }
}

export interface IntakeWorkerOptions {
  queueName: string;
  bullPrefix: string;
  connection: ConnectionOptions;
  concurrency: number;
  stalledIntervalMs: number;
}

/** Delay before a job that met a Redis refusal tries again: backs off from 1 s to 10 s. */
export const REFUSAL_BACKOFF = { initialMs: 1000, maxMs: 10_000 } as const;
/** Tries, a second apart, to move such a job back to delayed before leaving it to the stalled check. */
const PARK_TRIES = 3;

/**
 * Puts a job that met a Redis refusal back to delayed without spending an attempt, and
 * throws BullMQ's DelayedError so the worker neither fails nor completes it. When Redis
 * refuses that move too, the job is left active: its lock lapses and the stalled check
 * hands it back (queue.stalledIntervalMs), still with its attempts.
 */
async function park(job: Job, token: string | undefined, err: unknown, log: Logger): Promise<never> {
  const delay = backoffDelay(job.attemptsStarted, REFUSAL_BACKOFF.initialMs, REFUSAL_BACKOFF.maxMs);
  // debug: with Redis full every queued job passes here, every few seconds.
  log.debug({ jobId: job.id, err, retryInMs: delay }, 'Redis refused an intake write; the job waits and tries again');
  for (let i = 0; i < PARK_TRIES && token !== undefined; i++) {
    try {
      await job.moveToDelayed(Date.now() + delay, token);
      break;
    } catch (moveErr) {
      if (redisRefusal(moveErr) === null) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  throw new DelayedError();
}

export function startIntakeWorker(opts: IntakeWorkerOptions, processor: IntakeProcessor, log: Logger): Worker {
  const worker = new Worker(
    opts.queueName,
    boundedFailures(async (job: Job, token?: string) => {
      try {
        if (job.name !== ANCHOR_JOB) {
          return await processor.refuse(job.id, `unknown job name ${quoteBounded(job.name)} (expected "${ANCHOR_JOB}")`);
        }
        return await processor.process(job.id, job.data);
      } catch (err) {
        if (err instanceof UnrecoverableError || redisRefusal(err) === null) throw err;
        return park(job, token, err, log);
      }
    }, log),
    {
      connection: opts.connection,
      prefix: opts.bullPrefix,
      concurrency: opts.concurrency,
      ...stalledJobOptions(opts.stalledIntervalMs),
      // Ids are freed once a job ends, so a fixed document can be enqueued again under its key;
      // what happened is kept in the anchor state.
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    },
  );
  worker.on('error', (err) => log.warn({ err }, 'intake worker error'));
  return worker;
}

