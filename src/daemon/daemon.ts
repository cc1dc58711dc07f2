/**
 * The daemon: wires config, Redis, state, intake, batchers and witnesses together, and
 * stops them in order. Usable in-process (tests, the demo) and from `aer1-anchord`.
 */
import { Queue, type Worker } from 'bullmq';
import type { Logger } from 'pino';
import { enabledWitnesses, nostrQuorum, retentionAfterMs, type Config } from '../adapters/config/config.js';
import { AnchorStore, STATE_SCHEMA } from '../adapters/state/anchor-store.js';
import type { WitnessName } from '../adapters/state/keys.js';
import { Batcher } from '../adapters/batch/batcher.js';
import { IntakeProcessor, startIntakeWorker, type BulkIntakeResult } from '../adapters/queue/intake.js';
import { queueDepth, type QueueDepth } from '../adapters/queue/depth.js';
import { NostrWitness } from '../adapters/nostr/nostr-witness.js';
import { autoBudget } from '../core/nostr/auto-mode.js';
import { OtsWitness } from '../adapters/ots/ots-witness.js';
import { Nip03Publisher } from '../adapters/nostr/nip03-publisher.js';
import { headerSourceFromConfig } from '../adapters/bitcoin/index.js';
import { serializeEvent } from '../core/nostr/events.js';
import type { SigningKey } from '../core/nostr/keys.js';
import { connectRedis, describeClient, type RedisClient, type RedisTarget } from '../adapters/redis/connection.js';
import { checkSlotServed, describeClusterRedirect } from '../adapters/redis/cluster-redirect.js';
import { UsageError } from '../core/errors/errors.js';
import { DaemonMetrics } from '../adapters/metrics/metrics.js';
import { WitnessHealth } from '../adapters/health/witness-health.js';
import { probeWitnesses, type ProbeOutcome } from '../adapters/health/witness-probe.js';
import { Reconciler } from './reconciler.js';
import { ProofArchive } from '../adapters/archive/proof-archive.js';
import { ProofExporter } from '../adapters/proof/export.js';
import { Retention, type RetentionDeps } from '../adapters/retention/retention.js';
import { WebhookHandover } from '../adapters/retention/handover.js';
import { hookId } from '../adapters/webhooks/delivery-log.js';

/** Relay answers that say the relay has the event; any other outcome is a failed attempt. */
const RELAY_SUCCESS = new Set(['accepted', 'rejected:duplicate']);
/** Calendar answers: a submit taken or any answer to an upgrade poll; the rest are error codes. */
function calendarAnswered(result: string): boolean {
  return result === 'submitted' || result.startsWith('upgrade_');
}

export interface DaemonDeps {
  config: Config;
  /** One Redis (its URL) or a Redis Cluster (`{ cluster: [startup node URLs] }`, redis.cluster). */
  redisUrl: RedisTarget;
  log: Logger;
  signingKey: SigningKey | null;
  /** Retention's crash-injection point (tests): after a proof is archived, before its subject is removed. */
  afterArchive?: RetentionDeps['afterArchive'];
}

export class Daemon {
  readonly config: Config;
  /** The connection BullMQ's queues share (workers open their own). */
  readonly redis: RedisClient;
  /** The state store's connection (auto-pipelined). */
  readonly storeRedis: RedisClient;
  readonly store: AnchorStore;
  readonly metrics: DaemonMetrics;
  /** What this process saw of each relay and calendar (in-process; each daemon its own). */
  readonly health: WitnessHealth;
  readonly witnesses: readonly WitnessName[];
  /** The x-only public key the Nostr witness signs with (null when Nostr is off). */
  readonly signerPubkey: string | null;
  readonly nostr: NostrWitness | null = null;
  readonly ots: OtsWitness | null = null;
  readonly intakeQueue: Queue;
  private readonly log: Logger;
  private readonly batchers: Batcher[] = [];
  private intakeWorker: Worker | null = null;
  readonly reconciler: Reconciler;
  /** The proof archive (archive.dir), null when none is configured. */
  readonly archive: ProofArchive | null;
  /** Retires old confirmed subjects to the archive; null when retention is off. */
  readonly retention: Retention | null;
  private stopping: Promise<void> | null = null;

