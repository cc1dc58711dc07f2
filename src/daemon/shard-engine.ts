/**
 * One shard's engine (redis.shards, docs/architecture.md "Shards"): the state store under the
 * shard's hash tag, its intake queue, batchers, witnesses, reconciler and retention. The
 * daemon builds one per shard; with one shard it is what the daemon always ran, under
 * `{prefix}`. Batches never span shards: each shard cuts, publishes and submits its own.
 */
import { Queue, type Worker } from 'bullmq';
import type { Logger } from 'pino';
import { logTimeQuorums, nostrQuorum, retentionAfterMs, type Config } from '../adapters/config/config.js';
import { AnchorStore } from '../adapters/state/anchor-store.js';
import { STATE_SCHEMA } from '../adapters/state/schema.js';
import type { WitnessName } from '../adapters/state/keys.js';
import { Batcher, type CutSource } from '../adapters/batch/batcher.js';
import { IntakeProcessor, intakeWorkerOptions, startIntakeWorker, type BulkIntakeResult } from '../adapters/intake/intake.js';
import { NostrWitness } from '../adapters/nostr/nostr-witness.js';
import { autoBudget } from '../core/nostr/auto-mode.js';
import { OtsWitness } from '../adapters/ots/ots-witness.js';
import { noteLateEvents } from '../adapters/ots/event-ids.js';
import { Nip03Publisher } from '../adapters/nostr/nip03-publisher.js';
import { RelayUpkeep } from '../adapters/nostr/relay-upkeep.js';
import { headerSourceFromConfig } from '../adapters/bitcoin/index.js';
import type { SigningKey } from '../core/nostr/keys.js';
import type { PreparedSubject } from '../core/envelope/prepared.js';
import { ratePerShard } from '../core/shard/shard.js';
import type { RedisClient } from '../adapters/redis/connection.js';
import type { DaemonMetrics } from '../adapters/metrics/metrics.js';
import type { WitnessHealth } from '../adapters/health/witness-health.js';
import { Reconciler } from './reconciler.js';
import type { RefusalBackoff } from '../adapters/redis/refusal-backoff.js';
import type { ProofArchive } from '../adapters/archive/proof-archive.js';
import { ProofExporter } from '../adapters/proof/export.js';
import { configuredSources } from '../adapters/state/subject-view.js';
import { Retention, type RetentionDeps } from '../adapters/retention/retention.js';
import { WebhookHandover } from '../adapters/retention/handover.js';
import { hookId } from '../adapters/webhooks/delivery-log.js';
import { LogService } from '../adapters/log/log-service.js';
import { LogFolder } from '../adapters/log/log-folder.js';
import { LoggedStamps } from '../adapters/log/logged-stamps.js';
import { CheckpointCuts } from '../adapters/state/checkpoint-cuts.js';
import { CheckpointWitnesses } from '../adapters/time/checkpoint-witnesses.js';
import { TsaClient } from '../adapters/tsa/tsa-client.js';
import { WitnessClient } from '../adapters/witness/witness-client.js';
import type { LogSigner } from '../core/log/note.js';

/** Relay answers that say the relay has the event; any other outcome is a failed attempt. */
const RELAY_SUCCESS = new Set(['accepted', 'rejected:duplicate']);
/** Back-pressure, not a fault: the relay is up and asks us to slow down (Witness health `throttled`). */
const RELAY_THROTTLED = 'rejected:rate-limited';
/** Calendar answers: a submit taken or any answer to an upgrade poll; the rest are error codes. */
function calendarAnswered(result: string): boolean {
  return result === 'submitted' || result.startsWith('upgrade_');
}

