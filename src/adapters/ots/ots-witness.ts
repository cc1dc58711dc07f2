/**
 * OtsWitness: submits each batch root to the calendars (m of n), keeps one root
 * timestamp per batch in Redis with every calendar's answer merged under the root,
 * polls pending attestations on a backing-off schedule (delayed BullMQ jobs, so one
 * schedule holds across several daemons and restarts), and confirms a batch only once a
 * Bitcoin attestation checks out against a block header from the configured source.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { OtsBatchState, OtsBatchUpdate } from '../state/batch-fields.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { batchRoot } from '../batch/batch-root.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { otsQueueName } from '../bullmq/names.js';
import { boundedFailures } from '../bullmq/failed-attempts.js';
import { stalledJobOptions } from '../bullmq/stalled.js';
import { CalendarClient, CalendarError, submitToCalendars } from './calendar/index.js';
import { parseTimestamp, serializeTimestamp } from '../../core/ots/codec.js';
import { Timestamp, allAttestations, bitcoinAttestations, pendingAttestations, walk } from '../../core/ots/timestamp.js';
import { eventsRootOf, joinedRoot, subjectsToJoined } from '../../core/ots/event-tree.js';
import { fixBatchEventIds } from './event-ids.js';
import { headerSourceFromConfig, verifyBitcoinAttestation, type HeaderSource } from '../bitcoin/index.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

export interface CalendarState {
  url: string;
  /** pending (holds our root), confirmed (its path reached a verified block), failed, gave-up. */
  status: 'pending' | 'confirmed' | 'failed' | 'gave-up' | 'unsubmitted';
  message: string;
  at: string;
  /** The URI its pending attestation names (where upgrades are asked for). */
  uri?: string;
  commitment?: string;
  polls?: number;
}

export interface OtsWitnessHooks {
  /** Every submit and upgrade poll with its outcome (`submitted`, `upgrade_<status>`, or an error code) and, on failure, what went wrong. */
  onCalendarRequest?: (calendar: string, result: string, message?: string) => void;
  onWitnessChange?: (key: string, status: WitnessStatus, createdMs: number) => void;
}

interface QueueDeps {
  queueBase: string;
  bullPrefix: string;
  connection: ConnectionOptions;
  /** queue.stalledIntervalMs: how soon a crashed daemon's in-flight submissions and polls are handed back. */
  stalledIntervalMs: number;
  /** The daemon's shared backoff while Redis refuses writes. */
  refusals?: RefusalBackoff;
}

type OtsJob = { batchId: string; poll?: number };

const SUBMIT = 'submit';
const UPGRADE = 'upgrade';
const NIP03 = 'nip03';

export interface OtsWitnessExtras {
  /**
   * NIP-03 (`nostr.nip03`): batches also commit to their subjects' envelope event ids (one
   * joined root per batch, no extra calendar submission), and once a batch is confirmed this
   * publishes the kind-1040 attestations (a job of its own, retried, idempotent).
   */
  nip03?: (batchId: string) => Promise<void>;
}

function submitJobId(batchId: string): string {
  return `ots-submit-${batchId}`;
}

function nip03JobId(batchId: string): string {
  return `ots-nip03-${batchId}`;
}

function upgradeJobId(batchId: string, poll: number): string {
  return `ots-upgrade-${batchId}-${poll}`;
}

function isoNow(): string {
  return new Date().toISOString();
}

/**
 * Progress numbers keep a stale report from undoing a newer one (see SubjectStore.setWitness).
 * A batch sent back to the calendars (its answers committed to another root) starts a new
 * round, so its subjects may go from pending back to partial.
 */
const STEP = { partial: 100, pending: 200, failed: 300 } as const;
const CONFIRMED_PROGRESS = 1e12;

function progressOf(status: WitnessStatus, round: number): number {
  return status === 'confirmed' ? CONFIRMED_PROGRESS : round * 1000 + STEP[status];
}

export class OtsWitness {
  private readonly cfg: Config['ots'];
  private readonly deps: QueueDeps;
  private readonly store: AnchorStore;
  private readonly log: Logger;
  private readonly hooks: OtsWitnessHooks;
  private readonly queue: Queue<OtsJob>;
  private readonly clients: Map<string, CalendarClient>;
  private readonly headers: HeaderSource;
  private worker: Worker<OtsJob> | null = null;
  private readonly nip03: ((batchId: string) => Promise<void>) | null;