  constructor(deps: DaemonDeps) {
    const { config, log } = deps;
    this.config = config;
    this.log = log;
    this.redis = connectRedis(deps.redisUrl);
    this.redis.on('error', (err) => log.warn({ err }, 'redis connection error'));
    this.storeRedis = connectRedis(deps.redisUrl, { autoPipelining: true });
    this.storeRedis.on('error', (err) => log.warn({ err }, 'redis connection error (state)'));
    this.store = new AnchorStore(this.storeRedis, config.redis.prefix);
    this.witnesses = enabledWitnesses(config);
    this.signerPubkey = config.nostr.enabled ? (deps.signingKey?.publicKey ?? null) : null;
    this.metrics = new DaemonMetrics();
    this.health = new WitnessHealth(log);
    this.metrics.attachHealth(() => this.health.snapshot());
    if (config.nostr.enabled) for (const url of config.nostr.relays) this.health.register('relay', url);
    if (config.ots.enabled) for (const url of config.ots.calendars) this.health.register('calendar', url);
    const bullPrefix = this.store.keys.bullPrefix;
    this.intakeQueue = new Queue(config.queue.name, { connection: this.redis, prefix: bullPrefix });

    if (config.nostr.enabled) {
      if (!deps.signingKey) throw new Error('nostr is enabled but no signing key was given');
      this.nostr = new NostrWitness(
        {
          ...config.nostr,
          quorum: nostrQuorum(config),
          queueBase: config.queue.name,
          bullPrefix,
          connection: this.redis,
          stalledIntervalMs: config.queue.stalledIntervalMs,
        },
        this.store,
        deps.signingKey,
        log,
        {
          onPublish: (relay, result, message) => {
            this.metrics.relayPublish(relay, result);
            if (RELAY_SUCCESS.has(result)) this.health.success('relay', relay);
            else this.health.failure('relay', relay, `${result}: ${message}`);
          },
          onWitnessChange: (_key, status, createdMs) => this.metrics.witnessChange('nostr', status, createdMs),
          onModeDecision: (mode, subjects) => this.metrics.nostrModeDecision(mode, subjects),
        },
      );
      // Auto and batch mode cut the inbox; in envelope mode it is empty unless the mode was
      // switched with subjects waiting, which this batcher then finishes (as envelope events).
      const nostr = this.nostr;
      const budget = autoBudget(config.nostr.ratePerMinute, config.nostr.autoHorizonMs);
      this.batchers.push(
        new Batcher('nostr', this.store, {
          maxSize: config.nostr.batchMaxSize,
          windowMs: config.nostr.batchWindowMs,
          handOver: (id) => nostr.enqueueBatch(id),
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
        }, log),
      );
    }
    // NIP-03 rides on the envelope events: not in batch mode, and only with both witnesses on.
    const nip03 = this.nostr && deps.signingKey && config.ots.enabled && config.nostr.nip03 && config.nostr.mode !== 'batch'
      ? new Nip03Publisher(this.store, this.nostr, deps.signingKey, log.child({ part: 'nip03' }), headerSourceFromConfig(config.ots), config.ots.network)
      : null;
    if (config.ots.enabled) {
      this.ots = new OtsWitness(config.ots, { queueBase: config.queue.name, bullPrefix, connection: this.redis, stalledIntervalMs: config.queue.stalledIntervalMs }, this.store, log, {
        onCalendarRequest: (calendar, result, message) => {
          this.metrics.calendarRequest(calendar, result);
          if (calendarAnswered(result)) this.health.success('calendar', calendar);
          else this.health.failure('calendar', calendar, message ?? result);
        },
        onWitnessChange: (_key, status, createdMs) => this.metrics.witnessChange('ots', status, createdMs),
      }, nip03 ? { nip03: (batchId) => nip03.publishBatch(batchId).then(() => undefined) } : {});
      const ots = this.ots;
      this.batchers.push(
        new Batcher('ots', this.store, { maxSize: config.ots.batchMaxSize, windowMs: config.ots.batchWindowMs, handOver: (id) => ots.enqueueBatch(id) }, log),
      );
    }
    this.reconciler = new Reconciler({
      config,
      store: this.store,
      nostr: this.nostr,
      ots: this.ots,
      connection: this.redis,
      log,
      onRepair: (kind, n) => this.metrics.reconcilerRepairs(kind, n),
    });
    this.archive = config.archive.dir !== null ? new ProofArchive(config.archive.dir) : null;
    const handover = config.webhooks.length > 0 ? new WebhookHandover(this.redis, this.store.keys.base, config.webhooks.map((h) => hookId(h.url))) : null;
    this.retention =
      (this.archive || handover) && retentionAfterMs(config) > 0
        ? new Retention({
            config,
            store: this.store,
            archive: this.archive,
            handover,
            exporter: new ProofExporter(this.store, { relays: config.nostr.enabled ? config.nostr.relays : [], calendars: config.ots.enabled ? config.ots.calendars : [] }),
            connection: this.redis,
            log,
            ...(deps.afterArchive ? { afterArchive: deps.afterArchive } : {}),
            onRetired: (n) => this.metrics.retentionRetired(n),
          })
        : null;
  }