export interface ShardEngineDeps {
  config: Config;
  /** The key prefix of this shard (shardPrefix(redis.prefix, i, K)). */
  prefix: string;
  /** BullMQ's shared connection and the state's auto-pipelined one (both the daemon's). */
  redis: RedisClient;
  storeRedis: RedisClient;
  /** The anchor log's connection (default: storeRedis). */
  logRedis?: RedisClient | null;
  log: Logger;
  signingKey: SigningKey | null;
  witnesses: readonly WitnessName[];
  metrics: DaemonMetrics;
  health: WitnessHealth;
  archive: ProofArchive | null;
  afterArchive?: RetentionDeps['afterArchive'];
  /** The daemon's backoff while Redis refuses writes, shared by every shard's workers. */
  refusals?: RefusalBackoff;
  /** The anchor log of this shard (log.enabled): its folder, origin and key; null when off. */
  anchorLog?: { dir: string; origin: string; signer: LogSigner } | null;
}

export class ShardEngine {
  readonly config: Config;
  readonly store: AnchorStore;
  readonly nostr: NostrWitness | null = null;
  readonly ots: OtsWitness | null = null;
  /** This shard's intake queue (`{prefix}` with one shard, `{prefix:i}` with more). */
  readonly intakeQueue: Queue;
  readonly reconciler: Reconciler;
  readonly retention: Retention | null;
  /** Relay upkeep (relayUpkeep.enabled with nostr on), null when off. */
  readonly upkeep: RelayUpkeep | null = null;
  /** The shard's anchor log publisher (log.enabled), null when off. */
  readonly anchorLog: LogService | null = null;
  private readonly loggedStamps: LoggedStamps | null = null;
  /** The shard's proofs, of subjects in Redis and (the anchor log on) retired lean. */
  private readonly exporter: ProofExporter;
  /** With the anchor log on: the witnesses' batches cut from its checkpoints. */
  readonly checkpointCuts: CheckpointCuts | null = null;
  /** The anchor log checkpoints' TSAs and witnesses (log.tsaUrls, log.witnesses), null when none. */
  readonly timeWitnesses: CheckpointWitnesses | null = null;
  private readonly redis: RedisClient;
  private readonly log: Logger;
  private readonly witnesses: readonly WitnessName[];
  private readonly metrics: DaemonMetrics;
  private readonly archive: ProofArchive | null;
  private readonly refusals: RefusalBackoff | undefined;
  private readonly batchers: Batcher[] = [];
  private intakeWorker: Worker | null = null;
  private processor: IntakeProcessor | null = null;

  constructor(deps: ShardEngineDeps) {
    const { config, signingKey } = deps;
    this.config = config;
    this.log = deps.log;
    this.redis = deps.redis;
    this.witnesses = deps.witnesses;
    this.metrics = deps.metrics;
    this.archive = deps.archive;
    this.refusals = deps.refusals;
    this.store = new AnchorStore(deps.storeRedis, deps.prefix);
    this.exporter = new ProofExporter(this.store, configuredSources(config), deps.anchorLog ?? null);
    if (deps.anchorLog) {
      const parts = this.wireAnchorLog(deps, deps.anchorLog);
      this.anchorLog = parts.service;
      this.checkpointCuts = parts.cuts;
      this.loggedStamps = parts.stamps;
      this.timeWitnesses = parts.time;
    }
    this.intakeQueue = new Queue(config.queue.name, { connection: this.redis, prefix: this.store.keys.bullPrefix });
    // NIP-03 rides on the envelope events: not in batch mode, and only with both witnesses on.
    const nip03On = config.nostr.enabled && config.ots.enabled && config.nostr.nip03 && config.nostr.mode !== 'batch';
    if (config.nostr.enabled) {
      if (!signingKey) throw new Error('nostr is enabled but no signing key was given');
      this.nostr = this.wireNostr(signingKey, deps.health, nip03On);
      this.batchers.push(this.nostrBatcher(this.nostr));
    }
    if (this.nostr && signingKey && config.relayUpkeep.enabled) {
      this.upkeep = new RelayUpkeep({
        ...this.passDeps(),
        key: signingKey,
        onChecked: (r) => this.metrics.relayUpkeep(r.url, { checked: r.checked, missing: r.missing, unknown: r.unknown }),
      });
    }
    const nip03 = this.nostr && signingKey && nip03On
      ? new Nip03Publisher(this.store, this.nostr, signingKey, this.log.child({ part: 'nip03' }), headerSourceFromConfig(config.ots), config.ots.network)
      : null;
    if (config.ots.enabled) {
      this.ots = this.wireOts(deps.health, nip03);
      const ots = this.ots;
      this.batchers.push(
        new Batcher('ots', this.store, { ...this.refusalsOpt(), maxSize: config.ots.batchMaxSize, windowMs: config.ots.batchWindowMs, handOver: (id) => ots.enqueueBatch(id), ...this.fromLog('ots') }, this.log),
      );
    }
    this.reconciler = this.wireReconciler();
    this.retention = this.wireRetention(deps.anchorLog ?? null, deps.afterArchive);
  }

