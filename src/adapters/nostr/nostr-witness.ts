/**
 * NostrWitness: durable publishing of signed events to every configured relay.
 * One BullMQ queue per relay carries one job per event (job id = event id), so the
 * relay's rate limit holds across daemon instances, retries back off and survive
 * restarts, and an event already accepted by a relay is never sent to it again.
 * Cut batches (auto and batch mode) go through one batch job each, which decides, once and
 * durably, whether the batch gets one batch event or one event per subject.
 */
import { Queue, Worker, type Job, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AnchorStore, RelayReportRecord } from '../state/anchor-store.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { backoffDelay } from '../queue/backoff.js';
import { nostrBatchQueueName, relayQueueName } from '../queue/names.js';
import { boundedFailures } from '../queue/failed-attempts.js';
import { stalledJobOptions } from '../queue/stalled.js';
import { BatchTree } from '../../core/batch/batch-tree.js';
import { autoMode, type NostrEventMode } from '../../core/nostr/auto-mode.js';
import { batchEvent, envelopeEvent, serializeEvent, sameSignedEvent, type SignedEvent } from '../../core/nostr/events.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { RelayClient } from './relay-client.js';
import { PolicyPublisher } from './relay-policy.js';
import { redisRefusal } from '../redis/redis-refusal.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

/** A failed batch job retries from 1 s, doubling, capped at nostr.backoffMaxMs (was BullMQ's uncapped exponential). */
const BATCH_RETRY = { initialMs: 1000 } as const;

/** The `nostr` settings (quorum resolved: 0 → a majority of the relays) plus where its queues live. */
export type NostrWitnessOptions = Omit<Config['nostr'], 'enabled' | 'keyFile' | 'keyEnv' | 'batchMaxSize' | 'batchWindowMs'> & {
  queueBase: string;
  bullPrefix: string;
  connection: ConnectionOptions;
  /** queue.stalledIntervalMs: how soon a crashed daemon's in-flight publishes are handed back. */
  stalledIntervalMs: number;
  /** The daemon's shared backoff while Redis refuses writes. */
  refusals?: RefusalBackoff;
};

export interface NostrWitnessHooks {
  /** Called for every publish attempt with its outcome and the relay's message or what went wrong (metrics, health). */
  onPublish?: (relay: string, result: string, message: string) => void;
  /** Called when a subject's witness status changes (metrics). */
  onWitnessChange?: (key: string, status: WitnessStatus, createdMs: number) => void;
  /** Called once per batch when its kind of event is decided (metrics). */
  onModeDecision?: (mode: NostrEventMode, subjects: number) => void;
  /** Awaited after a batch job links envelope events to its subjects (NIP-03 notes the ones late for their OTS batch). */
  onSubjectEvents?: (linked: Array<{ key: string; eventId: string }>) => Promise<void>;
}

/** What a batch job decided for its batch (the batch hash's `mode` field), with what the rule saw. */
export interface ModeDecision {
  mode: NostrEventMode;
  /** Subjects in the cut. */
  size: number;
  /** Auto mode: the slowest relay's backlog, the events queued within the horizon, and the budget they were held against. */
  backlog?: number;
  recent?: number;
  budget?: number;
}


interface RelayJobData {
  eventId: string;
  /** Sent again by the reconciler after the relay was given up on: a final `failed` report does not stop it. */
  reopen?: boolean;
}

/** What the reconciler re-created for one event. */
export interface PublishRepair {
  /** Relays that had not answered for good and had no job. */
  missing: number;
  /** Relays given up on (retries exhausted) while the quorum could not be met without them. */
  reopened: number;
  /** The subjects' witness was behind what the relays' reports say (its move failed after the report was recorded). */
  moved: number;
}

