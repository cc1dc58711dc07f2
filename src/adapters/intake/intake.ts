/**
 * Intake: the BullMQ worker on the issuers' queue. Each job is validated once, turned
 * into an envelope, and accepted into state atomically; the job id is the subject key,
 * so a second job for the same root is a no-op and one for another root is a conflict.
 * Job data is untrusted input: here is its edge, where each subject is read once (readSubject)
 * and then passed on as read (the shard router reads and hands its subjects over the same way).
 * A bulk job (`{"subjects": [...]}`, up to queue.maxSubjectsPerJob) carries many subjects:
 * each is validated on its own and accepted one script call per chunk, and the ones refused
 * are reported per subject in the job's return value (bounded: BulkIntakeResult) without
 * failing the rest.
 * Refused jobs fail without retry, with the reason recorded in state. A job that met a Redis
 * refusing writes (full, read-only, unreachable) is not failed: it waits, delayed, and tries
 * again, however long Redis refuses, so it never spends its attempts and is never deleted
 * without a record.
 */
import type { SignedEvent } from '../../core/nostr/events.js';
import { DelayedError, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { Aer1Error, InputError } from '../../core/errors/errors.js';
import { rootFingerprint, type PreparedSubject } from '../../core/envelope/prepared.js';
import type { Envelope } from '../../core/envelope/envelope.js';
import type { AnchorStore } from '../state/anchor-store.js';
import { ACCEPT_CHUNK, type AcceptResult, type AcceptSubject } from '../state/subjects.js';
import type { WitnessName } from '../state/keys.js';
import { bulkSubjectsOrReason, isBulkJobData, readOutcome, type JobLimits, type ReadOutcome, type SubjectInput } from './job-data.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { ANCHOR_JOB } from '../bullmq/names.js';
import { boundedFailures } from '../bullmq/failed-attempts.js';
import { stalledJobOptions } from '../bullmq/stalled.js';
import { quoteBounded } from '../../core/aer1/json-limits.js';
import { redisRefusal } from '../redis/redis-refusal.js';
import { SubjectBudget } from './subject-budget.js';
import type { LoggedStamp } from '../log/logged-stamps.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

export interface IntakeResult {
  key: string;
  result: 'created' | 'duplicate';
  digest: string;
}

/** One subject of a bulk job: accepted (created or found again), or refused with the reason. */
export type BulkSubjectResult =
  | { index: number; key: string; result: 'created' | 'duplicate'; digest: string }
  | { index: number; key: string; result: 'conflict'; digest: string; reason: string }
  | { index: number; result: 'refused'; code: string; reason: string; field?: string };

/**
 * Most per-subject entries a bulk job's return value lists. BullMQ copies every finished job's
 * return value into the queue's events stream, which it trims by entry count (~10,000), not
 * bytes: a list of every subject (~154 B each) kept ~165 B per subject there.
 */
export const BULK_RESULTS_MAX = 32;

/**
 * A bulk job's return value: counts, then the subjects that were not created (refused and
 * conflicts first, then duplicates; at most BULK_RESULTS_MAX, listed in the job's order).
 * `omitted` counts those not listed. A created subject is not listed: its key is the one the
 * issuer sent, its digest is in `GET /v1/anchors/{key}` (`AnchorStore.getRecord`).
 */
export interface BulkIntakeResult {
  bulk: true;
  subjects: number;
  created: number;
  duplicate: number;
  conflict: number;
  refused: number;
  results: BulkSubjectResult[];
  omitted: number;
}

/** The entries a bulk job's return value lists: see BulkIntakeResult. */
export function bulkResultsListed(done: readonly BulkSubjectResult[], max = BULK_RESULTS_MAX): { results: BulkSubjectResult[]; omitted: number } {
  const problems = done.filter((x) => x.result === 'refused' || x.result === 'conflict');
  const duplicates = done.filter((x) => x.result === 'duplicate');
  const listed = [...problems, ...duplicates].slice(0, max).sort((a, b) => a.index - b.index);
  return { results: listed, omitted: problems.length + duplicates.length - listed.length };
}

/**
 * Subjects of a bulk job prepared (envelope built) and accepted at once: one accept script
 * call's worth, so a job of queue.maxSubjectsPerJob holds one page's envelopes at a time.
 */
export const INTAKE_PAGE = ACCEPT_CHUNK.subjects;

/** Subjects accepted (created or already there) and what the batchers need to hear. */
export interface Accepted {
  subjects: Array<{ key: string; nostrEventId: string | null }>;
  /** Each inbox's length after new subjects went in (absent: none went in). */
  inboxLengths: Partial<Record<WitnessName, number>>;
}

export interface Anchoring {
  witnesses: readonly WitnessName[];
  /** Batchers a new subject enters. */
  inboxes: readonly WitnessName[];
  /** Envelope mode: signs the subject's event (stored with it atomically), from the subject as read. */
  signEnvelope?: (subject: PreparedSubject) => SignedEvent;
  /** After subjects are accepted (or found again): make sure their witness work is queued. */
  afterAccept: (accepted: Accepted) => Promise<void>;
  /**
   * Retired subjects (the proof archive): the envelope and digest archived under `key`, or
   * null. A key found there is answered from it (duplicate, or conflict for another root) and
   * never accepted as new.
   */
  archived?: (key: string) => Promise<{ envelope: Record<string, unknown>; digest: string } | null>;
  /**
   * With the anchor log: per subject, the entry the log holds for its key when Redis no
   * longer holds its acceptance, and the `anchored_at` giving that entry's digest (null: none
   * does); null when the log does not hold the key or Redis holds its acceptance
   * (src/adapters/log/logged-stamps.ts). Such a subject is accepted with the envelope it was
   * logged with, or refused as a conflict.
   */
  logged?: (subjects: readonly SubjectInput[]) => Promise<Array<LoggedStamp | null>>;
  /**
   * With the anchor log: per key, the envelope and digest of a subject retired lean (rebuilt
   * from its retired facts and its log entry: src/adapters/proof/retired.ts), or null. Such a
   * key is answered from it (duplicate, or conflict for another root), never accepted as new.
   */
  retired?: (keys: readonly string[]) => Promise<Array<{ envelope: Record<string, unknown>; digest: string; index: number } | null>>;
}

type ArchivedAnswer = { result: 'duplicate'; digest: string } | { result: 'conflict'; digest: string; reason: string };
type Conflict = Extract<ArchivedAnswer, { result: 'conflict' }>;

export interface IntakeLimits extends JobLimits {
  /** Most subjects one bulk job may carry (queue.maxSubjectsPerJob). */
  maxSubjectsPerJob: number;
}

/** The fingerprint of a subject's root (core/envelope/prepared.ts). */
export { rootFingerprint };

/** BullMQ gives jobs added without an id a numeric one; those take the key from the document. */
export function isGeneratedJobId(id: string | undefined): boolean {
  return id === undefined || /^\d+$/.test(id);
}

export class IntakeProcessor {
  private readonly store: AnchorStore;
  private readonly limits: IntakeLimits;
  private readonly anchoring: Anchoring;
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(store: AnchorStore, limits: IntakeLimits, anchoring: Anchoring, log: Logger, now: () => Date = () => new Date()) {
    this.store = store;
    this.limits = limits;
    this.anchoring = anchoring;
    this.log = log.child({ part: 'intake' });
    this.now = now;
  }

  /** Records a job refused before its data is read (another job name), like any refusal; always throws. */
  async refuse(jobId: string | undefined, reason: string): Promise<never> {
    if (jobId !== undefined) await this.store.subjects.reject(jobId, reason);
    this.log.warn({ jobId, reason }, 'job refused');
    throw new UnrecoverableError(`refused: ${reason}`);
  }

  /** A subject of a job read (readSubject, its envelope stamped now), or the error that refuses it. */
  read(data: unknown): ReadOutcome {
    return readOutcome(data, this.limits, this.now());
  }

  /** Validates and accepts one job's data under `jobId`; throws UnrecoverableError when refused. */
  async process(jobId: string | undefined, data: unknown): Promise<IntakeResult | BulkIntakeResult> {
    if (!isBulkJobData(data)) return this.acceptOne(jobId, this.read(data));
    const bulk = bulkSubjectsOrReason(data, this.limits);
    if ('reason' in bulk) return this.refuse(jobId, bulk.reason);
    const { list } = bulk;
    // read a page at a time, as acceptBulk takes them
    return this.acceptBulk(jobId, list.length, (i) => this.read(list[i]));
  }

  /** Accepts one job's subject, read already (by process, or by the shard router), under `jobId`; throws UnrecoverableError when refused. */
  async acceptOne(jobId: string | undefined, read: ReadOutcome): Promise<IntakeResult> {
    if (read instanceof Aer1Error) return this.refuse(jobId, read.message);
    const key = read.key;
    if (jobId !== undefined && jobId !== key && !isGeneratedJobId(jobId)) {
      const reason = `job id ${quoteBounded(jobId)} is not the subject key ${quoteBounded(key)} (receipt_uuid, or job_id for chain heads)`;
      await this.store.subjects.reject(jobId, reason);
      throw new UnrecoverableError(`refused: ${reason}`);
    }
    const archived = await this.fromArchive(read);
    if (archived?.result === 'duplicate') return { key, result: 'duplicate', digest: archived.digest };
    if (archived) {
      this.log.warn({ key }, 'conflicting root refused (subject retired to the archive)');
      throw new UnrecoverableError(archived.reason);
    }
    const stamped = (await this.asLogged([read]))[0]!;
    if (stamped.result === 'conflict') {
      this.log.warn({ key }, 'conflicting root refused (subject in the anchor log)');
      throw new UnrecoverableError(stamped.reason);
    }
    if (stamped.result === 'duplicate') return { key, result: 'duplicate', digest: stamped.digest };
    const subject = this.signed(stamped);
    const { results, inboxLengths } = await this.acceptAnswered([subject]);
    const res = results[0]!;
    if (res.result === 'conflict') {
      // the accept script recorded it in the subject's history and on the stream
      this.log.warn({ key }, 'conflicting root refused');
      throw new UnrecoverableError(res.reason);
    }
    const eventId = res.result === 'created' ? (subject.nostrEvent?.id ?? null) : res.nostrEventId;
    await this.anchoring.afterAccept({ subjects: [{ key, nostrEventId: eventId }], inboxLengths });
    return { key, result: res.result, digest: res.result === 'created' ? subject.digest : res.digest };
  }

  /** How the archive answers for a subject retired from Redis; null when it holds nothing under its key. */
  private async fromArchive(subject: SubjectInput): Promise<ArchivedAnswer | null> {
    if (!this.anchoring.archived) return null;
    const { key } = subject;
    const found = await this.anchoring.archived(key);
    if (!found) return null;
    if (rootFingerprint(found.envelope as unknown as Envelope) === subject.fingerprint) return { result: 'duplicate', digest: found.digest };
    return { result: 'conflict', digest: found.digest, reason: `conflict: subject ${key} is already anchored with another root (envelope digest ${found.digest}, retired to the proof archive); refused, not re-anchored` };
  }

  /**
   * Subjects whose key the anchor log holds while Redis does not hold their acceptance (lost
   * writes) stamped with the `anchored_at` they were logged with, so each gets back the
   * envelope its entry holds; a subject no such stamp fits is another root: a conflict.
   */
  private async asLogged(subjects: SubjectInput[]): Promise<Array<(SubjectInput & { result?: undefined }) | ArchivedAnswer>> {
    const retired = await this.fromRetired(subjects);
    const rest = subjects.filter((_s, i) => retired[i] === null);
    if (!this.anchoring.logged || rest.length === 0) return subjects.map((s, i) => retired[i] ?? s);
    const found = await this.anchoring.logged(rest);
    let next = 0;
    return subjects.map((subject, i) => {
      if (retired[i]) return retired[i]!;
      const stamp = found[next++];
      if (!stamp) return subject;
      const again = stamp.anchoredAt === null ? null : readOutcome(subject.data, this.limits, stamp.anchoredAt);
      if (again && !(again instanceof Aer1Error) && again.digest === stamp.digest) return again;
      return { result: 'conflict', digest: stamp.digest, reason: `conflict: subject ${subject.key} is already in the anchor log with another root (entry ${stamp.index}, envelope digest ${stamp.digest}); refused, not re-anchored` };
    });
  }

  /** How the anchor log answers for subjects retired lean (null for the others): duplicate, or conflict for another root. */
  private async fromRetired(subjects: ReadonlyArray<{ key: string; fingerprint: string }>): Promise<Array<ArchivedAnswer | null>> {
    if (!this.anchoring.retired || subjects.length === 0) return subjects.map(() => null);
    const found = await this.anchoring.retired(subjects.map((s) => s.key));
    return subjects.map((subject, i) => {
      const f = found[i];
      if (!f) return null;
      if (rootFingerprint(f.envelope as unknown as Envelope) === subject.fingerprint) return { result: 'duplicate', digest: f.digest };
      return { result: 'conflict', digest: f.digest, reason: `conflict: subject ${subject.key} is already anchored with another root (envelope digest ${f.digest}, retired from Redis, entry ${f.index} of the anchor log); refused, not re-anchored` };
    });
  }

  /**
   * acceptMany, a subject retired lean meanwhile (between the check above and the accept
   * script: the script writes nothing for it) answered from its retired facts.
   */
  private async acceptAnswered(subjects: readonly AcceptSubject[]): Promise<{ results: Array<Exclude<AcceptResult, { result: 'retired' }>>; inboxLengths: Accepted['inboxLengths'] }> {
    const { results, inboxLengths } = await this.store.subjects.acceptMany(this.anchoring, subjects);
    const retired = subjects.filter((_s, i) => results[i]!.result === 'retired');
    const answers = retired.length > 0 ? await this.fromRetired(retired) : [];
    let j = 0;
    return {
      inboxLengths,
      results: results.map((r) => {
        if (r.result !== 'retired') return r;
        const a = answers[j++];
        if (!a) throw new Error('a subject retired lean could not be read back from the anchor log');
        return a.result === 'duplicate' ? { result: 'duplicate', digest: a.digest, nostrEventId: null } : a;
      }),
    };
  }

  /** What the accept script stores for a subject read: the subject as read, its event signed in envelope mode. */
  private signed(subject: SubjectInput): AcceptSubject {
    return { ...subject, nostrEvent: this.anchoring.signEnvelope?.(subject) };
  }

  /**
   * A bulk job of `count` subjects, its wrapper checked already (bulkSubjectsOf), `subjectAt(i)`
   * reading (or handing over) the i-th: each subject on its own.
   * A retry (after a crash or a Redis refusal) accepts nothing twice: subjects already in state
   * come back as duplicates, under the same conflict rules as single jobs.
   */
  async acceptBulk(jobId: string | undefined, count: number, subjectAt: (index: number) => ReadOutcome): Promise<BulkIntakeResult> {
    // Counted, and only the subjects not created kept (at most BULK_RESULTS_MAX of each kind,
    // all the return value can list): a created subject leaves nothing behind once its page is in.
    const tally = { created: 0, duplicate: 0, conflict: 0, refused: 0 };
    const problems: BulkSubjectResult[] = [];
    const duplicates: BulkSubjectResult[] = [];
    const keep = (page: BulkSubjectResult[]): void => {
      for (const r of page.sort((a, b) => a.index - b.index)) {
        const into = r.result === 'duplicate' ? duplicates : problems;
        if (into.length < BULK_RESULTS_MAX) into.push(r);
      }
    };
    // Read (envelopes and script arguments) and accepted a page of INTAKE_PAGE subjects at a
    // time, then dropped, so a job's working set is bounded by the page, not the job.
    const after: Accepted['subjects'] = [];
    const inboxLengths: Accepted['inboxLengths'] = {};
    for (let p = 0; p < count; p += INTAKE_PAGE) {
      const unarchived: Array<{ index: number; subject: SubjectInput }> = [];
      // this page's subjects not created, kept in the job's order once the page is in
      const notes: BulkSubjectResult[] = [];
      for (let index = p; index < Math.min(p + INTAKE_PAGE, count); index++) {
        const read = subjectAt(index);
        if (read instanceof Aer1Error) {
          const field = read instanceof InputError && read.field !== undefined && read.field !== '$' ? read.field : undefined;
          tally.refused++;
          notes.push({ index, result: 'refused', code: read.code, reason: read.message, ...(field !== undefined ? { field } : {}) });
          continue;
        }
        const archived = await this.fromArchive(read);
        if (archived) {
          tally[archived.result]++;
          notes.push({ index, key: read.key, ...archived });
        } else unarchived.push({ index, subject: read });
      }
      const stamped = await this.asLogged(unarchived.map((r) => r.subject));
      const valid: Array<{ index: number; subject: AcceptSubject }> = [];
      stamped.forEach((s, i) => {
        const { index, subject } = unarchived[i]!;
        if (s.result === undefined) return void valid.push({ index, subject: this.signed(s) });
        tally[s.result]++;
        notes.push({ index, key: subject.key, ...s });
      });
      if (valid.length === 0) {
        keep(notes);
        continue;
      }
      const page = await this.acceptAnswered(valid.map((v) => v.subject));
      Object.assign(inboxLengths, page.inboxLengths);
      page.results.forEach((res, i) => {
        const { index, subject } = valid[i]!;
        tally[res.result]++;
        if (res.result === 'conflict') {
          notes.push({ index, key: subject.key, result: 'conflict', digest: res.digest, reason: res.reason });
          return;
        }
        if (res.result === 'duplicate') notes.push({ index, key: subject.key, result: 'duplicate', digest: res.digest });
        after.push({ key: subject.key, nostrEventId: res.result === 'created' ? (subject.nostrEvent?.id ?? null) : res.nostrEventId });
      });
      keep(notes);
    }
    if (after.length > 0) await this.anchoring.afterAccept({ subjects: after, inboxLengths });
    const listed = [...problems, ...duplicates].slice(0, BULK_RESULTS_MAX).sort((a, b) => a.index - b.index);
    const out: BulkIntakeResult = { bulk: true, subjects: count, ...tally, results: listed, omitted: tally.duplicate + tally.conflict + tally.refused - listed.length };
    if (out.conflict + out.refused > 0) {
      const first = problems[0]!;
      this.log.warn({ jobId, subjects: out.subjects, conflict: out.conflict, refused: out.refused, first: { index: first.index, reason: 'reason' in first ? first.reason : '' } }, 'bulk job: some subjects refused');
    }
    return out;
  }
}

export interface IntakeWorkerOptions {
  queueName: string;
  bullPrefix: string;
  connection: ConnectionOptions;
  /** Most jobs at once (queue.concurrency). */
  concurrency: number;
  /** Most subjects of the jobs at once (queue.maxSubjectsInFlight; default DEFAULT_MAX_SUBJECTS_IN_FLIGHT). */
  maxSubjectsInFlight?: number;
  stalledIntervalMs: number;
  /** The daemon's shared backoff while Redis refuses writes. */
  refusals?: RefusalBackoff;
}

/** The intake worker of the queue settings (the config's `queue`) on `bullPrefix`: the router's and each shard's alike. */
export function intakeWorkerOptions(queue: { name: string; concurrency: number; maxSubjectsInFlight: number; stalledIntervalMs: number }, bullPrefix: string, connection: ConnectionOptions, refusals?: RefusalBackoff): IntakeWorkerOptions {
  return { queueName: queue.name, bullPrefix, connection, concurrency: queue.concurrency, maxSubjectsInFlight: queue.maxSubjectsInFlight, stalledIntervalMs: queue.stalledIntervalMs, ...(refusals ? { refusals } : {}) };
}

/** queue.maxSubjectsInFlight's default: four bulk jobs of 1,000 at once (docs/performance.md, Daemon RSS after a burst). */
export const DEFAULT_MAX_SUBJECTS_IN_FLIGHT = 4000;

/** Subjects a job carries, as the budget counts them: a bulk job's list length, else one. */
function subjectsOf(data: unknown): number {
  return isBulkJobData(data) && Array.isArray(data.subjects) ? Math.max(1, data.subjects.length) : 1;
}

/**
 * Delay before a job that met a Redis refusal tries again: 1 s, then 2 s. Short, so work
 * resumes soon after Redis takes writes again: the daemon's shared RefusalBackoff, which
 * pauses the workers meanwhile, is what paces a long refusal.
 */
export const REFUSAL_BACKOFF = { initialMs: 1000, maxMs: 2000 } as const;
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

/** What an intake worker hands its jobs to: one shard's IntakeProcessor, or the ShardRouter over all of them. */
export interface IntakeHandler {
  refuse(jobId: string | undefined, reason: string): Promise<never>;
  process(jobId: string | undefined, data: unknown): Promise<IntakeResult | BulkIntakeResult>;
}

/**
 * The intake worker. At most `concurrency` jobs and `maxSubjectsInFlight` of their subjects at
 * once: each job takes its subjects from a SubjectBudget before its data is read, and the
 * worker fetches as many jobs as the last one's size leaves room for (BullMQ's concurrency,
 * set at run time), so a burst of bulk jobs is taken in a few at a time rather than
 * `concurrency` × queue.maxSubjectsPerJob subjects at once, while single-subject jobs still run
 * `concurrency` at a time.
 */
export function startIntakeWorker(opts: IntakeWorkerOptions, processor: IntakeHandler, log: Logger): Worker {
  const budget = new SubjectBudget(opts.maxSubjectsInFlight ?? DEFAULT_MAX_SUBJECTS_IN_FLIGHT);
  const worker: Worker = new Worker(
    opts.queueName,
    boundedFailures(async (job: Job, token?: string) => {
      const subjects = subjectsOf(job.data);
      // jobs of this size fit this many at a time: fetch no more than that
      worker.concurrency = Math.max(1, Math.min(opts.concurrency, Math.floor(budget.max / subjects)));
      const release = await budget.take(subjects);
      try {
        if (job.name !== ANCHOR_JOB) {
          return await processor.refuse(job.id, `unknown job name ${quoteBounded(job.name)} (expected "${ANCHOR_JOB}")`);
        }
        return await processor.process(job.id, job.data);
      } catch (err) {
        if (err instanceof UnrecoverableError || redisRefusal(err) === null) throw err;
        // every worker backs off with this one (the job itself waits, delayed, without spending an attempt)
        opts.refusals?.refused(err);
        return park(job, token, err, log);
      } finally {
        release();
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
  const otherError = (err: Error): void => void log.warn({ err }, 'intake worker error');
  if (opts.refusals) opts.refusals.watch(worker, otherError);
  else worker.on('error', otherError);
  return worker;
}

