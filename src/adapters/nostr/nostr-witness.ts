/**
 * NostrWitness: durable publishing of signed events to every configured relay.
 * Each relay has an outbox in Redis (relay-outbox.ts: event ids scored by when due), drained
 * in groups over one connection by every daemon, so the relay's rate limit holds across
 * daemon instances, retries back off and survive restarts, a daemon that dies hands its
 * group back when its lease ends, and an event a relay answered for good is never sent to it
 * again (the drains: relay-drains.ts). A group's reports and witness moves are written in a
 * few calls for the whole group. Cut batches (auto and batch mode) go through one batch job
 * each, which decides, once and durably, whether the batch gets one batch event or one event
 * per subject.
 */
import { Queue, Worker, type Job, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { nostrBatchQueueName } from '../bullmq/names.js';
import { boundErrorText, boundedFailures } from '../bullmq/failed-attempts.js';
import { stalledJobOptions } from '../bullmq/stalled.js';
import { batchCheckpoint, batchRoot } from '../batch/batch-root.js';
import { autoMode, type NostrEventMode } from '../../core/nostr/auto-mode.js';
import { batchEvent, checkpointEvent, envelopeEvent, serializeEvent, type SignedEvent } from '../../core/nostr/events.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';
import { RelayOutbox } from './relay-outbox.js';
import { RelayDrains, nostrStatusOf } from './relay-drains.js';
import { UpkeepState } from './upkeep-state.js';

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
  /** relayUpkeep.enabled: note every event handed to the relays for upkeep's rounds (upkeep-state.ts). */
  upkeep?: boolean;
};

export interface NostrWitnessHooks {
  /** Called for every publish attempt with its outcome and the relay's message or what went wrong (metrics, health). */
  onPublish?: (relay: string, result: string, message: string) => void;
  /** Called when a subject's witness status changes (metrics). */
  onWitnessChange?: (key: string, status: WitnessStatus, createdMs: number) => void;
  /** Called once per batch when its kind of event is decided (metrics). */
  onModeDecision?: (mode: NostrEventMode, subjects: number) => void;
  /** Called when relays accepted events relay upkeep found lost and handed back (metrics). */
  onRepublished?: (relay: string, n: number) => void;
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


/** What the reconciler re-created for one event. */
export interface PublishRepair {
  /** Relays that had not answered for good and did not hold the event in their outbox. */
  missing: number;
  /** Relays given up on (retries exhausted) while the quorum could not be met without them. */
  reopened: number;
  /** The subjects' witness was behind what the relays' reports say (its move failed after the report was recorded). */
  moved: number;
}

export class NostrWitness {
  private readonly opts: NostrWitnessOptions;
  private readonly store: AnchorStore;
  private readonly key: SigningKey;
  private readonly log: Logger;
  private readonly hooks: NostrWitnessHooks;
  private readonly outbox: RelayOutbox;
  /** Each relay's drain: where the outboxes' events are sent (relay-drains.ts). */
  private readonly relays: RelayDrains;
  private readonly workers: Worker[] = [];
  private readonly batchQueue: Queue;
  /** Decisions (and the per-subject publishes they queue) run one at a time in this process, so two see each other's backlog. */
  private deciding: Promise<unknown> = Promise.resolve();
  /** The last auto-mode decision, to log switches. */
  private lastMode: NostrEventMode | null = null;

  constructor(opts: NostrWitnessOptions, store: AnchorStore, key: SigningKey, log: Logger, hooks: NostrWitnessHooks = {}) {
    this.opts = opts;
    this.store = store;
    this.key = key;
    this.log = log.child({ witness: 'nostr' });
    this.hooks = hooks;
    // relay upkeep on: an event handed to the relays for the first time goes into its walk in the same call
    const kept = opts.upkeep ? new UpkeepState(store) : null;
    this.outbox = new RelayOutbox(store.events, opts.relays, kept?.walk ?? null);
    this.relays = new RelayDrains(opts, store, key, this.log, hooks, this.outbox, kept);
    // In every mode: batches cut under auto or batch mode are finished after a switch to envelope.
    this.batchQueue = new Queue(nostrBatchQueueName(opts.queueBase), { connection: opts.connection, prefix: opts.bullPrefix });
  }