/**
 * Witness status of an event from its relays' reports (SPEC 4.1), with a monotonic progress
 * number. `confirmed` once `quorum` relays accepted. `failed` as soon as the quorum is out of
 * reach: the relays that refused for good (`invalid:`, `blocked:`, `restricted:`, ...) or were
 * given up on (retries exhausted) leave fewer than `quorum` that could still accept. That holds
 * even when some relays accepted (the event is on them, and the proof lists them): `partial`
 * means "still on its way to the quorum", and a quorum no relay can complete is not. `reason`
 * says why, naming each relay that closed the way. A witness failed only through relays given
 * up on can still move on: the reconciler gives those a new round (never the final refusals).
 */
export function nostrStatusOf(reports: readonly RelayReportRecord[], relayCount: number, quorum: number): { status: WitnessStatus; progress: number; reason?: string } {
  let accepted = 0;
  let finished = 0;
  const closed: RelayReportRecord[] = [];
  for (const r of reports) {
    const ok = r.status === 'accepted' || r.status === 'stored';
    if (ok) accepted++;
    if (r.final) finished++;
    if (r.final && !ok) closed.push(r);
  }
  const progress = accepted * 1000 + finished;
  if (accepted >= quorum) return { status: 'confirmed', progress };
  if (relayCount - closed.length < quorum) {
    const why = closed.map((r) => `${r.url}: ${r.status}${r.message ? ` (${r.message})` : ''}`).join('; ');
    return { status: 'failed', progress, reason: `quorum ${quorum} unreachable: ${accepted} of ${relayCount} relays accepted, ${closed.length} closed for good: ${why}` };
  }
  if (accepted > 0) return { status: 'partial', progress };
  return { status: 'pending', progress };
}

export class NostrWitness {
  private readonly opts: NostrWitnessOptions;
  private readonly store: AnchorStore;
  private readonly key: SigningKey;
  private readonly log: Logger;
  private readonly hooks: NostrWitnessHooks;
  private readonly queues = new Map<string, Queue<RelayJobData>>();
  private readonly workers: Worker[] = [];
  private readonly clients = new Map<string, RelayClient>();
  /** Per relay: `rate-limited:` pauses in a row (reset by an acceptance) and when the current one ends. */
  private readonly pauses = new Map<string, { streak: number; until: number }>();
  private readonly batchQueue: Queue;
  /** Decisions (and the per-subject publishes they queue) run one at a time in this process, so two see each other's backlog. */
  private deciding: Promise<unknown> = Promise.resolve();
  /** The last auto-mode decision, to log switches. */
  private lastMode: NostrEventMode | null = null;
  /** NIP-11 limits, NIP-13 copies: what each relay is sent (relay-policy.ts). */
  private readonly policy: PolicyPublisher;

  constructor(opts: NostrWitnessOptions, store: AnchorStore, key: SigningKey, log: Logger, hooks: NostrWitnessHooks = {}) {
    this.opts = opts;
    this.store = store;
    this.key = key;
    this.log = log.child({ witness: 'nostr' });
    this.hooks = hooks;
    this.policy = new PolicyPublisher(store, key, opts);
    for (const url of opts.relays) {
      this.queues.set(url, new Queue<RelayJobData>(relayQueueName(opts.queueBase, url), { connection: opts.connection, prefix: opts.bullPrefix }));
    }
    // In every mode: batches cut under auto or batch mode are finished after a switch to envelope.
    this.batchQueue = new Queue(nostrBatchQueueName(opts.queueBase), { connection: opts.connection, prefix: opts.bullPrefix });
  }

  /** The signed envelope event for a subject (envelope mode, and auto mode's per-subject events); created_at = anchored_at keeps its id stable. */
  signEnvelope(canonical: string, digestHex: string, envelope?: object): SignedEvent {
    return envelopeEvent({ canonical, digestHex, kind: this.opts.kind, ...(envelope ? { envelope } : {}) }, this.key);
  }

