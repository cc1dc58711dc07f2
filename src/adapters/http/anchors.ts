/**
 * The anchor endpoints: look up one subject, export its proof, list subjects page by page,
 * and enqueue new ones (`POST /v1/anchors`, through the same producer as `aer1-anchor enqueue`).
 */
import { redisRefusal, type RedisRefusal } from '../redis/redis-refusal.js';
import { ConflictError, InputError } from '../../core/errors/errors.js';
import { ProofExporter } from '../proof/export.js';
import { ProofArchive, archivedSummary } from '../archive/proof-archive.js';
import { type BulkEnqueueOutcome, type EnqueueOutcome } from '../queue/producer.js';
import { enqueueSubjectRouted, enqueueSubjectsRouted } from '../queue/routed-producer.js';
import { readSubject, type JobLimits, type SubjectInput } from '../intake/job-data.js';
import { SUBJECT_STATUSES } from '../state/subject-hash.js';
import { WITNESSES, type WitnessName } from '../state/keys.js';
import { anchorDetail, configuredSources, summarize } from '../state/subject-view.js';
import { readJsonBody } from './body.js';
import type { DaemonView } from '../view/daemon-view.js';
import { HttpError, JSON_TYPE, json, refusalError, type HttpErrorCode, type Reply } from './respond.js';
import type { RequestContext } from './router.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;
/** Most subjects in one POST. */
export const MAX_SUBJECTS = 10_000;