  /** `{ refusals }` when the daemon shares a refusal backoff, for the parts' options. */
  private refusalsOpt(): { refusals?: RefusalBackoff } {
    return this.refusals ? { refusals: this.refusals } : {};
  }

  /** What the shard's periodic passes (reconciler, retention, relay upkeep) are built from. */
  private passDeps(): { config: Config; store: AnchorStore; connection: RedisClient; log: Logger; refusals?: RefusalBackoff } {
    return { config: this.config, store: this.store, connection: this.redis, log: this.log, ...this.refusalsOpt() };
  }

  /** With the anchor log on: a witness's batches are cut from the log's checkpoints. */
  private fromLog(w: WitnessName): { fromLog?: CutSource } {
    const cuts = this.checkpointCuts;
    return cuts ? { fromLog: { waiting: () => cuts.waiting(w), cut: (max) => cuts.cut(w, max), unsigned: () => cuts.unsigned() } } : {};
  }

  /** The anchor log's publisher, the checkpoint cuts, the logged stamps and the checkpoints' time witnesses. */
  private wireAnchorLog(deps: ShardEngineDeps, anchorLog: NonNullable<ShardEngineDeps['anchorLog']>): { service: LogService; cuts: CheckpointCuts; stamps: LoggedStamps; time: CheckpointWitnesses | null } {
    const { config, log } = deps;
    // more entries are on their way while the shard's intake has jobs waiting or running: the checkpoint waits for them (up to an interval)
    const busy = async (): Promise<boolean> => {
      const counts = await this.intakeQueue.getJobCounts('wait', 'active', 'prioritized');
      return (counts.wait ?? 0) + (counts.active ?? 0) + (counts.prioritized ?? 0) > 0;
    };
    const service = new LogService(deps.logRedis ?? deps.storeRedis, { ...anchorLog, intervalMs: config.log.checkpointIntervalMs, base: this.store.keys.base, busy }, log);
    // accept.lua sequences each subject it creates into the log, in the same script call
    this.store.subjects.logKeys = service.keys;
    // and the witnesses cut those subjects from the log's checkpoints (docs/log.md)
    const folder = new LogFolder(anchorLog.dir);
    const cuts = new CheckpointCuts(this.store, folder, service.keys);
    // a subject sent again after Redis lost its acceptance gets back the envelope it was logged with
    const stamps = new LoggedStamps(deps.logRedis ?? deps.storeRedis, service.keys, folder, async (keys) => (await this.store.subjects.intakeStates(keys)).map((s) => s.digest !== null));
    if (config.log.tsaUrls.length === 0 && config.log.witnesses.length === 0) return { service, cuts, stamps, time: null };
    const quorums = logTimeQuorums(config);
    const time = new CheckpointWitnesses({
      dir: anchorLog.dir,
      tsas: config.log.tsaUrls.map((url) => new TsaClient(url)),
      tsaQuorum: quorums.tsa,
      witnesses: config.log.witnesses.map((w) => new WitnessClient(w.url, w.key)),
      witnessQuorum: quorums.witness,
      intervalMs: config.log.timeWitnessIntervalMs,
      maxAttempts: config.log.timeWitnessMaxAttempts,
      isWriter: () => service.writing,
    }, deps.health, deps.metrics, log);
    service.onCheckpoint(async () => time.wake());
    return { service, cuts, stamps, time };
  }