  /** Starts the relay workers and the batch worker. */
  start(): void {
    for (const url of this.opts.relays) {
      // read each relay's NIP-11 limits ahead of its first job (never rejects)
      void this.policy.policies.get(url);
      const worker = new Worker<RelayJobData>(relayQueueName(this.opts.queueBase, url), boundedFailures((job) => this.publishJob(url, job), this.log), {
        connection: this.opts.connection,
        prefix: this.opts.bullPrefix,
        concurrency: this.opts.concurrency,
        ...stalledJobOptions(this.opts.stalledIntervalMs),
        limiter: { max: this.opts.ratePerMinute, duration: 60_000 },
        removeOnComplete: { count: 0 },
        removeOnFail: { count: 0 },
        settings: { backoffStrategy: (attempts: number) => backoffDelay(attempts, this.opts.backoffMs, this.opts.backoffMaxMs) },
      });
      this.watch(worker, (err) => this.log.warn({ relay: url, err }, 'relay worker error'));
      worker.on('failed', (job, err) => {
        if (!job || job.attemptsMade < this.opts.maxAttempts) return;
        // Attempts spent on Redis refusing our own writes (full, read-only, away) say nothing
        // about the relay: no final "failed" for it. Its report stays open, and the reconciler
        // re-creates the publish job once Redis takes writes again.
        if (!(err instanceof RelayAttemptError) && redisRefusal(err)) {
          if (this.opts.refusals?.refused(err)) return;
          this.log.warn({ relay: url, eventId: job.data.eventId, err }, 'relay publish out of attempts while Redis refused writes; left to the reconciler');
          return;
        }
        void this.giveUp(url, job.data.eventId, err.message, job.attemptsMade);
      });
      this.workers.push(worker);
    }
    {
      const worker = new Worker(nostrBatchQueueName(this.opts.queueBase), boundedFailures((job: Job<{ batchId: string | number }>) => this.batchJob(String(job.data.batchId)), this.log), {
        connection: this.opts.connection,
        prefix: this.opts.bullPrefix,
        concurrency: 2,
        ...stalledJobOptions(this.opts.stalledIntervalMs),
        removeOnComplete: { count: 0 },
        removeOnFail: { count: 100 },
        settings: { backoffStrategy: (attempts: number) => backoffDelay(attempts, BATCH_RETRY.initialMs, Math.max(BATCH_RETRY.initialMs, this.opts.backoffMaxMs)) },
      });
      this.watch(worker, (err) => this.log.warn({ err }, 'nostr batch worker error'));
      this.workers.push(worker);
    }
  }

  /** A worker's errors: refusals to the shared backoff (when there is one), the rest to the log. */
  private watch(worker: Worker, otherError: (err: Error) => void): void {
    if (this.opts.refusals) this.opts.refusals.watch(worker, otherError);
    else worker.on('error', otherError);
  }

  /** Resolves once every queue and worker has its Redis connections (so a fast stop closes cleanly). */
  async waitUntilReady(): Promise<void> {
    await Promise.all([...this.workers, ...this.queues.values(), this.batchQueue].map((x) => x.waitUntilReady()));
  }

  /** Makes sure every relay has a job for this event unless it already answered for good. */
  async ensurePublishing(eventId: string): Promise<void> {
    if (this.opts.mode === 'auto') await this.store.noteNostrQueued(eventId, Date.now(), this.opts.autoHorizonMs);
    const reports = await this.store.relayReports(eventId);
    const done = new Set(reports.filter((r) => r.final).map((r) => r.url));
    const todo = [...this.queues.entries()].filter(([url]) => !done.has(url));
    // Recorded alongside the jobs (concurrently, no round trip added in sequence) so the
    // subject's view lists the relays it was sent to, whatever the config says later.
    await Promise.all([
      this.store.markRelaysSent(eventId, todo.map(([url]) => url)),
      ...todo.map(([, q]) => q.add('publish', { eventId }, { jobId: eventId, attempts: this.opts.maxAttempts, backoff: { type: 'custom' } })),
    ]);
  }