  constructor(cfg: Config['ots'], deps: QueueDeps, store: AnchorStore, log: Logger, hooks: OtsWitnessHooks = {}, extras: OtsWitnessExtras = {}) {
    this.cfg = cfg;
    this.nip03 = extras.nip03 ?? null;
    this.deps = deps;
    this.store = store;
    this.log = log.child({ witness: 'ots' });
    this.hooks = hooks;
    this.queue = new Queue<OtsJob>(otsQueueName(deps.queueBase), { connection: deps.connection, prefix: deps.bullPrefix });
    this.clients = new Map(cfg.calendars.map((url) => [url, new CalendarClient(url, { timeoutMs: cfg.timeoutMs })]));
    this.headers = headerSourceFromConfig(cfg);
  }

  start(): void {
    this.worker = new Worker<OtsJob>(otsQueueName(this.deps.queueBase), boundedFailures((job) => this.run(job), this.log), {
      connection: this.deps.connection,
      prefix: this.deps.bullPrefix,
      concurrency: 4,
      ...stalledJobOptions(this.deps.stalledIntervalMs),
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 1000 },
      settings: { backoffStrategy: (attempts: number) => backoffDelay(attempts, this.cfg.submitBackoffMs, this.cfg.upgradeMaxMs) },
    });
    const otherError = (err: Error): void => void this.log.warn({ err }, 'ots worker error');
    if (this.deps.refusals) this.deps.refusals.watch(this.worker, otherError);
    else this.worker.on('error', otherError);
  }

  /** Resolves once the queue and worker have their Redis connections (so a fast stop closes cleanly). */
  async waitUntilReady(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), ...(this.worker ? [this.worker.waitUntilReady()] : [])]);
  }

  /** Hands a cut batch over for submission (idempotent by batch id). */
  async enqueueBatch(batchId: string): Promise<void> {
    await this.queue.add(SUBMIT, { batchId }, { jobId: submitJobId(batchId), attempts: 100_000, backoff: { type: 'custom' } });
  }

  private run(job: Job<OtsJob>): Promise<void> {
    if (job.name === NIP03) return this.nip03 ? this.publishNip03(job.data.batchId) : Promise.resolve();
    return job.name === SUBMIT ? this.submit(job.data.batchId) : this.upgrade(job.data.batchId, job.data.poll ?? 1);
  }

  private async publishNip03(batchId: string): Promise<void> {
    await this.nip03!(batchId);
    // the attestations were the batch's last work: it leaves the reconciler's set of batches with work
    if (!this.nip03Left(await this.store.batches.otsBatchProgress(batchId)) && !(await this.calendarsPending(batchId))) await this.store.batches.setBatchWork('ots', batchId, false);
  }

  /** NIP-03 attestations are still to be published for this confirmed batch. */
  private nip03Left(batch: Pick<OtsBatchState, 'eventsRoot' | 'nip03'>): boolean {
    return this.nip03 !== null && !!batch.eventsRoot && batch.nip03 !== 'done';
  }

  /** A configured calendar still holds the batch pending (an upgrade poll is due). */
  private async calendarsPending(batchId: string): Promise<boolean> {
    const recorded = await this.store.batches.batchCalendars(batchId);
    return recorded.some((c) => this.cfg.calendars.includes(c.url) && (JSON.parse(c.state) as CalendarState).status === 'pending');
  }

  private async addNip03Job(batchId: string): Promise<void> {
    await this.queue.add(NIP03, { batchId }, { jobId: nip03JobId(batchId), attempts: 1000, backoff: { type: 'custom' } });
  }

  /**
   * The reconciler's repair for a confirmed batch with work left (BatchStore.setBatchWork):
   * the NIP-03 attestation job again when it was lost (gone, or failed for good) before the
   * attestations were published; the next upgrade poll of the calendars still pending when
   * its poll died. A batch with nothing left leaves the set. Idempotent (job ids).
   */
  async repairWork(batchId: string): Promise<Array<'nip03' | 'poll'>> {
    const fields = await this.store.batches.otsBatchProgress(batchId);
    const pending = fields.exists && !!fields.bitcoin && (await this.calendarsPending(batchId));
    const nip03 = fields.exists && !!fields.bitcoin && this.nip03Left(fields);
    const out: Array<'nip03' | 'poll'> = [];
    if (nip03 && (await this.jobDead(nip03JobId(batchId))) && (await this.store.batches.otsBatchProgress(batchId)).nip03 !== 'done') {
      await this.queue.remove(nip03JobId(batchId));
      await this.addNip03Job(batchId);
      out.push('nip03');
    }
    if (pending) {
      const current = fields.poll ?? 1;
      if ((await this.jobDead(upgradeJobId(batchId, current))) && (await this.store.batches.otsBatchProgress(batchId)).poll === fields.poll) {
        await this.scheduleUpgrade(batchId, current + 1, 0);
        out.push('poll');
      }
    }
    if (!pending && !nip03) await this.store.batches.setBatchWork('ots', batchId, false);
    return out;
  }

  /**
   * The event tree's root R_e for this batch, or null when it has none. Fixed at the first
   * submission (`events_root`, '' for none) and honoured afterwards whatever the config says,
   * since the calendars' answers are on the joined root. A batch whose answers were taken on
   * the bare subject root before NIP-03 was turned on keeps none.
   */
  private async eventsRoot(batchId: string, state: OtsBatchState): Promise<Buffer | null> {
    const stored = state.eventsRoot;
    if (stored !== undefined) return stored ? Buffer.from(stored, 'hex') : null;
    if (!this.nip03 || state.ts) return null;
    const ids = await fixBatchEventIds(this.store, batchId);
    const root = eventsRootOf(ids.map((e) => Buffer.from(e, 'hex')));
    const value = await this.store.batches.fixOtsEventsRoot(batchId, root ? root.toString('hex') : '');
    state.eventsRoot = value;
    return value ? Buffer.from(value, 'hex') : null;
  }

  /** The node the calendars' answers hang on: the subject root itself, or the joined root R below it. */
  private submittedNode(ts: Timestamp, eventsRoot: Buffer | null): Timestamp {
    if (!eventsRoot) return ts;
    let node = ts;
    for (const op of subjectsToJoined(eventsRoot)) node = node.addOp(op);
    if (!node.msg.equals(joinedRoot(ts.msg, eventsRoot))) throw new Error('joined root mismatch');
    return node;
  }

  /** Each configured calendar's state, from the batch's. */
  private calendars(state: OtsBatchState): Map<string, CalendarState> {
    const out = new Map<string, CalendarState>();
    for (const url of this.cfg.calendars) {
      const raw = state.calendars[url];
      out.set(url, raw ? (JSON.parse(raw) as CalendarState) : { url, status: 'unsubmitted', message: '', at: '' });
    }
    return out;
  }

  /** The batch's root timestamp (calendar answers merged under the root), from its state. */
  private rootTimestamp(state: OtsBatchState, root: Buffer): Timestamp {
    const b64 = state.ts;
    return b64 ? parseTimestamp(Buffer.from(b64, 'base64'), root) : new Timestamp(root);
  }

  private async moveSubjects(batchId: string, status: WitnessStatus, detail: string, round: number): Promise<void> {
    const keys = await this.store.batches.batchKeys('ots', batchId);
    const changes = await this.store.subjects.setWitnessMany(keys, 'ots', status, progressOf(status, round), detail, batchId);
    changes.forEach((c, i) => {
      if (c.changed) this.hooks.onWitnessChange?.(keys[i]!, status, c.createdMs);
    });
  }

  private async submit(batchId: string): Promise<void> {
    const batch = await this.store.batches.otsBatch(batchId);
    if (!batch) {
      await this.store.batches.closeBatch('ots', batchId);
      return;
    }
    const root = batchRoot(batch);
    const round = batch.state.round;
    if (batch.state.submitted) {
      const foreign = this.foreignAnswers(batch.state, root);
      if (foreign) {
        await this.sendBack(batchId, batch.state, foreign, round);
        return this.submit(batchId);
      }
      // A crash after recording the submission may have left the subjects unmoved (idempotent).
      const holding = [...this.calendars(batch.state).values()].filter((c) => c.status === 'pending').length;
      await this.moveSubjects(batchId, 'pending', `${holding} of ${this.cfg.calendars.length} calendars hold the batch root`, round);
      await this.scheduleUpgrade(batchId, 1);
      await this.store.batches.closeBatch('ots', batchId);
      return;
    }
    const cals = this.calendars(batch.state);
    const todo = [...cals.values()].filter((c) => c.status !== 'pending').map((c) => this.clients.get(c.url)!);
    const held = [...cals.values()].filter((c) => c.status === 'pending').length;
    const need = Math.max(1, this.cfg.minCalendars - held);
    const eventsRoot = await this.eventsRoot(batchId, batch.state);
    const ts = this.rootTimestamp(batch.state, root);
    const top = this.submittedNode(ts, eventsRoot);
    const raw = await submitToCalendars(todo, top.msg, { m: Math.min(need, todo.length) });
    // Clients may normalise their URL (a trailing slash); state is keyed by the configured one.
    const configured = new Map([...this.clients].map(([url, c]) => [c.url, url]));
    const result = {
      answers: raw.answers.map((a) => ({ ...a, url: configured.get(a.url) ?? a.url })),
      failures: raw.failures.map((f) => ({ ...f, url: configured.get(f.url) ?? f.url })),
    };
    const update: OtsBatchUpdate & { calendars: Record<string, string> } = { calendars: {} };
    for (const answer of result.answers) {
      let state: CalendarState;
      try {
        const answerTs = parseTimestamp(answer.bytes, top.msg);
        const pending = pendingAttestations(answerTs)[0];
        top.merge(answerTs);
        state = { url: answer.url, status: 'pending', message: 'submitted', at: isoNow(), polls: 0, ...(pending ? { uri: pending.uri, commitment: pending.commitment.toString('hex') } : {}) };
        this.hooks.onCalendarRequest?.(answer.url, 'submitted');
      } catch (err) {
        state = { url: answer.url, status: 'failed', message: `unusable answer: ${(err as Error).message}`, at: isoNow() };
        this.hooks.onCalendarRequest?.(answer.url, 'bad_response', state.message);
      }
      cals.set(answer.url, state);
      update.calendars[answer.url] = JSON.stringify(state);
    }
    for (const f of result.failures) {
      const state: CalendarState = { url: f.url, status: 'failed', message: `${f.code}: ${f.message}`, at: isoNow() };
      cals.set(f.url, state);
      update.calendars[f.url] = JSON.stringify(state);
      this.hooks.onCalendarRequest?.(f.url, f.code, f.message);
    }
    const holding = [...cals.values()].filter((c) => c.status === 'pending').length;
    // With no answer yet the timestamp is empty, which cannot be written: record the failures anyway.
    if (allAttestations(ts).length > 0) update.ts = serializeTimestamp(ts).toString('base64');
    update.root = root.toString('hex');
    if (holding >= this.cfg.minCalendars) update.submitted = true;
    await this.store.batches.setOtsBatch(batchId, update);
    const failures = result.failures.map((f) => `${f.url}: ${f.code}: ${f.message}`).join('; ');
    if (holding >= this.cfg.minCalendars) {
      await this.moveSubjects(batchId, 'pending', `${holding} of ${this.cfg.calendars.length} calendars hold the batch root${failures ? `; failed: ${failures}` : ''}`, round);
      await this.scheduleUpgrade(batchId, 1);
      await this.store.batches.closeBatch('ots', batchId);
      return;
    }
    await this.moveSubjects(batchId, 'partial', `${holding} of ${this.cfg.minCalendars} calendars needed answered${failures ? `; failed: ${failures}` : ''}; retrying`, round);
    throw new Error(`only ${holding} of the ${this.cfg.minCalendars} calendars needed answered`);
  }

  private async scheduleUpgrade(batchId: string, poll: number, delay = backoffDelay(poll, this.cfg.upgradeInitialMs, this.cfg.upgradeMaxMs, { jitter: 0 })): Promise<void> {
    // The batch names its current poll, so the reconciler can tell when that job died.
    await this.store.batches.setOtsBatch(batchId, { poll });
    await this.queue.add(UPGRADE, { batchId, poll }, { jobId: upgradeJobId(batchId, poll), delay, attempts: 5, backoff: { type: 'custom' } });
  }

  /** True when the job is gone, or ended without doing its work (failed after its attempts). */
  private async jobDead(jobId: string): Promise<boolean> {
    const state = await this.queue.getJobState(jobId);
    return state === 'unknown' || state === 'failed' || state === 'completed';
  }

  /**
   * The reconciler's repair for one batch with subjects not yet confirmed: a batch not yet
   * held by m calendars gets its submit job back if it died; a submitted one gets a poll if
   * its scheduled poll died (failed after its attempts, or never written). Idempotent.
   */
  async repairBatch(batchId: string): Promise<'submit' | 'poll' | null> {
    const { exists, submitted, poll } = await this.store.batches.otsBatchProgress(batchId);
    if (!exists) return null;
    if (!submitted) {
      const jobId = submitJobId(batchId);
      if (!(await this.jobDead(jobId))) return null;
      if ((await this.store.batches.otsBatchProgress(batchId)).submitted) return null;
      await this.queue.remove(jobId);
      await this.enqueueBatch(batchId);
      return 'submit';
    }
    const current = poll ?? 1;
    if (!(await this.jobDead(upgradeJobId(batchId, current)))) return null;
    // A poll that just ended has scheduled the next one: nothing died.
    if ((await this.store.batches.otsBatchProgress(batchId)).poll !== poll) return null;
    await this.scheduleUpgrade(batchId, current + 1, 0);
    return 'poll';
  }

  private upgradeUrl(cal: CalendarState): string {
    // The calendar names where to ask; follow it only to https or to the calendar's own origin.
    if (cal.uri) {
      try {
        const u = new URL(cal.uri);
        if (u.protocol === 'https:' || u.origin === new URL(cal.url).origin) return cal.uri;
      } catch {
        // fall back to the submit URL
      }
    }
    return cal.url;
  }

  private async upgrade(batchId: string, poll: number): Promise<void> {
    const batch = await this.store.batches.otsBatch(batchId);
    if (!batch || !batch.state.submitted) return;
    const root = batchRoot(batch);
    const round = batch.state.round;
    const foreign = this.foreignAnswers(batch.state, root);
    if (foreign) {
      await this.sendBack(batchId, batch.state, foreign, round);
      await this.enqueueBatch(batchId);
      return;
    }
    const ts = this.rootTimestamp(batch.state, root);
    const cals = this.calendars(batch.state);
    const fields: OtsBatchUpdate & { calendars: Record<string, string> } = { calendars: {} };
    const ageMs = Date.now() - batch.createdMs;
    for (const cal of cals.values()) {
      if (cal.status !== 'pending' || !cal.commitment) continue;
      const commitment = Buffer.from(cal.commitment, 'hex');
      const url = this.upgradeUrl(cal);
      const client = this.clients.get(url) ?? new CalendarClient(url, { timeoutMs: this.cfg.timeoutMs });
      cal.polls = (cal.polls ?? 0) + 1;
      cal.at = isoNow();
      try {
        const answer = await client.getTimestamp(commitment);
        this.hooks.onCalendarRequest?.(cal.url, `upgrade_${answer.status}`);
        if (answer.status === 'complete') {
          const upgrade = parseTimestamp(answer.bytes, commitment);
          let merged = false;
          walk(ts, (node) => {
            if (!merged && node.msg.equals(commitment)) {
              node.merge(upgrade);
              merged = true;
            }
          });
          cal.message = merged ? 'upgraded' : 'upgrade did not match our commitment';
        } else {
          cal.message = answer.reason;
        }
      } catch (err) {
        cal.message = err instanceof CalendarError ? `${err.code}: ${err.message}` : (err as Error).message;
        this.hooks.onCalendarRequest?.(cal.url, err instanceof CalendarError ? err.code : 'error', cal.message);
      }
      if (cal.status === 'pending' && ageMs > this.cfg.upgradeGiveUpMs) cal.status = 'gave-up';
      fields.calendars[cal.url] = JSON.stringify(cal);
    }
    fields.ts = serializeTimestamp(ts).toString('base64');

    // With several calendars in several blocks, the batch is confirmed at the earliest block
    // that verifies, whatever order the attestations are found in.
    let earliest = batch.state.bitcoin ? (JSON.parse(batch.state.bitcoin) as { height: number }).height : Infinity;
    let confirmed = earliest !== Infinity;
    for (const att of bitcoinAttestations(ts)) {
      try {
        const block = await verifyBitcoinAttestation(att.merkleRoot, att.height, this.headers, this.cfg.network);
        if (block.height < earliest) {
          fields.bitcoin = JSON.stringify(block);
          earliest = block.height;
          confirmed = true;
        }
        for (const cal of cals.values()) {
          if (cal.status === 'pending' && cal.commitment && this.reaches(ts, cal.commitment, att.merkleRoot)) {
            cal.status = 'confirmed';
            cal.message = `Bitcoin block ${block.height}`;
            fields.calendars[cal.url] = JSON.stringify(cal);
          }
        }
      } catch (err) {
        this.log.warn({ batchId, height: att.height, err }, 'Bitcoin attestation not verified yet');
      }
    }
    await this.store.batches.setOtsBatch(batchId, fields);
    // Also when an earlier run recorded the confirmation and crashed before moving the subjects (idempotent).
    const bitcoinText = fields.bitcoin ?? batch.state.bitcoin;
    const bitcoin = bitcoinText ? (JSON.parse(bitcoinText) as { height: number }) : null;
    const stillPending = [...cals.values()].some((c) => c.status === 'pending');
    if (bitcoin) {
      // noted before the subjects leave the reconciler's working sets: the polls of the other
      // calendars and the NIP-03 attestations are found from it when their job is lost
      await this.store.batches.setBatchWork('ots', batchId, stillPending || this.nip03Left(batch.state));
      await this.moveSubjects(batchId, 'confirmed', `Bitcoin block ${bitcoin.height}`, round);
    }
    if (bitcoin && this.nip03Left(batch.state)) await this.addNip03Job(batchId);
    if (stillPending) {
      await this.scheduleUpgrade(batchId, poll + 1);
    } else if (!confirmed) {
      await this.moveSubjects(batchId, 'failed', 'every calendar failed or was given up on before a Bitcoin confirmation', round);
    }
  }

  /**
   * Why the batch's stored calendar answers are not about its root, or null when they are:
   * the root recorded at submission differs, or a calendar's commitment is not in the
   * timestamp built on this root (what a batch id reused after a Redis rollback looks like).
   */
  private foreignAnswers(state: OtsBatchState, root: Buffer): Map<string, string> | null {
    // A Bitcoin attestation verified on this root's timestamp settles it.
    if (state.bitcoin) return null;
    const rootHex = root.toString('hex');
    const out = new Map<string, string>();
    const cals = [...this.calendars(state).values()].filter((c) => c.status === 'pending' || c.status === 'confirmed');
    if (state.root && state.root !== rootHex) {
      for (const c of cals) out.set(c.url, `the stored answer commits to another root (${state.root.slice(0, 16)}…) than this batch's (${rootHex.slice(0, 16)}…)`);
      return out.size > 0 ? out : null;
    }
    let ts: Timestamp;
    try {
      ts = this.rootTimestamp(state, root);
    } catch (err) {
      for (const c of cals) out.set(c.url, `the stored timestamp does not read on this batch's root: ${(err as Error).message}`);
      return out.size > 0 ? out : null;
    }
    for (const c of cals) {
      if (!c.commitment) continue;
      const commitment = Buffer.from(c.commitment, 'hex');
      let found = false;
      walk(ts, (node) => {
        if (!found && node.msg.equals(commitment)) found = true;
      });
      if (!found) out.set(c.url, `its answer commits to another root than this batch's (${rootHex.slice(0, 16)}…)`);
    }
    return out.size > 0 ? out : null;
  }

  /**
   * Sends a batch whose answers commit to another root back to the calendars: the answers are
   * dropped, each such calendar is recorded failed with the reason, the subjects go back to
   * partial in a new round. Returns the new round.
   */
  private async sendBack(batchId: string, state: OtsBatchState, foreign: Map<string, string>, round: number): Promise<number> {
    const next = round + 1;
    const update: OtsBatchUpdate & { calendars: Record<string, string> } = { ts: null, root: null, submitted: false, round: next, calendars: {} };
    for (const cal of this.calendars(state).values()) {
      const reason = foreign.get(cal.url);
      if (reason) update.calendars[cal.url] = JSON.stringify({ url: cal.url, status: 'failed', message: reason, at: isoNow() } satisfies CalendarState);
      else if (cal.status === 'pending') update.calendars[cal.url] = JSON.stringify({ url: cal.url, status: 'unsubmitted', message: 'answer dropped with the foreign ones; submitting again', at: isoNow() } satisfies CalendarState);
    }
    await this.store.batches.setOtsBatch(batchId, update);
    const detail = [...foreign].map(([url, reason]) => `${url}: ${reason}`).join('; ');
    this.log.error({ batchId, detail }, 'calendar answers commit to another root; submitting the batch again');
    await this.moveSubjects(batchId, 'partial', `${detail}; submitting again`, next);
    return next;
  }

  /** True when the node for `commitmentHex` leads to an attestation on `msg`. */
  private reaches(ts: Timestamp, commitmentHex: string, msg: Buffer): boolean {
    const commitment = Buffer.from(commitmentHex, 'hex');
    let found = false;
    walk(ts, (node) => {
      if (found || !node.msg.equals(commitment)) return;
      walk(node, (inner) => {
        if (inner.msg.equals(msg)) found = true;
      });
    });
    return found;
  }

  /** Every queue this witness works from (for queue depth). */
  get allQueues(): Queue[] {
    return [this.queue];
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
  }
}