const WITNESS_STATUSES = ['pending', 'partial', 'confirmed', 'failed'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface AnchorRoutesHooks {
  /** Redis refused or did not answer a write of `POST /v1/anchors`. */
  onWriteRefused?(refusal: RedisRefusal): void;
}

export class AnchorRoutes {
  private readonly daemon: DaemonView;
  /** Shard i's proof exporter at index i. */
  private readonly exporters: ProofExporter[];
  /** Proofs of subjects retired from Redis (archive.dir); null when none is configured. */
  private readonly archive: ProofArchive | null;
  private readonly limits: JobLimits;
  private readonly hooks: AnchorRoutesHooks;

  constructor(daemon: DaemonView, hooks: AnchorRoutesHooks = {}) {
    this.daemon = daemon;
    this.hooks = hooks;
    const c = daemon.config;
    this.exporters = daemon.state.shards.map((store, i) => new ProofExporter(store, configuredSources(c), daemon.anchorLogs?.[i] ?? null));
    this.archive = c.archive.dir !== null ? new ProofArchive(c.archive.dir) : null;
    this.limits = { maxJobBytes: c.limits.maxJobBytes, maxSteps: c.limits.maxSteps, maxEntries: c.limits.maxEntries };
  }

  async get({ params }: RequestContext): Promise<Reply> {
    const key = params.key!;
    const store = this.daemon.state.of(key);
    const record = await store.subjects.getRecord(key);
    if (!record) {
      // retired lean: rebuilt from the anchor log and its batches (docs/reliability.md, Retention)
      const retired = await this.exporterOf(key).retiredAnchor(key);
      if (retired) return json(200, retired);
      const archived = await this.archive?.read(key);
      if (archived) return json(200, archivedSummary(key, archived.proof));
      throw new HttpError(404, 'not_found', `no subject with key ${JSON.stringify(key)}`, 'key');
    }
    return json(200, await anchorDetail(store, this.daemon.config, record));
  }

  async proof({ params }: RequestContext): Promise<Reply> {
    const key = params.key!;
    const proof = await this.exporterOf(key).export(key);
    if (proof) return json(200, proof);
    const record = await this.daemon.state.getRecord(key);
    if (!record) {
      // retired from Redis: the archived file, byte for byte what this answered before
      const archived = await this.archive?.read(key);
      if (archived) return json(200, archived.bytes, { 'Content-Type': JSON_TYPE });
    }
    if (record?.status === 'rejected') {
      throw new HttpError(404, 'no_proof', `subject ${JSON.stringify(key)} was refused, so it has no proof: ${record.reason ?? 'no reason recorded'}`, 'key');
    }
    throw new HttpError(404, 'not_found', `no subject with key ${JSON.stringify(key)}`, 'key');
  }

  /** The proof exporter of the key's shard. */
  private exporterOf(key: string): ProofExporter {
    return this.exporters[this.daemon.state.shards.indexOf(this.daemon.state.of(key))]!;
  }

  async list({ query }: RequestContext): Promise<Reply> {
    const witnessText = query.get('witness') ?? query.get('backend');
    if (query.has('witness') && query.has('backend')) throw new HttpError(400, 'bad_parameter', 'give witness or backend (its alias), not both', 'backend');
    const field = query.has('backend') ? 'backend' : 'witness';
    let witness: WitnessName | undefined;
    if (witnessText !== null) {
      if (!(WITNESSES as readonly string[]).includes(witnessText)) {
        throw new HttpError(400, 'bad_parameter', `${field} must be one of ${WITNESSES.join(', ')}, got ${JSON.stringify(witnessText)}`, field);
      }
      witness = witnessText as WitnessName;
    }
    const status = query.get('status') ?? undefined;
    if (status !== undefined) {
      const allowed = witness ? WITNESS_STATUSES : (SUBJECT_STATUSES as readonly string[]);
      if (!allowed.includes(status)) {
        throw new HttpError(400, 'bad_parameter', `status must be one of ${allowed.join(', ')}${witness ? ` (a witness status)` : ''}, got ${JSON.stringify(status)}`, 'status');
      }
    }
    const limit = parseLimit(query.get('limit'));
    const cursor = query.get('cursor') ?? undefined;
    if (cursor !== undefined) checkCursor(cursor);
    const page = await this.daemon.state.list({ status, witness, cursor, limit });
    // a page shows no envelope: none is read or rebuilt
    const records = await this.daemon.state.getRecords(page.keys, { envelopes: false });
    const items = records.flatMap((r) => (r ? [summarize(r)] : []));
    return json(200, { items, next: page.next });
  }

  async post({ req }: RequestContext): Promise<Reply> {
    const body = await readJsonBody(req, this.daemon.config.http.maxBodyBytes);
    const { subjects: given, many } = subjectsOf(body);
    const subjects = given.map((s, i) => this.read(s, many ? i : null));
    if (subjects.length > 1) return this.postBulk(subjects);
    const keys: string[] = [];
    const results: Array<EnqueueOutcome | { key: string; error: { code: HttpErrorCode; message: string } }> = [];
    let conflict: ConflictError | null = null;
    for (const [i, subject] of subjects.entries()) {
      try {
        const outcome = await enqueueSubjectRouted(this.daemon.intakeTargets, subject, this.limits);
        keys.push(outcome.key);
        results.push(outcome);
      } catch (err) {
        if (err instanceof ConflictError) {
          conflict ??= err;
          results.push({ key: err.key, error: { code: err.code, message: err.message } });
          continue;
        }
        const refusal = redisRefusal(err);
        if (!refusal) throw err;
        this.hooks.onWriteRefused?.(refusal);
        return this.refused(refusal, many ? i : null, keys, results);
      }
    }
    if (conflict) {
      const field = many ? `subjects[${results.findIndex((r) => 'error' in r)}]` : undefined;
      return json(409, { error: { code: 'conflict', message: conflict.message, ...(field ? { field } : {}) }, keys, results });
    }
    return json(202, { keys, results });
  }

  /**
   * Several subjects: bulk jobs of up to queue.maxSubjectsPerJob each (every subject is valid
   * by now). The answer lists each subject in order, with the bulk job it rides in; any
   * conflict makes it a 409 naming the first, the others queued all the same.
   */
  private async postBulk(subjects: SubjectInput[]): Promise<Reply> {
    let outcomes: BulkEnqueueOutcome[];
    const queued: BulkEnqueueOutcome[] = [];
    try {
      outcomes = await enqueueSubjectsRouted(this.daemon.intakeTargets, subjects, this.limits, {
        maxSubjectsPerJob: this.daemon.config.queue.maxSubjectsPerJob,
        onJobAdded: (added) => queued.push(...added),
      });
    } catch (err) {
      const refusal = redisRefusal(err);
      if (!refusal) throw err;
      this.hooks.onWriteRefused?.(refusal);
      return this.refusedBulk(refusal, queued);
    }
    const results = outcomes.map(({ index: _i, ...rest }) => rest);
    const keys = outcomes.flatMap((o) => ('error' in o ? [] : [o.key]));
    const jobs = [...new Set(outcomes.flatMap((o) => ('job' in o && o.job ? [o.job] : [])))];
    const first = outcomes.find((o) => 'error' in o);
    if (first && 'error' in first) {
      return json(409, { error: { code: first.error.code, message: first.error.message, field: `subjects[${first.index}]` }, keys, results, jobs });
    }
    return json(202, { keys, results, jobs });
  }

  /**
   * A bulk POST that met a Redis refusal: lists the subjects whose jobs were queued before it;
   * the job being added may still land. POSTing the same body again is safe.
   */
  private refusedBulk(refusal: RedisRefusal, queued: BulkEnqueueOutcome[]): Reply {
    const which = queued.length > 0 ? `the ${queued.length} subjects in keys were queued before it; the rest were not` : 'none of the subjects was queued';
    const addendum = `; ${which}${refusal.maybeApplied ? ' (the job being added when Redis stopped answering may still be queued)' : ''}: POSTing the same subjects again is safe (idempotent by subject key)`;
    const e = refusalError(refusal, this.daemon.config.http.redisTimeoutMs, addendum);
    const results = queued.map(({ index: _i, ...rest }) => rest);
    return json(503, { ...e.body(), keys: queued.flatMap((o) => ('error' in o ? [] : [o.key])), results }, e.headers);
  }

  /** 503 with Retry-After; lists what was queued before Redis refused, and says when the one being written may still land. */
  private refused(refusal: RedisRefusal, index: number | null, keys: string[], results: unknown[]): Reply {
    const which = index === null ? 'the subject' : `subjects[${index}]`;
    const addendum = refusal.maybeApplied
      ? `; ${which} may still be queued once Redis answers: POSTing it again is safe (idempotent by subject key)`
      : `; ${which} was not queued${keys.length > 0 ? `, the ${keys.length} before it were (see keys)` : ''}`;
    const e = refusalError(refusal, this.daemon.config.http.redisTimeoutMs, addendum);
    return json(503, { ...e.body(), keys, results }, e.headers);
  }

  /** Reads a subject as the intake worker will, so bad input is refused now, with its field; read once, it is what is queued. */
  private read(subject: unknown, index: number | null): SubjectInput {
    try {
      return readSubject(subject, this.limits);
    } catch (err) {
      // the document parsers throw InputErrors only; anything else is a bug (500)
      if (!(err instanceof InputError)) throw err;
      const field = err.field;
      if (index === null) throw new HttpError(400, err.code, err.message, field ?? '$');
      const inner = field === undefined || field === '$' ? '' : field.startsWith('[') ? field : `.${field}`;
      throw new HttpError(400, err.code, `subjects[${index}]: ${err.message}`, `subjects[${index}]${inner}`);
    }
  }
}

/**
 * The body is one subject (exactly what a queue job carries: a document, a wrapped document,
 * or bare fields) or `{"subjects": [...]}`. A top-level array stays one subject: it is a job
 * timeline (SPEC §2), so a list of subjects must be wrapped.
 */
export function subjectsOf(body: unknown): { subjects: unknown[]; many: boolean } {
  if (isObject(body) && Object.hasOwn(body, 'subjects')) {
    const list = body.subjects;
    const extra = Object.keys(body).find((k) => k !== 'subjects');
    if (extra !== undefined) throw new HttpError(400, 'unknown_member', `unknown member next to "subjects": ${JSON.stringify(extra)}`, extra);
    if (!Array.isArray(list)) throw new HttpError(400, 'bad_subjects', '"subjects" must be an array of subjects', 'subjects');
    if (list.length === 0) throw new HttpError(400, 'bad_subjects', '"subjects" is empty', 'subjects');
    if (list.length > MAX_SUBJECTS) throw new HttpError(400, 'too_many_subjects', `"subjects" holds ${list.length} subjects, over the limit of ${MAX_SUBJECTS} per request`, 'subjects');
    return { subjects: list, many: true };
  }
  return { subjects: [body], many: false };
}

export function parseLimit(text: string | null): number {
  if (text === null) return DEFAULT_LIMIT;
  if (!/^\d{1,7}$/.test(text)) throw new HttpError(400, 'bad_parameter', `limit must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(text)}`, 'limit');
  const n = Number(text);
  if (n < 1 || n > MAX_LIMIT) throw new HttpError(400, 'bad_parameter', `limit must be from 1 to ${MAX_LIMIT}, got ${n}`, 'limit');
  return n;
}

/** A cursor is what a previous page's `next` said: base64url of `<score>:<key>`. */
export function checkCursor(cursor: string): void {
  const bad = (): never => {
    throw new HttpError(400, 'bad_parameter', 'cursor is not one this API handed out (use the "next" of a previous page)', 'cursor');
  };
  if (!/^[A-Za-z0-9_-]{1,8192}$/.test(cursor)) bad();
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 1 || !Number.isFinite(Number(text.slice(0, colon))) || colon === text.length - 1) bad();
}