  /** The intake processor on its own (the HTTP API uses it to answer conflicts synchronously). */
  intakeProcessor(): IntakeProcessor {
    const nostr = this.nostr;
    const inboxes: WitnessName[] = [];
    // Auto mode decides per cut (docs/nostr.md), so its subjects wait in the inbox like batch mode's.
    if (this.config.nostr.enabled && this.config.nostr.mode !== 'envelope') inboxes.push('nostr');
    if (this.config.ots.enabled) inboxes.push('ots');
    const envelopeMode = nostr !== null && this.config.nostr.mode === 'envelope';
    return new IntakeProcessor(
      this.store,
      { maxJobBytes: this.config.limits.maxJobBytes, maxSteps: this.config.limits.maxSteps, maxEntries: this.config.limits.maxEntries, maxSubjectsPerJob: this.config.queue.maxSubjectsPerJob },
      {
        witnesses: this.witnesses,
        inboxes,
        ...(envelopeMode
          ? {
              signEnvelope: (canonical: string, digestHex: string) => {
                const ev = nostr.signEnvelope(canonical, digestHex);
                return { id: ev.id, json: serializeEvent(ev) };
              },
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
        afterAccept: async ({ subjects, inboxLengths }) => {
          if (envelopeMode) await Promise.all(subjects.flatMap((s) => (s.nostrEventId ? [nostr.ensurePublishing(s.nostrEventId)] : [])));
          // the accept script said how long each inbox is: only a full one needs a pass now
          await Promise.all(this.batchers.map((b) => b.poke(inboxLengths[b.witness] ?? null)));
        },
      },
      this.log,
    );
  }

  async start(): Promise<void> {
    await Promise.all([this.redis.ping(), this.storeRedis.ping()]);
    // a Redis Cluster node given as redis.url that does not serve our slot answers MOVED to everything: refuse to start
    const redirect = await checkSlotServed(this.storeRedis, this.store.keys.probe);
    if (redirect) {
      await this.stop();
      throw new UsageError(describeClusterRedirect(redirect, this.store.keys.base, describeClient(this.storeRedis)), 'redis_cluster');
    }
    // the state's layout (STATE_SCHEMA): one this release does not know is refused before anything is written
    try {
      const opened = await this.store.openSchema({ write: true });
      if (opened.found === 'layout 1') this.log.info({ from: 1, to: STATE_SCHEMA }, `state of layout 1 moved to layout ${STATE_SCHEMA}: counts taken from the old indexes, idx:all and idx:w:<witness>:confirmed removed`);
      if (opened.found === 'layout 2' && opened.recorded) this.log.info({ from: 2, to: STATE_SCHEMA }, `state of layout 2 moved to layout ${STATE_SCHEMA}: batch transitions are recorded on the batch from now on; the subjects' history lists are read as they are`);
      if (opened.found === 'layout 3' && opened.recorded) this.log.info({ from: 3, to: STATE_SCHEMA }, `state of layout 3 moved to layout ${STATE_SCHEMA}: new subjects are recorded compactly from now on; the older ones are read as they are`);
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.nostr?.start();
    this.ots?.start();
    for (const b of this.batchers) b.start();
    this.intakeWorker = startIntakeWorker(
      {
        queueName: this.config.queue.name,
        bullPrefix: this.store.keys.bullPrefix,
        connection: this.redis,
        concurrency: this.config.queue.concurrency,
        stalledIntervalMs: this.config.queue.stalledIntervalMs,
      },
      this.intakeProcessor(),
      this.log,
    );
    await this.reconciler.start();
    await this.retention?.start();
    this.intakeWorker.on('completed', (_job, rv: unknown) => {
      const bulk = rv as BulkIntakeResult | undefined;
      if (bulk?.bulk !== true) return this.metrics.intake('accepted');
      this.metrics.intake('accepted', bulk.created + bulk.duplicate);
      this.metrics.intake('refused', bulk.conflict + bulk.refused);
    });
    this.intakeWorker.on('failed', () => this.metrics.intake('refused'));
    await Promise.all([this.intakeWorker.waitUntilReady(), this.intakeQueue.waitUntilReady(), this.nostr?.waitUntilReady(), this.ots?.waitUntilReady()]);
  }

  /** The start-up probe of every enabled relay and calendar (bounded); its outcomes feed `health`. */
  async probeWitnesses(timeoutMs?: number): Promise<ProbeOutcome[]> {
    const outcomes = await probeWitnesses(this.config.nostr.enabled ? this.config.nostr.relays : [], this.config.ots.enabled ? this.config.ots.calendars : [], timeoutMs);
    for (const o of outcomes) {
      if (o.answered) this.health.success(o.kind, o.url);
      else this.health.failure(o.kind, o.url, `start-up probe: ${o.message ?? 'no answer'}`);
    }
    return outcomes;
  }

  get running(): boolean {
    return this.intakeWorker !== null && this.intakeWorker.isRunning() && this.stopping === null;
  }

  /** The intake and witness queues. */
  get queues(): Queue[] {
    return [this.intakeQueue, ...(this.nostr?.allQueues ?? []), ...(this.ots?.allQueues ?? [])];
  }

  /** Queue depth across the intake and witness queues. */
  queueCounts(): Promise<QueueDepth> {
    return queueDepth(this.queues);
  }

  /** Stops taking jobs, lets in-flight work finish or go back to its queue, then disconnects. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.intakeWorker?.close();
      await this.reconciler.close();
      await this.retention?.close();
      for (const b of this.batchers) await b.stop();
      await this.nostr?.close();
      await this.ots?.close();
      await this.intakeQueue.close();
      await this.redis.quit().catch(() => undefined);
      await this.storeRedis.quit().catch(() => undefined);
    })();
    return this.stopping;
  }
}