  /** Each shard publishes on its own queues: the relay budget is split K ways. */
  private shardRate(): number {
    return ratePerShard(this.config.nostr.ratePerMinute, this.config.redis.shards);
  }

  private wireNostr(signingKey: SigningKey, health: WitnessHealth, nip03On: boolean): NostrWitness {
    const { config } = this;
    return new NostrWitness(
      {
        ...config.nostr,
        ratePerMinute: this.shardRate(),
        quorum: nostrQuorum(config),
        queueBase: config.queue.name,
        bullPrefix: this.store.keys.bullPrefix,
        connection: this.redis,
        stalledIntervalMs: config.queue.stalledIntervalMs,
        upkeep: config.relayUpkeep.enabled,
        ...this.refusalsOpt(),
      },
      this.store,
      signingKey,
      this.log,
      {
        onPublish: (relay, result, message) => {
          this.metrics.relayPublish(relay, result);
          if (RELAY_SUCCESS.has(result)) health.success('relay', relay);
          else if (result === RELAY_THROTTLED) health.throttled('relay', relay, message);
          else health.failure('relay', relay, `${result}: ${message}`);
        },
        onWitnessChange: (_key, status, createdMs) => this.metrics.witnessChange('nostr', status, createdMs),
        onModeDecision: (mode, subjects) => this.metrics.nostrModeDecision(mode, subjects),
        onRepublished: (relay, n) => this.metrics.relayUpkeep(relay, { republished: n }),
        ...(nip03On ? { onSubjectEvents: (linked: Array<{ key: string; eventId: string }>) => noteLateEvents(this.store, linked) } : {}),
      },
    );
  }

  /**
   * Auto and batch mode cut the inbox; in envelope mode it is empty unless the mode was
   * switched with subjects waiting, which this batcher then finishes (as envelope events).
   */
  private nostrBatcher(nostr: NostrWitness): Batcher {
    const { config } = this;
    const budget = autoBudget(this.shardRate(), config.nostr.autoHorizonMs);
    return new Batcher('nostr', this.store, {
      ...this.refusalsOpt(),
      maxSize: config.nostr.batchMaxSize,
      windowMs: config.nostr.batchWindowMs,
      handOver: (id) => nostr.enqueueBatch(id),
      // envelope mode signs each subject at intake: the log's checkpoints are not its cuts
      ...(config.nostr.mode !== 'envelope' ? this.fromLog('nostr') : {}),
      // Auto mode: subjects that would get their own events anyway are cut at once, so a
      // quiet issuer waits no window (the cut's batch job still decides, by the same rule).
      ...(config.nostr.mode === 'auto'
        ? {
            cutEarly: async (waiting: number) => {
              if (waiting > budget) return false;
              const { backlog, recent } = await nostr.load();
              return waiting + Math.max(backlog, recent) <= budget;
            },
          }
        : {}),
    }, this.log);
  }

  private wireOts(health: WitnessHealth, nip03: Nip03Publisher | null): OtsWitness {
    const { config } = this;
    return new OtsWitness(config.ots, { queueBase: config.queue.name, bullPrefix: this.store.keys.bullPrefix, connection: this.redis, stalledIntervalMs: config.queue.stalledIntervalMs, ...this.refusalsOpt() }, this.store, this.log, {
      onCalendarRequest: (calendar, result, message) => {
        this.metrics.calendarRequest(calendar, result);
        if (calendarAnswered(result)) health.success('calendar', calendar);
        else health.failure('calendar', calendar, message ?? result);
      },
      onWitnessChange: (_key, status, createdMs) => this.metrics.witnessChange('ots', status, createdMs),
    }, nip03 ? { nip03: (batchId) => nip03.publishBatch(batchId).then(() => undefined) } : {});
  }