  /** The signed envelope event for a subject (envelope mode, and auto mode's per-subject events); created_at = anchored_at keeps its id stable. */
  signEnvelope(canonical: string, digestHex: string, envelope?: object): SignedEvent {
    return envelopeEvent({ canonical, digestHex, kind: this.opts.kind, ...(envelope ? { envelope } : {}) }, this.key);
  }

  /** Starts each relay's drain and the batch worker. */
  start(): void {
    this.relays.start();
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
    await Promise.all([...this.workers, this.batchQueue].map((x) => x.waitUntilReady()));
  }

  /** Makes sure every relay's outbox holds this event unless that relay already answered for good. */
  async ensurePublishing(eventId: string): Promise<void> {
    await this.ensurePublishingMany([eventId]);
  }

  /**
   * The same for many events, in a few calls for all of them (outbox-add.lua records the
   * relays on each event, as the subject's view lists them, and queues the event on each).
   */
  async ensurePublishingMany(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    const now = Date.now();
    if (this.opts.mode === 'auto') {
      const k = this.store.keys.nostrRecent;
      const res = await this.store.redis.multi().zadd(k, 'NX', ...eventIds.flatMap((id) => [now, id])).zremrangebyscore(k, '-inf', `(${now - this.opts.autoHorizonMs}`).exec();
      for (const [err] of res ?? []) if (err) throw err;
    }
    // with relay upkeep on, the same call notes the events handed over for the first time in its walk
    await this.outbox.add(eventIds, now);
    this.relays.wake();
  }

  /**
   * The reconciler's repair for one event: every relay that has not answered for good gets
   * the event back in its outbox if it is not there; a relay given up on before
   * `reopenBeforeMs` gets a new round of attempts when the quorum cannot be met without it
   * (its report is set back to not final, then the event queued). Idempotent.
   */
  async repairPublishing(eventId: string, current: WitnessStatus, reopenBeforeMs: number): Promise<PublishRepair> {
    const out: PublishRepair = { missing: 0, reopened: 0, moved: 0 };
    const reports = await this.store.events.relayReports(eventId);
    const byUrl = new Map(reports.map((r) => [r.url, r]));
    const latest = [...reports].sort((a, b) => a.at.localeCompare(b.at)).at(-1);
    if (latest && nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum).status !== current) {
      await this.relays.moveWitness(eventId, reports, latest);
      out.moved++;
    }
    const accepted = reports.filter((r) => r.status === 'accepted' || r.status === 'stored').length;
    if (accepted >= this.opts.quorum) return out;
    // Final refusals (invalid:, blocked:, restricted:, ...) are never sent again; when they alone
    // put the quorum out of reach, reopening the relays given up on cannot help either.
    const refused = reports.filter((r) => r.final && (r.status === 'rejected' || r.prefix === 'policy')).length;
    if (this.opts.relays.length - refused < this.opts.quorum) return out;
    const open = this.opts.relays.filter((url) => !byUrl.get(url)?.final).length;
    for (const url of this.opts.relays) {
      const r = byUrl.get(url);
      // a relay whose stated policy can never take the event (prefix policy) is not sent it again
      const reopen = r?.final === true && r.status === 'failed' && r.prefix !== 'policy' && accepted + open < this.opts.quorum && Date.parse(r.at) < reopenBeforeMs;
      if (r?.final && !reopen) continue;
      if (await this.outbox.holds(url, eventId)) continue;
      if (reopen) {
        // a new round: the report no longer final, its attempts counted afresh
        await this.outbox.record(url, [{ id: eventId, report: { url, status: 'failed', message: boundErrorText(`reopened after: ${r!.message}`), at: new Date().toISOString(), attempts: 0, final: false } }]);
        out.reopened++;
      } else {
        out.missing++;
      }
      // outbox-add skips a relay whose report became final since the read above
      await this.outbox.add([eventId], Date.now(), [url]);
      this.relays.wake(url);
    }
    return out;
  }

