/**
 * NostrWitness: durable publishing of signed events to every configured relay.
 * Each relay has an outbox in Redis (relay-outbox.ts: event ids scored by when due), drained
 * in groups over one connection by every daemon, so the relay's rate limit holds across
 * daemon instances, retries back off and survive restarts, a daemon that dies hands its
 * group back when its lease ends, and an event a relay answered for good is never sent to it
 * again. A group's reports and witness moves are written in a few calls for the whole group.
 * Cut batches (auto and batch mode) go through one batch job each, which decides, once and
 * durably, whether the batch gets one batch event or one event per subject.
 */
import { Queue, Worker, type Job, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { RelayReportRecord } from '../state/events.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { nostrBatchQueueName } from '../bullmq/names.js';
import { boundErrorText, boundedFailures } from '../bullmq/failed-attempts.js';
import { stalledJobOptions } from '../bullmq/stalled.js';
import { batchCheckpoint, batchRoot } from '../batch/batch-root.js';
import { autoMode, type NostrEventMode } from '../../core/nostr/auto-mode.js';
import { batchEvent, checkpointEvent, envelopeEvent, serializeEvent, sameSignedEvent, type SignedEvent } from '../../core/nostr/events.js';
import type { SigningKey } from '../../core/nostr/keys.js';
import { RelayClient } from './relay-client.js';
import { PolicyPublisher } from './relay-policy.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';
import { RelayOutbox, type RecordedReports } from './relay-outbox.js';
import { ParsedEvents } from './parsed-events.js';
import { UpkeepState } from './upkeep-state.js';

/** An idle drain looks for events other daemons queued this often (its own wake it at once). */
const IDLE_POLL_MS = 500;
/** Most events one drain takes at once, as a multiple of nostr.concurrency (the publishes in flight). */
const GROUP_PER_CONCURRENCY = 4;
const GROUP_MAX = 500;
/** Events held parsed for the relays still to read them (parsed-events.ts): a few groups' worth. */
const PARSED_MAX = 1024;
/** A drain whose Redis calls fail waits from this, doubling, up to DRAIN_ERROR_MAX_MS. */
const DRAIN_ERROR_MS = 200;
const DRAIN_ERROR_MAX_MS = 5000;

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


/** What one publish attempt on one relay came to: the report, and when the event is due again if not final. */
interface Attempt {
  id: string;
  report: RelayReportRecord;
  /** Not final: send again at this time (a retry's backoff, or the end of a rate-limited pause). */
  againAtMs?: number;
  /** A `rate-limited:` answer: pause the relay this long. */
  pauseMs?: number;
}

/** One relay's drain in this daemon: its wake-up and the loop's promise. */
interface Drain {
  wake: () => void;
  done: Promise<void>;
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
  private readonly outbox: RelayOutbox;
  /** Relay upkeep's walk of every event handed to the relays (null: relayUpkeep off). */
  private readonly kept: UpkeepState | null;
  private readonly drains = new Map<string, Drain>();
  private readonly workers: Worker[] = [];
  private stopped = false;
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
  /** Each event's stored JSON parsed once for all the relays. */
  private readonly parsed: ParsedEvents;

  constructor(opts: NostrWitnessOptions, store: AnchorStore, key: SigningKey, log: Logger, hooks: NostrWitnessHooks = {}) {
    this.opts = opts;
    this.store = store;
    this.key = key;
    this.log = log.child({ witness: 'nostr' });
    this.hooks = hooks;
    this.policy = new PolicyPublisher(store, key, opts);
    this.kept = opts.upkeep ? new UpkeepState(store) : null;
    // relay upkeep on: an event handed to the relays for the first time goes into its walk in the same call
    this.outbox = new RelayOutbox(store.events, opts.relays, this.kept?.walk ?? null);
    this.parsed = new ParsedEvents(opts.relays.length, PARSED_MAX);
    // In every mode: batches cut under auto or batch mode are finished after a switch to envelope.
    this.batchQueue = new Queue(nostrBatchQueueName(opts.queueBase), { connection: opts.connection, prefix: opts.bullPrefix });
  }

  /** The signed envelope event for a subject (envelope mode, and auto mode's per-subject events); created_at = anchored_at keeps its id stable. */
  signEnvelope(canonical: string, digestHex: string, envelope?: object): SignedEvent {
    return envelopeEvent({ canonical, digestHex, kind: this.opts.kind, ...(envelope ? { envelope } : {}) }, this.key);
  }

  /** Starts each relay's drain and the batch worker. */
  start(): void {
    for (const url of this.opts.relays) {
      // read each relay's NIP-11 limits ahead of its first group (never rejects)
      void this.policy.policies.get(url);
      let wakeUp: (() => void) | null = null;
      let woken = false;
      const drain: Drain = {
        wake: () => {
          woken = true;
          wakeUp?.();
        },
        done: Promise.resolve(),
      };
      const sleep = (ms: number): Promise<void> =>
        new Promise<void>((resolve) => {
          if (woken || this.stopped) {
            woken = false;
            resolve();
            return;
          }
          const t = setTimeout(done, ms);
          function done(): void {
            clearTimeout(t);
            wakeUp = null;
            woken = false;
            resolve();
          }
          wakeUp = done;
        });
      drain.done = this.drain(url, sleep);
      this.drains.set(url, drain);
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
    for (const d of this.drains.values()) d.wake();
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
      this.drains.get(url)?.wake();
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

  private client(url: string): RelayClient {
    let c = this.clients.get(url);
    if (!c) {
      c = new RelayClient(url, { publishTimeoutMs: this.opts.publishTimeoutMs, signAuth: (t) => this.key.sign(t) });
      this.clients.set(url, c);
    }
    return c;
  }

  /** Lease on a taken group: a daemon that dies hands it back this long after its last renewal. */
  private get leaseMs(): number {
    return Math.max(this.opts.stalledIntervalMs, 5000);
  }

  /** One relay's drain: takes due groups from its outbox until the daemon stops. */
  private async drain(url: string, sleep: (ms: number) => Promise<void>): Promise<void> {
    const most = Math.min(GROUP_MAX, this.opts.concurrency * GROUP_PER_CONCURRENCY);
    let errors = 0;
    while (!this.stopped) {
      // while Redis refuses writes the shared backoff holds every worker: the drains wait with them
      if (this.opts.refusals?.holding) {
        await sleep(IDLE_POLL_MS);
        continue;
      }
      let waitMs: number;
      try {
        const taken = await this.outbox.take(url, Date.now(), most, this.leaseMs, this.opts.ratePerMinute);
        errors = 0;
        if ('ids' in taken) {
          await this.publishGroup(url, taken.ids);
          continue;
        }
        waitMs = taken.waitMs === null ? IDLE_POLL_MS : Math.min(taken.waitMs, IDLE_POLL_MS);
      } catch (err) {
        // Redis refusing or away: what was taken stays leased and comes back; no attempt is spent
        errors++;
        waitMs = backoffDelay(errors, DRAIN_ERROR_MS, DRAIN_ERROR_MAX_MS);
        // a refusal goes to the shared backoff (one line for the condition), anything else to the log
        if (!this.stopped && !this.opts.refusals?.refused(err)) this.log.warn({ relay: url, err }, 'relay drain: Redis call failed; the group comes back when its lease ends');
      }
      await sleep(waitMs);
    }
  }

  /**
   * Publishes a group on one relay (nostr.concurrency at a time over its one connection), then
   * records every report in one call, moves the witnesses that changed in one call per kind
   * of move, and takes the events answered for good out of the outbox. A crash anywhere
   * leaves the group leased: when the lease ends it is taken again, and an event whose report
   * is already final only has its witness move redone.
   */
  private async publishGroup(url: string, ids: readonly string[]): Promise<void> {
    const renew = setInterval(() => {
      void this.outbox.renew(url, ids, Date.now() + this.leaseMs).catch((err: unknown) => this.log.warn({ relay: url, err }, 'relay drain: lease renewal failed'));
    }, Math.max(200, Math.floor(this.leaseMs / 3)));
    try {
      const rows = await this.outbox.read(url, ids);
      const attempts: Attempt[] = [];
      const finished: string[] = [];
      const redo: string[] = [];
      let next = 0;
      // a rate-limited: answer pauses the relay: nothing more of this group is sent until it ends
      let pausedUntil = 0;
      const worker = async (): Promise<void> => {
        while (next < ids.length && !this.stopped && pausedUntil === 0) {
          const i = next++;
          const id = ids[i]!;
          const { event: stored, report, resend } = rows[i]!;
          if ('broken' in stored) {
            // a subject event its envelope no longer rebuilds: final for this relay, with the reason; nothing else held up
            if (!report?.final) attempts.push({ id, report: { url, status: 'failed', message: boundErrorText(`the stored event cannot be rebuilt: ${stored.broken}`), at: new Date().toISOString(), attempts: 0, final: true } });
            else finished.push(id);
            continue;
          }
          const json = stored.json;
          if (json === null) {
            this.log.error({ eventId: id, relay: url }, 'event missing from state; nothing to publish');
            finished.push(id);
            continue;
          }
          if (report?.final && resend === null) {
            // A crash between recording the report and moving the witness left the move undone: redo it (idempotent).
            redo.push(id);
            continue;
          }
          let event: SignedEvent;
          try {
            event = this.parsed.parse(id, json);
          } catch {
            // nothing any relay could take: final for this relay rather than a retry for ever
            attempts.push({ id, report: { url, status: 'failed', message: 'the stored event is not valid JSON', at: new Date().toISOString(), attempts: 0, final: true } });
            continue;
          }
          try {
            // sent again after relay upkeep found it lost: a round of attempts of its own, the acceptance kept
            const a = await this.attempt(url, id, event, resend !== null && report ? { ...report, final: false, attempts: resend } : report);
            // a relay's reason is its own words, of any length: the report keeps a bounded prefix
            a.report.message = boundErrorText(a.report.message);
            attempts.push(a);
            if (a.pauseMs !== undefined) pausedUntil = Math.max(pausedUntil, a.againAtMs!);
          } catch (err) {
            // our own failure (Redis, mining stopped): no report; the event comes back when its lease ends
            this.log.warn({ relay: url, eventId: id, err }, 'relay publish not attempted; left in the outbox');
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.opts.concurrency, ids.length) }, worker));
      const resent = new Set(ids.filter((_, i) => rows[i]!.resend !== null));
      const republished = attempts.filter((a) => resent.has(a.id) && (a.report.status === 'accepted' || a.report.status === 'stored')).length;
      await this.outbox.resendTried(url, attempts.filter((a) => resent.has(a.id) && !a.report.final).map((a) => ({ id: a.id, attempts: a.report.attempts ?? 0 })));
      const recorded = await this.outbox.record(url, attempts);
      await this.moveWitnesses(attempts.map((a, i) => ({ id: a.id, report: a.report, recorded: recorded[i]! })));
      for (const id of redo) {
        const reports = await this.store.events.relayReports(id);
        const mine = reports.find((r) => r.url === url);
        if (mine) await this.moveWitness(id, reports, mine);
      }
      const pauses = attempts.filter((a) => a.pauseMs !== undefined);
      if (pauses.length > 0) await this.outbox.pause(url, Math.max(...pauses.map((a) => a.pauseMs!)));
      await this.outbox.later(url, attempts.filter((a) => a.againAtMs !== undefined).map((a) => ({ id: a.id, atMs: a.againAtMs! })));
      await this.outbox.done(url, [...finished, ...redo, ...attempts.filter((a) => a.report.final).map((a) => a.id)]);
      if (republished > 0) {
        await this.kept?.countRepublished(url, republished);
        this.hooks.onRepublished?.(url, republished);
      }
      if (this.stopped || pausedUntil > 0) {
        // the events not tried: due again when the pause ends, or now when stopping (for another daemon or the next start)
        const handled = new Set([...finished, ...redo, ...attempts.map((a) => a.id)]);
        const at = this.stopped ? Date.now() : pausedUntil;
        await this.outbox.later(url, ids.filter((id) => !handled.has(id)).map((id) => ({ id, atMs: at })));
      }
    } finally {
      clearInterval(renew);
    }
  }

  /** One publish of one event on one relay, as its policy requires: the report, and when to send again if not final. */
  private async attempt(url: string, id: string, event: SignedEvent, existing: RelayReportRecord | undefined): Promise<Attempt> {
    // a report not final carries the attempts spent so far (a reopened relay's: 0)
    const spent = existing && !existing.final ? (existing.attempts ?? 0) : 0;
    const attempt = spent + 1;
    const outcome = await this.policy.publish(url, this.client(url), event);
    if ('final' in outcome) {
      // The relay's stated policy can never take this event (payment, restricted writes, too long, proof of work over the cap)
      this.hooks.onPublish?.(url, 'rejected:policy', outcome.final);
      return { id, report: { url, status: 'failed', message: outcome.final, at: outcome.at, attempts: attempt, final: true, prefix: 'policy', ...(outcome.pow ? { pow: outcome.pow } : {}) } };
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
      return { id, report: { url, status, message, at: result.at, attempts: attempt, final: true, ...copy } };
    }
    if (result.status === 'rejected' && result.prefix === 'rate-limited') {
      // The limit is on our key, not this event: pause the relay's whole outbox (every daemon's
      // drain of it) and send this event again afterwards, without spending an attempt.
      const pauseMs = this.pauseFor(url);
      return { id, report: { url, status: result.status, message: result.message, at: result.at, attempts: spent, final: false, prefix: result.prefix }, pauseMs, againAtMs: Date.now() + pauseMs };
    }
    if (result.retryable && attempt < this.opts.maxAttempts) {
      const againAtMs = Date.now() + backoffDelay(attempt, this.opts.backoffMs, this.opts.backoffMaxMs);
      return { id, report: { url, status: result.status, message: result.message, at: result.at, attempts: attempt, final: false, ...(result.prefix ? { prefix: result.prefix } : {}), ...copy }, againAtMs };
    }
    // Not retryable (invalid:, blocked:, ...) or out of attempts: final for this relay.
    const gaveUp = result.retryable ? `gave up after ${attempt} attempts: ` : '';
    return {
      id,
      report: { url, status: result.retryable ? 'failed' : 'rejected', message: `${gaveUp}${result.message}`, at: result.at, attempts: attempt, final: true, ...(result.prefix ? { prefix: result.prefix } : {}), ...copy },
    };
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

  /**
   * Moves the witnesses a group's reports changed: a report that leaves the event's status as
   * it was moves nothing (its detail stays in the event's relay reports, as for batches); the
   * subjects' own events that moved alike share one set-witness call; a batch event moves its
   * batch's subjects, as moveWitness does.
   */
  private async moveWitnesses(items: ReadonlyArray<{ id: string; report: RelayReportRecord; recorded: RecordedReports }>): Promise<void> {
    const groups = new Map<string, { status: WitnessStatus; progress: number; detail: string; relay: string; keys: string[] }>();
    for (const { id, report, recorded } of items) {
      if (recorded.gone) continue;
      const { reports, previous } = recorded;
      const without = reports.filter((r) => r.url !== report.url);
      const before = nostrStatusOf(previous ? [...without, previous] : without, this.opts.relays.length, this.opts.quorum);
      const after = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
      // a report that leaves the status as it was (a third relay accepting) stays on the event only
      if (before.status === after.status) continue;
      const mine = reports.find((r) => r.url === report.url) ?? report;
      if (!recorded.subject) {
        await this.moveWitness(id, reports, mine);
        continue;
      }
      const detail = after.reason ?? `${mine.url}: ${mine.status}${mine.message ? ` (${mine.message})` : ''}`;
      const group = `${after.status} ${after.progress} ${detail}`;
      const g = groups.get(group) ?? { status: after.status, progress: after.progress, detail, relay: mine.url, keys: [] };
      g.keys.push(recorded.subject);
      groups.set(group, g);
    }
    for (const g of groups.values()) {
      const changes = await this.store.subjects.setWitnessMany(g.keys, 'nostr', g.status, g.progress, g.detail, undefined, g.relay);
      changes.forEach((c, i) => {
        if (c.changed) this.hooks.onWitnessChange?.(g.keys[i]!, g.status, c.createdMs);
      });
    }
  }

  /** Moves the witness of every subject the event carries to what its relays' reports say. */
  private async moveWitness(eventId: string, reports: readonly RelayReportRecord[], report: RelayReportRecord, unchanged = false): Promise<void> {
    const { status, progress, reason } = nostrStatusOf(reports, this.opts.relays.length, this.opts.quorum);
    const owner = await this.store.events.eventOwner(eventId);
    if (unchanged && !owner.subject) return;
    const keys = owner.subject ? [owner.subject] : owner.batch ? await this.store.batches.batchKeys('nostr', owner.batch) : [];
    const detail = reason ?? `${report.url}: ${report.status}${report.message ? ` (${report.message})` : ''}`;
    const changes = await this.store.subjects.setWitnessMany(keys, 'nostr', status, progress, detail, owner.subject ? undefined : (owner.batch ?? undefined), report.url);
    changes.forEach((c, i) => {
      if (c.changed) this.hooks.onWitnessChange?.(keys[i]!, status, c.createdMs);
    });
  }

  /** Every queue this witness works from (for queue depth): the batch queue (the relays' outboxes are not queues). */
  get allQueues(): Queue[] {
    return [this.batchQueue];
  }

  /** Stops taking groups and jobs; publishes in flight finish first (or their events come back when their lease ends). */
  async close(): Promise<void> {
    this.stopped = true;
    this.policy.stop();
    for (const d of this.drains.values()) d.wake();
    await Promise.all([...this.drains.values()].map((d) => d.done));
    await Promise.all(this.workers.map((w) => w.close()));
    await this.batchQueue.close();
    for (const c of this.clients.values()) c.close();
  }
}