  private wireReconciler(): Reconciler {
    const { config } = this;
    const cuts = this.checkpointCuts;
    return new Reconciler({
      ...this.passDeps(),
      nostr: this.nostr,
      ots: this.ots,
      ...(cuts ? { onTheirWay: (w: WitnessName, key: string) => (w === 'nostr' && config.nostr.mode === 'envelope' ? Promise.resolve(false) : cuts.ahead(w, key)) } : {}),
      onRepair: (kind, n) => this.metrics.reconcilerRepairs(kind, n),
    });
  }

  /** Retention when proofs are held elsewhere (archive.dir, webhooks) or rebuilt from the anchor log (lean) and retention.confirmedDays is set; null otherwise. */
  private wireRetention(anchorLog: ShardEngineDeps['anchorLog'] | null, afterArchive: ShardEngineDeps['afterArchive']): Retention | null {
    const { config } = this;
    const handover = config.webhooks.length > 0 ? new WebhookHandover(this.redis, this.store.keys.base, config.webhooks.map((h) => hookId(h.url))) : null;
    if (!(this.archive || handover || anchorLog) || !(retentionAfterMs(config) > 0)) return null;
    return new Retention({
      ...this.passDeps(),
      lean: anchorLog !== null,
      archive: this.archive,
      handover,
      exporter: this.exporter,
      ...(afterArchive ? { afterArchive } : {}),
      onRetired: (n) => this.metrics.retentionRetired(n),
    });
  }

  /** The intake processor on its own (the HTTP API uses it to answer conflicts synchronously). */
  intakeProcessor(): IntakeProcessor {
    if (this.processor) return this.processor;
    const nostr = this.nostr;
    const inboxes: WitnessName[] = [];
    // Auto mode decides per cut (docs/nostr.md), so its subjects wait in the inbox like batch mode's.
    if (this.config.nostr.enabled && this.config.nostr.mode !== 'envelope') inboxes.push('nostr');
    if (this.config.ots.enabled) inboxes.push('ots');
    const envelopeMode = nostr !== null && this.config.nostr.mode === 'envelope';
    this.processor = new IntakeProcessor(
      this.store,
      { maxJobBytes: this.config.limits.maxJobBytes, maxSteps: this.config.limits.maxSteps, maxEntries: this.config.limits.maxEntries, maxSubjectsPerJob: this.config.queue.maxSubjectsPerJob },
      {
        witnesses: this.witnesses,
        inboxes,
        ...(envelopeMode
          ? {
              signEnvelope: (s: PreparedSubject) => nostr.signEnvelope(s.envelopeCanonical, s.digest, s.envelope),
            }
          : {}),
        ...(this.archive
          ? {
              archived: async (key: string) => {
                const found = await this.archive!.read(key);
                return found ? { envelope: found.proof.envelope, digest: found.proof.digest } : null;
              },
            }
          : {}),
        ...(this.loggedStamps ? { logged: (subjects: readonly PreparedSubject[]) => this.loggedStamps!.find(subjects) } : {}),
        ...(this.anchorLog
          ? {
              retired: async (keys: readonly string[]) =>
                (await this.exporter.retiredMany(keys)).map((r) => (r ? { envelope: JSON.parse(r.record.envelopeCanonical!) as Record<string, unknown>, digest: r.record.digest!, index: r.index } : null)),
            }
          : {}),
        afterAccept: async ({ subjects, inboxLengths }) => {
          // new entries in the log's sequence: its next checkpoint waits for the burst to settle (LogService.schedule)
          if (subjects.length > 0) this.anchorLog?.arrived();
          if (envelopeMode) await nostr.ensurePublishingMany(subjects.flatMap((s) => (s.nostrEventId ? [s.nostrEventId] : [])));
          // the accept script said how long each inbox is: only a full one needs a pass now
          await Promise.all(this.batchers.map((b) => b.poke(inboxLengths[b.witness] ?? null)));
        },
      },
      this.log,
    );
    return this.processor;
  }