  /**
   * The reconciler's repair for one event: every relay that has not answered for good gets
   * its job back if it has none; a relay given up on before `reopenBeforeMs` gets a new round
   * of attempts when the quorum cannot be met without it. Idempotent (job id = event id).
   */
  async repairPublishing(eventId: string, current: WitnessStatus, reopenBeforeMs: number): Promise<PublishRepair> {
    const out: PublishRepair = { missing: 0, reopened: 0, moved: 0 };
    const reports = await this.store.relayReports(eventId);
    const byUrl = new Map(reports.map((r) => [r.url, r]));
    const latest = [...reports].sort((a, b) => a.at.localeCompare(b.at)).at(-1);
    if (latest && nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum).status !== current) {
      await this.moveWitness(eventId, reports, latest);
      out.moved++;
    }
    const accepted = reports.filter((r) => r.status === 'accepted' || r.status === 'stored').length;
    if (accepted >= this.opts.quorum) return out;
    // Final refusals (invalid:, blocked:, restricted:, ...) are never sent again; when they alone
    // put the quorum out of reach, reopening the relays given up on cannot help either.
    const refused = reports.filter((r) => r.final && (r.status === 'rejected' || r.prefix === 'policy')).length;
    if (this.opts.relays.length - refused < this.opts.quorum) return out;
    const open = this.opts.relays.filter((url) => !byUrl.get(url)?.final).length;
    for (const [url, q] of this.queues) {
      const r = byUrl.get(url);
      // a relay whose stated policy can never take the event (prefix policy) is not sent it again
      const reopen = r?.final === true && r.status === 'failed' && r.prefix !== 'policy' && accepted + open < this.opts.quorum && Date.parse(r.at) < reopenBeforeMs;
      if (r?.final && !reopen) continue;
      if (await this.store.redis.exists(q.toKey(eventId))) continue;
      // Read again: the job may have recorded its final answer and ended since the first read.
      const now = (await this.store.relayReports(eventId)).find((x) => x.url === url);
      if (JSON.stringify(now) !== JSON.stringify(r)) continue;
      await this.store.markRelaysSent(eventId, [url]);
      await q.add('publish', { eventId, ...(reopen ? { reopen: true } : {}) }, { jobId: eventId, attempts: this.opts.maxAttempts, backoff: { type: 'custom' } });
      if (reopen) out.reopened++;
      else out.missing++;
    }
    return out;
  }

  /** The batch event of a batch, or null when it has none (not decided yet, not made yet, or decided `envelope`). */
  async batchEventId(batchId: string): Promise<string | null> {
    const { event: json } = await this.store.nostrBatchEvent(batchId);
    return json ? (JSON.parse(json) as SignedEvent).id : null;
  }

  /**
   * Re-creates the batch job of a batch that has no batch event and no job; true when it did.
   * A batch decided `envelope` whose subjects are not all signed gets its job again too (the
   * caller asks only for subjects without an event): the job signs the rest.
   */
  async repairBatch(batchId: string): Promise<boolean> {
    if ((await this.batchEventId(batchId)) !== null) return false;
    const jobId = `nostr-batch-${batchId}`;
    const state = await this.batchQueue.getJobState(jobId);
    if (state !== 'unknown' && state !== 'failed' && state !== 'completed') return false;
    if (state !== 'unknown') await this.batchQueue.remove(jobId);
    await this.enqueueBatch(batchId);
    return true;
  }

  /** Hands a cut batch to the batch worker (idempotent by batch id). */
  async enqueueBatch(batchId: string): Promise<void> {
    await this.batchQueue.add('batch', { batchId }, { jobId: `nostr-batch-${batchId}`, attempts: 1000, backoff: { type: 'custom' } });
  }

  /** The relay queue with the most events still to send: jobs waiting, delayed (retries), active or paused. */
  async backlog(): Promise<number> {
    const counts = await Promise.all([...this.queues.values()].map((q) => q.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'paused', 'waiting-children')));
    return Math.max(0, ...counts.map((c) => Object.values(c).reduce((a, b) => a + b, 0)));
  }

  /** Auto mode: what the relays already carry against the budget (docs/nostr.md): the backlog and the events queued within the horizon. */
  async load(): Promise<{ backlog: number; recent: number }> {
    const [backlog, recent] = await Promise.all([this.backlog(), this.store.recentNostrQueued(Date.now(), this.opts.autoHorizonMs)]);
    return { backlog, recent };
  }

  /**
   * The batch's kind of event, decided once: the batch hash's `mode` field is written with
   * HSETNX before anything is signed, so a retry, a restart or a second daemon keeps the first
   * decision.
   */
  async decideMode(batchId: string, size: number, fields: { mode: string | null }): Promise<ModeDecision> {
    const recorded = fields.mode === 'envelope' || fields.mode === 'batch' ? fields.mode : null;
    if (recorded) return { mode: recorded, size };
    let decision: ModeDecision;
    if (this.opts.mode === 'auto') {
      const { backlog, recent } = await this.load();
      const { mode, budget } = autoMode({ cutSize: size, backlog, recent, ratePerMinute: this.opts.ratePerMinute, horizonMs: this.opts.autoHorizonMs });
      decision = { mode, size, backlog, recent, budget };
    } else {
      decision = { mode: this.opts.mode, size };
    }
    const inForce = (await this.store.fixNostrBatchMode(batchId, decision.mode)) as NostrEventMode;
    if (inForce !== decision.mode) return { mode: inForce, size };
    this.hooks.onModeDecision?.(decision.mode, size);
    if (this.opts.mode === 'auto' && this.lastMode !== null && this.lastMode !== decision.mode) {
      this.log.info({ batch: batchId, ...decision }, decision.mode === 'batch' ? 'nostr auto mode: backlog over the rate budget, publishing batch events' : 'nostr auto mode: backlog drained, publishing one event per subject');
    } else {
      this.log.debug({ batch: batchId, ...decision }, 'nostr mode decided');
    }
    this.lastMode = decision.mode;
    return decision;
  }

  /** Runs `fn` after every decision this process started before it (one at a time). */
  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.deciding.then(fn, fn);
    this.deciding = run.catch(() => undefined);
    return run;
  }

  private async batchJob(batchId: string): Promise<void> {
    const batch = await this.store.getBatch('nostr', batchId);
    if (!batch) {
      await this.store.closeBatch('nostr', batchId);
      return;
    }
    const mode = await this.serialized(async () => {
      const decision = await this.decideMode(batchId, batch.size, await this.store.nostrBatchEvent(batchId));
      // The per-subject publishes are queued before the next decision reads the backlog.
      if (decision.mode === 'envelope') await this.publishEnvelopes(batchId);
      return decision.mode;
    });
    if (mode === 'envelope') {
      await this.store.closeBatch('nostr', batchId);
      return;
    }
    const root = new BatchTree(batch.digests).root.toString('hex');
    const candidate = batchEvent({ anchoredAt: batch.anchoredAt, batchRootHex: root, leafCount: batch.size, kind: this.opts.kind }, this.key);
    // Two daemons may race here: the first event stored for the batch is the one published.
    const json = await this.store.fixNostrBatchEvent(batchId, serializeEvent(candidate));
    const event = JSON.parse(json) as SignedEvent;
    await this.store.storeEvent(event.id, json, { batch: batchId });
    await this.ensurePublishing(event.id);
    await this.store.closeBatch('nostr', batchId);
  }

  /**
   * A batch decided `envelope`: signs each subject's envelope event, links it to the subject
   * unless it has one (a retry keeps the copy stored first), and queues it on every relay.
   */
  private async publishEnvelopes(batchId: string): Promise<void> {
    const keys = await this.store.batchKeys('nostr', batchId);
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const records = await this.store.getRecords(chunk);
      const items: Array<{ key: string; id: string; json: string; envelope?: string }> = [];
      for (const r of records) {
        if (!r || !r.envelopeCanonical || !r.digest) continue;
        if (r.nostrEventId) {
          items.push({ key: r.key, id: r.nostrEventId, json: '' });
          continue;
        }
        const ev = this.signEnvelope(r.envelopeCanonical, r.digest);
        items.push({ key: r.key, id: ev.id, json: serializeEvent(ev), envelope: r.envelopeCanonical });
      }
      const fresh = items.filter((it) => it.json !== '');
      const stored = await this.store.setSubjectEvents(fresh);
      await this.hooks.onSubjectEvents?.(fresh.flatMap((it, j) => (stored[j] ? [{ key: it.key, eventId: stored[j] }] : [])));
      const ids = [...items.filter((it) => it.json === '').map((it) => it.id), ...stored.filter((x): x is string => x !== null)];
      for (let j = 0; j < ids.length; j += 50) await Promise.all(ids.slice(j, j + 50).map((id) => this.ensurePublishing(id)));
    }
  }

  private client(url: string): RelayClient {
    let c = this.clients.get(url);
    if (!c) {
      c = new RelayClient(url, { publishTimeoutMs: this.opts.publishTimeoutMs, signAuth: (t) => this.key.sign(t) });
      this.clients.set(url, c);
    }
    return c;
  }

  private async publishJob(url: string, job: Job<RelayJobData>): Promise<void> {
    const { eventId } = job.data;
    const reports = await this.store.relayReports(eventId);
    const existing = reports.find((r) => r.url === url);
    if (existing?.final && !(job.data.reopen && existing.status === 'failed')) {
      // A crash between recording the report and moving the witness left the move undone: redo it (idempotent).
      await this.moveWitness(eventId, reports, existing);
      return;
    }
    const json = await this.store.eventJson(eventId);
    if (json === null) {
      this.log.error({ eventId }, 'event missing from state; nothing to publish');
      return;
    }
    const event = JSON.parse(json) as SignedEvent;
    const attempt = job.attemptsMade + 1;
    const outcome = await this.policy.publish(url, this.client(url), event);
    if ('final' in outcome) {
      // The relay's stated policy can never take this event (payment, restricted writes, too long, proof of work over the cap)
      this.hooks.onPublish?.(url, 'rejected:policy', outcome.final);
      await this.record(eventId, { url, status: 'failed', message: outcome.final, at: outcome.at, attempts: attempt, final: true, prefix: 'policy', ...(outcome.pow ? { pow: outcome.pow } : {}) }, existing);
      return;
    }
    const { result, sent } = outcome;
    // the copy this relay was sent (mined or re-dated), when not the event itself
    const copy = sent.id !== event.id ? { copyId: sent.id, ...(outcome.pow > 0 ? { pow: outcome.pow } : {}) } : {};
    this.hooks.onPublish?.(url, result.status === 'rejected' ? `rejected:${result.prefix ?? 'unknown'}` : result.status, result.message);
    if (result.status === 'accepted') {
      this.pauses.delete(url);
      let status = 'accepted';
      let message = result.message;
      if (this.opts.readBack) {
        // Acceptance stands either way; read-back only upgrades it to "stored" when the bytes match.
        let back: string | null = null;
        let failure = '';
        try {
          back = await this.client(url).fetchById(sent.id, { timeoutMs: this.opts.publishTimeoutMs });
        } catch (err) {
          failure = (err as Error).message;
        }
        if (back !== null && sameSignedEvent(back, sent)) status = 'stored';
        else message = `${message}${message ? '; ' : ''}read-back ${failure ? `failed: ${failure}` : back === null ? 'found nothing' : 'differs'}`;
      }
      await this.record(eventId, { url, status, message, at: result.at, attempts: attempt, final: true, ...copy }, existing);
      return;
    }
    if (result.status === 'rejected' && result.prefix === 'rate-limited') {
      // The limit is on our key, not this event: pause the relay's whole queue (every daemon's
      // worker for it) and send this event again afterwards, without spending an attempt.
      await this.record(eventId, { url, status: result.status, message: result.message, at: result.at, attempts: attempt, final: false, prefix: result.prefix }, existing);
      await this.queues.get(url)!.rateLimit(this.pauseFor(url));
      throw Worker.RateLimitError();
    }
    if (result.retryable && attempt < this.opts.maxAttempts) {
      await this.record(eventId, { url, status: result.status, message: result.message, at: result.at, attempts: attempt, final: false, ...(result.prefix ? { prefix: result.prefix } : {}), ...copy }, existing);
      throw new RelayAttemptError(`${result.status}: ${result.message}`);
    }
    // Not retryable (invalid:, blocked:, ...) or out of attempts: final for this relay.
    await this.record(eventId, {
      url,
      status: result.retryable ? 'failed' : 'rejected',
      message: result.message,
      at: result.at,
      attempts: attempt,
      final: true,
      ...(result.prefix ? { prefix: result.prefix } : {}),
      ...copy,
    }, existing);
  }

  /**
   * How long a `rate-limited:` answer pauses this relay: nostr.rateLimitBackoffMs, doubled for
   * each pause in a row (answers arriving while one pause runs, from publishes already in
   * flight, do not double it again), capped at nostr.backoffMaxMs or the base if larger.
   */
  private pauseFor(url: string): number {
    const now = Date.now();
    const p = this.pauses.get(url) ?? { streak: 0, until: 0 };
    const base = this.opts.rateLimitBackoffMs;
    const cap = Math.max(base, this.opts.backoffMaxMs);
    if (now >= p.until) {
      p.streak++;
      // no jitter: the relay asked for at least this long
      p.until = now + backoffDelay(p.streak, base, cap, { jitter: 0 });
      this.pauses.set(url, p);
    }
    return Math.max(1, p.until - now);
  }

  private async giveUp(url: string, eventId: string, message: string, attempts: number): Promise<void> {
    try {
      const reports = await this.store.relayReports(eventId);
      const r = reports.find((x) => x.url === url);
      if (r?.final) return;
      await this.record(eventId, { url, status: 'failed', message: `gave up after ${attempts} attempts: ${message}`, at: new Date().toISOString(), attempts, final: true }, r);
    } catch (err) {
      this.log.error({ err, relay: url, eventId }, 'could not record a relay giving up');
    }
  }

  /**
   * Records a relay's report and moves the witness of every subject the event carries.
   * A batch's subjects are touched only when this report changes the witness status (a
   * second relay accepting leaves them partial): that is thousands of writes saved per
   * report, and the per-relay detail stays on the event. `previous` is this relay's report
   * before this one (read by the caller; only one job per relay and event writes it).
   */
  private async record(eventId: string, report: RelayReportRecord, previous: RelayReportRecord | undefined): Promise<void> {
    const reports = await this.store.setRelayReport(eventId, report);
    const without = reports.filter((r) => r.url !== report.url);
    const before = nostrStatusOf(previous ? [...without, previous] : without, this.opts.relays.length, this.opts.quorum);
    const after = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
    await this.moveWitness(eventId, reports, report, before.status === after.status);
  }

  /** Moves the witness of every subject the event carries to what its relays' reports say. */
  private async moveWitness(eventId: string, reports: readonly RelayReportRecord[], report: RelayReportRecord, unchanged = false): Promise<void> {
    const { status, progress, reason } = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
    const owner = await this.store.eventOwner(eventId);
    if (unchanged && !owner.subject) return;
    const keys = owner.subject ? [owner.subject] : owner.batch ? await this.store.batchKeys('nostr', owner.batch) : [];
    const detail = reason ?? `${report.url}: ${report.status}${report.message ? ` (${report.message})` : ''}`;
    const changes = await this.store.setWitnessMany(keys, 'nostr', status, progress, detail, owner.subject ? undefined : (owner.batch ?? undefined));
    changes.forEach((c, i) => {
      if (c.changed) this.hooks.onWitnessChange?.(keys[i]!, status, c.createdMs);
    });
  }

  /** Every queue this witness works from (for queue depth). */
  get allQueues(): Queue[] {
    return [...this.queues.values(), this.batchQueue];
  }

  /** Stops taking jobs; in-flight publishes finish (or go back to the queue) first. */
  async close(): Promise<void> {
    this.policy.stop();
    await Promise.all(this.workers.map((w) => w.close()));
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.batchQueue.close();
    for (const c of this.clients.values()) c.close();
  }
}

/** A publish attempt the relay answered or failed (retried by BullMQ), as opposed to an error of our own Redis. */
class RelayAttemptError extends Error {
  override name = 'RelayAttemptError';
}