  /** The batch event of a batch, or null when it has none (not decided yet, not made yet, or decided `envelope`). */
  async batchEventId(batchId: string): Promise<string | null> {
    const { event: json } = await this.store.batches.nostrBatchEvent(batchId);
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

  /** The relay outbox with the most events still to send (due, waiting for a retry or a pause, or in flight). */
  async backlog(): Promise<number> {
    return Math.max(0, ...(await this.outbox.sizes()).values());
  }


  /** Auto mode: what the relays already carry against the budget (docs/nostr.md): the backlog and the events queued within the horizon. */
  async load(): Promise<{ backlog: number; recent: number }> {
    const [backlog, recent] = await Promise.all([this.backlog(), this.store.events.recentNostrQueued(Date.now(), this.opts.autoHorizonMs)]);
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
    const inForce = (await this.store.batches.fixNostrBatchMode(batchId, decision.mode)) as NostrEventMode;
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
    const batch = await this.store.batches.getBatch('nostr', batchId);
    if (!batch) {
      await this.store.batches.closeBatch('nostr', batchId);
      return;
    }
    const mode = await this.serialized(async () => {
      const decision = await this.decideMode(batchId, batch.size, await this.store.batches.nostrBatchEvent(batchId));
      // The per-subject publishes are queued before the next decision reads the backlog.
      if (decision.mode === 'envelope') await this.publishEnvelopes(batchId);
      return decision.mode;
    });
    if (mode === 'envelope') {
      // every subject of it has its own event now (publishEnvelopes): no tree is ever built from its digests
      await this.store.batches.dropNostrDigests(batchId);
      await this.store.batches.closeBatch('nostr', batchId);
      return;
    }
    // cut from the anchor log: the batch event is the checkpoint's (its note, byte for byte)
    const cp = batchCheckpoint(batch.fields);
    const candidate = cp
      ? checkpointEvent({ note: cp.note, createdAt: Math.floor(Date.parse(batch.anchoredAt) / 1000), kind: this.opts.kind }, this.key)
      : batchEvent({ anchoredAt: batch.anchoredAt, batchRootHex: batchRoot(batch).toString('hex'), leafCount: batch.size, kind: this.opts.kind }, this.key);
    // Two daemons may race here: the first event stored for the batch is the one published.
    const json = await this.store.batches.fixNostrBatchEvent(batchId, serializeEvent(candidate));
    const event = JSON.parse(json) as SignedEvent;
    await this.store.events.storeEvent(event.id, json, { batch: batchId });
    await this.ensurePublishing(event.id);
    await this.store.batches.closeBatch('nostr', batchId);
  }

  /**
   * A batch decided `envelope`: signs each subject's envelope event, links it to the subject
   * unless it has one (a retry keeps the copy stored first), and queues it on every relay.
   */
  private async publishEnvelopes(batchId: string): Promise<void> {
    const keys = await this.store.batches.batchKeys('nostr', batchId);
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const records = await this.store.subjects.getRecords(chunk);
      const linked: string[] = [];
      const fresh: Array<{ key: string; event: SignedEvent }> = [];
      for (const r of records) {
        if (!r || !r.envelopeCanonical || !r.digest) continue;
        if (r.nostrEventId) linked.push(r.nostrEventId);
        else fresh.push({ key: r.key, event: this.signEnvelope(r.envelopeCanonical, r.digest) });
      }
      const stored = await this.store.events.setSubjectEvents(fresh);
      await this.hooks.onSubjectEvents?.(fresh.flatMap((it, j) => (stored[j] ? [{ key: it.key, eventId: stored[j] }] : [])));
      const ids = [...linked, ...stored.filter((x): x is string => x !== null)];
      await this.ensurePublishingMany(ids);
    }
  }

  /** Every queue this witness works from (for queue depth): the batch queue (the relays' outboxes are not queues). */
  get allQueues(): Queue[] {
    return [this.batchQueue];
  }

  /** Stops taking groups and jobs; publishes in flight finish first (or their events come back when their lease ends). */
  async close(): Promise<void> {
    await this.relays.stop();
    await Promise.all(this.workers.map((w) => w.close()));
    await this.batchQueue.close();
    this.relays.closeConnections();
  }
}