  /** Opens the shard's state layout: any other than STATE_SCHEMA is refused before anything is written. */
  async open(): Promise<void> {
    const opened = await this.store.openSchema({ write: true });
    if (opened.recorded) this.log.info({ layout: STATE_SCHEMA }, `state under ${this.store.keys.base} marked layout ${STATE_SCHEMA}`);
  }

  async start(): Promise<void> {
    // a new checkpoint is cut at once when a window has passed since the last cut (or fills a batch, or, in auto mode, is worth cutting)
    // the calendars' aggregation round is the longest wait after a checkpoint: OTS is cut first
    const cutOrder = [...this.batchers].sort((a, b) => Number(b.witness === 'ots') - Number(a.witness === 'ots'));
    this.anchorLog?.onCheckpoint(async () => {
      await Promise.all(cutOrder.map((b) => b.checkpointed()));
    });
    await this.anchorLog?.start();
    this.timeWitnesses?.start();
    this.nostr?.start();
    this.ots?.start();
    for (const b of this.batchers) b.start();
    this.intakeWorker = startIntakeWorker(intakeWorkerOptions(this.config.queue, this.store.keys.bullPrefix, this.redis, this.refusals), this.intakeProcessor(), this.log);
    await this.reconciler.start();
    await this.retention?.start();
    await this.upkeep?.start();
    countIntake(this.intakeWorker, this.metrics);
    await Promise.all([this.intakeWorker.waitUntilReady(), this.intakeQueue.waitUntilReady(), this.nostr?.waitUntilReady(), this.ots?.waitUntilReady()]);
  }

  get running(): boolean {
    return this.intakeWorker !== null && this.intakeWorker.isRunning();
  }

  /** The shard's intake and witness queues. */
  get queues(): Queue[] {
    return [this.intakeQueue, ...(this.nostr?.allQueues ?? []), ...(this.ots?.allQueues ?? [])];
  }

  /** Stops taking intake jobs (first, on every shard, before closeRest). */
  async closeIntake(): Promise<void> {
    await this.intakeWorker?.close();
  }

  /**
   * Lets in-flight work finish or go back to its queue. Every part is told to close even when
   * an earlier one failed or hangs on a frozen Redis: a worker never told would, once the stop
   * drops the connections, retry its next job without pause for ever. The periodic passes are
   * told at once, for the same reason. The first failure is thrown at the end.
   */
  async closeRest(): Promise<void> {
    const failures: unknown[] = [];
    const attempt = async (closing: Promise<unknown> | undefined): Promise<void> => {
      try {
        await closing;
      } catch (err) {
        failures.push(err);
      }
    };
    await Promise.all([attempt(this.reconciler.close()), attempt(this.retention?.close()), attempt(this.upkeep?.close())]);
    for (const b of this.batchers) await attempt(b.stop());
    await attempt(this.nostr?.close());
    await attempt(this.ots?.close());
    await attempt(this.intakeQueue.close());
    await attempt(this.timeWitnesses?.stop());
    await attempt(this.anchorLog?.stop());
    if (failures.length > 0) throw failures[0];
  }
}

/** Counts an intake worker's jobs in the daemon's metrics (a bulk job by its subjects). */
export function countIntake(worker: Worker, metrics: DaemonMetrics): void {
  worker.on('completed', (_job, rv: unknown) => {
    const bulk = rv as BulkIntakeResult | undefined;
    if (bulk?.bulk !== true) return metrics.intake('accepted');
    metrics.intake('accepted', bulk.created + bulk.duplicate);
    metrics.intake('refused', bulk.conflict + bulk.refused);
  });
  worker.on('failed', () => metrics.intake('refused'));
}
