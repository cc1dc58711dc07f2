/**
 * The daemon: wires config, Redis, state, intake, batchers and witnesses together, and
 * stops them in order. Usable in-process (tests, the demo) and from `aer1-anchord`.
 * With redis.shards = K > 1 it runs one ShardEngine per shard (docs/architecture.md,
 * "Shards") and routes the usual intake queue's subjects to their shards.
 */
import { Queue, type Worker } from 'bullmq';
import type { Logger } from 'pino';
import { enabledWitnesses, logDir, shardLogDir, type Config } from '../adapters/config/config.js';
import { bindLogFolder } from '../adapters/log/log-binding.js';
import type { AnchorStore } from '../adapters/state/anchor-store.js';
import { ShardedStore } from '../adapters/state/sharded-store.js';
import { StateKeys, type WitnessName } from '../adapters/state/keys.js';
import { intakeWorkerOptions, startIntakeWorker, type IntakeHandler } from '../adapters/intake/intake.js';
import { ShardRouter } from '../adapters/intake/shard-router.js';
import { queueDepth, type QueueDepth } from '../adapters/queue/depth.js';
import type { ShardTarget } from '../adapters/queue/routed-producer.js';
import type { NostrWitness } from '../adapters/nostr/nostr-witness.js';
import type { OtsWitness } from '../adapters/ots/ots-witness.js';
import type { SigningKey } from '../core/nostr/keys.js';
import { shardPrefix } from '../core/shard/shard.js';
import { connectRedis, describeClient, dropConnection, type RedisClient, type RedisTarget } from '../adapters/redis/connection.js';
import { checkSlotServed, describeClusterRedirect } from '../adapters/redis/cluster-redirect.js';
import { UsageError } from '../core/errors/errors.js';
import { DaemonMetrics } from '../adapters/metrics/metrics.js';
import { WitnessHealth } from '../adapters/health/witness-health.js';
import { probeWitnesses, type ProbeOutcome } from '../adapters/health/witness-probe.js';
import { REPROBE_EVERY_MS, WitnessReprobe } from '../adapters/health/witness-reprobe.js';
import { REPAIR_KINDS, type Reconciler } from './reconciler.js';
import type { NostrEventMode } from '../core/nostr/auto-mode.js';
import { ProofArchive } from '../adapters/archive/proof-archive.js';
import type { Retention, RetentionDeps } from '../adapters/retention/retention.js';
import { ShardEngine, countIntake } from './shard-engine.js';
import { RefusalBackoff } from '../adapters/redis/refusal-backoff.js';

/** How long a stop waits for the workers to close before it drops the connections (below aer1-anchord's 20 s bound). */
export const STOP_GRACE_MS = 10_000;

/** True when `p` settles (either way) within `ms`. */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
import type { LogSigner } from '../core/log/note.js';

export interface DaemonDeps {
  config: Config;
  /** One Redis (its URL) or a Redis Cluster (`{ cluster: [startup node URLs] }`, redis.cluster). */
  redisUrl: RedisTarget;
  log: Logger;
  signingKey: SigningKey | null;
  /** Retention's crash-injection point (tests): after a proof is archived, before its subject is removed. */
  afterArchive?: RetentionDeps['afterArchive'];
  /** How often idle failing relays and calendars are probed again (default 60 s; tests shorten it). */
  witnessReprobeMs?: number;
  /** The anchor log's key (log.enabled; null or absent when off). */
  logSigner?: LogSigner | null;
}

/** Shard i's anchor log: with one shard the log's folder and origin themselves, with K `<dir>/<i>` and `<origin>/<i>`. */
export function shardLog(config: Config, signer: LogSigner, shard: number): { dir: string; origin: string; signer: LogSigner } {
  const origin = logOrigin(config, signer);
  return { dir: shardLogDir(config, shard), origin: config.redis.shards === 1 ? origin : `${origin}/${shard}`, signer };
}

/** The log's origin (each shard's is `<origin>/<i>` with K shards): log.origin, else the key's name. */
function logOrigin(config: Config, signer: LogSigner): string {
  return config.log.origin ?? signer.name;
}

export class Daemon {
  readonly config: Config;
  /** The connection BullMQ's queues share (workers open their own). */
  readonly redis: RedisClient;
  /** Shard 0's state store connection (auto-pipelined). */
  readonly storeRedis: RedisClient;
  /**
   * Each shard's state connection, auto-pipelined: one per shard, since an auto-pipeline of a
   * cluster client groups scripts by their first argument, not their keys, and must not mix
   * two shards' keys (ioredis refuses a pipeline over two masters).
   */
  private readonly storeRedises: RedisClient[];
  /** The anchor logs' own connection (log.enabled): a tick's few calls do not queue behind the intake's scripts on the state's. */
  private readonly logRedis: RedisClient | null;
  /** Shard i's engine at index i (one with redis.shards = 1). */
  readonly engines: readonly ShardEngine[];
  /** Every shard's state read as one (what the HTTP API, stats and metrics read). */
  readonly state: ShardedStore;
  readonly metrics: DaemonMetrics;
  /** What this process saw of each relay and calendar (in-process; each daemon its own). */
  readonly health: WitnessHealth;
  private readonly reprobe: WitnessReprobe;
  readonly witnesses: readonly WitnessName[];
  /** The x-only public key the Nostr witness signs with (null when Nostr is off). */
  readonly signerPubkey: string | null;
  /** The usual intake queue (`{prefix}`): shard 0's own with one shard; with more, routed to the shards. */
  readonly intakeQueue: Queue;
  private readonly log: Logger;
  /** With more than one shard: the worker on the usual intake queue that routes subjects to their shards. */
  private routerWorker: Worker | null = null;
  /** The proof archive (archive.dir), null when none is configured. */
  readonly archive: ProofArchive | null;
  private stopping: Promise<void> | null = null;
  /** The anchor log's key (log.enabled), null when the log is off. */
  private readonly logSigner: LogSigner | null;
  /** One backoff for every worker and loop while Redis refuses writes (a write probe on each shard's probe key ends it). */
  readonly refusals: RefusalBackoff;

  constructor(deps: DaemonDeps) {
    const { config, log } = deps;
    this.config = config;
    this.log = log;
    this.redis = connectRedis(deps.redisUrl);
    this.redis.on('error', (err) => log.warn({ err }, 'redis connection error'));
    const shards = config.redis.shards;
    this.storeRedises = Array.from({ length: shards }, () => {
      const c = connectRedis(deps.redisUrl, { autoPipelining: true });
      c.on('error', (err) => log.warn({ err }, 'redis connection error (state)'));
      return c;
    });
    this.storeRedis = this.storeRedises[0]!;
    this.logRedis = config.log.enabled ? connectRedis(deps.redisUrl) : null;
    this.logRedis?.on('error', (err) => log.warn({ err }, 'redis connection error (anchor log)'));
    this.witnesses = enabledWitnesses(config);
    this.signerPubkey = config.nostr.enabled ? (deps.signingKey?.publicKey ?? null) : null;
    if (config.nostr.enabled && !deps.signingKey) throw new Error('nostr is enabled but no signing key was given');
    if (config.log.enabled && !deps.logSigner) throw new Error('log is enabled but no log key was given');
    this.logSigner = config.log.enabled ? (deps.logSigner ?? null) : null;
    this.metrics = new DaemonMetrics();
    this.health = new WitnessHealth(log);
    this.reprobe = new WitnessReprobe(this.health, { everyMs: deps.witnessReprobeMs ?? REPROBE_EVERY_MS });
    this.metrics.attachHealth(() => this.health.snapshot());
    if (config.nostr.enabled) for (const url of config.nostr.relays) this.health.register('relay', url);
    if (config.ots.enabled) for (const url of config.ots.calendars) this.health.register('calendar', url);
    this.metrics.known({
      relays: config.nostr.enabled ? config.nostr.relays : [],
      upkeepRelays: config.nostr.enabled && config.relayUpkeep.enabled ? config.nostr.relays : [],
      calendars: config.ots.enabled ? config.ots.calendars : [],
      repairKinds: REPAIR_KINDS,
      nostrModes: config.nostr.enabled ? (['envelope', 'batch'] satisfies NostrEventMode[]) : [],
      tsas: config.log.enabled ? config.log.tsaUrls : [],
      logWitnesses: config.log.enabled ? config.log.witnesses.map((w) => w.url) : [],
    });
    this.archive = config.archive.dir !== null ? new ProofArchive(config.archive.dir) : null;
    this.refusals = new RefusalBackoff({
      log,
      probe: () => Promise.all(this.engines.map((e, i) => this.storeRedises[i]!.set(e.store.keys.probe, String(Date.now()), 'PX', 60_000))),
    });
    this.engines = Array.from({ length: shards }, (_, i) => new ShardEngine({
      config,
      prefix: shardPrefix(config.redis.prefix, i, shards),
      redis: this.redis,
      storeRedis: this.storeRedises[i]!,
      logRedis: this.logRedis,
      log: shards === 1 ? log : log.child({ shard: i }),
      signingKey: deps.signingKey,
      witnesses: this.witnesses,
      metrics: this.metrics,
      health: this.health,
      archive: this.archive,
      refusals: this.refusals,
      ...(deps.afterArchive ? { afterArchive: deps.afterArchive } : {}),
      anchorLog: config.log.enabled && deps.logSigner ? shardLog(config, deps.logSigner, i) : null,
    }));
    this.state = new ShardedStore(this.engines.map((e) => e.store));
    this.intakeQueue = shards === 1 ? this.engines[0]!.intakeQueue : new Queue(config.queue.name, { connection: this.redis, prefix: new StateKeys(config.redis.prefix).bullPrefix });
  }

  /** Each shard's anchor log (log.enabled), shard i at index i; empty when off. */
  get anchorLogs(): Array<{ dir: string; origin: string; verifierKey: string }> {
    return this.engines.flatMap((e) => (e.anchorLog ? [{ dir: e.anchorLog.options.dir, origin: e.anchorLog.options.origin, verifierKey: e.anchorLog.options.signer.verifierKey }] : []));
  }

  /** Shard i's intake queue and subjects at index i. */
  get intakeTargets(): ShardTarget[] {
    return this.engines.map((e) => ({ queue: e.intakeQueue, subjects: e.store.subjects }));
  }

  /** Shard 0's store: with one shard, the whole state (read every shard through `state`). */
  get store(): AnchorStore {
    return this.engines[0]!.store;
  }
  /** Shard 0's witnesses, reconciler and retention (with one shard, the daemon's). */
  get nostr(): NostrWitness | null {
    return this.engines[0]!.nostr;
  }
  get ots(): OtsWitness | null {
    return this.engines[0]!.ots;
  }
  get reconciler(): Reconciler {
    return this.engines[0]!.reconciler;
  }
  get retention(): Retention | null {
    return this.engines[0]!.retention;
  }

  /** Takes a job's data as the usual intake queue's worker does (with one shard: shard 0's processor; with more, routed by subject). */
  intakeProcessor(): IntakeHandler {
    if (this.engines.length === 1) return this.engines[0]!.intakeProcessor();
    const c = this.config;
    return new ShardRouter(this.engines.map((e) => e.intakeProcessor()), { maxJobBytes: c.limits.maxJobBytes, maxSteps: c.limits.maxSteps, maxEntries: c.limits.maxEntries, maxSubjectsPerJob: c.queue.maxSubjectsPerJob });
  }

  async start(): Promise<void> {
    await Promise.all([this.redis.ping(), ...this.storeRedises.map((c) => c.ping())]);
    // a Redis Cluster node given as redis.url that does not serve our slots answers MOVED to everything: refuse to start
    for (const e of this.engines) {
      const redirect = await checkSlotServed(this.storeRedis, e.store.keys.probe);
      if (redirect) {
        await this.stop();
        throw new UsageError(describeClusterRedirect(redirect, e.store.keys.base, describeClient(this.storeRedis)), 'redis_cluster');
      }
    }
    // the state's layout (STATE_SCHEMA), then its log's folder: any other is refused before anything is written
    try {
      for (const e of this.engines) await e.open();
      await this.bindLog();
    } catch (err) {
      await this.stop();
      throw err;
    }
    await Promise.all(this.engines.map((e) => e.start()));
    if (this.engines.length > 1) {
      this.routerWorker = startIntakeWorker(intakeWorkerOptions(this.config.queue, new StateKeys(this.config.redis.prefix).bullPrefix, this.redis, this.refusals), this.intakeProcessor(), this.log);
      countIntake(this.routerWorker, this.metrics);
      await Promise.all([this.routerWorker.waitUntilReady(), this.intakeQueue.waitUntilReady()]);
    }
    this.reprobe.start();
  }

  /** The anchor log's folder and this state are one log's (log-binding.ts), or the start is refused. */
  private async bindLog(): Promise<void> {
    const signer = this.logSigner;
    if (!signer) return;
    const c = this.config;
    await bindLogFolder(this.redis, {
      dir: logDir(c),
      shardDirs: this.engines.map((_, i) => shardLogDir(c, i)),
      prefix: c.redis.prefix,
      base: new StateKeys(c.redis.prefix).base,
      origin: logOrigin(c, signer),
      vkey: signer.verifierKey,
    }, this.log);
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
    return this.stopping === null && this.engines.every((e) => e.running) && (this.engines.length === 1 || (this.routerWorker !== null && this.routerWorker.isRunning()));
  }

  /** The intake and witness queues of every shard (and the usual intake queue). */
  get queues(): Queue[] {
    return [...(this.engines.length > 1 ? [this.intakeQueue] : []), ...this.engines.flatMap((e) => e.queues)];
  }

  /** Queue depth across the intake and witness queues. */
  queueCounts(): Promise<QueueDepth> {
    return queueDepth(this.queues);
  }

  /**
   * Stops taking jobs, lets in-flight work finish or go back to its queue, then disconnects;
   * within STOP_GRACE_MS whatever Redis did before. Past it the connections are dropped: a job
   * still held goes back to its queue by the stalled check (queue.stalledIntervalMs).
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.refusals.close();
      const inOrder = (async () => {
        await this.reprobe.stop();
        await this.routerWorker?.close();
        for (const e of this.engines) await e.closeIntake();
        for (const e of this.engines) await e.closeRest();
        if (this.engines.length > 1) await this.intakeQueue.close();
        await this.redis.quit().catch(() => undefined);
        await Promise.all([...this.storeRedises, ...(this.logRedis ? [this.logRedis] : [])].map((c) => c.quit().catch(() => undefined)));
      })();
      if (await settlesWithin(inOrder, STOP_GRACE_MS)) return;
      this.log.warn({ graceMs: STOP_GRACE_MS }, `workers did not close within ${STOP_GRACE_MS} ms; dropping the Redis connections (jobs they held return to their queues)`);
      for (const c of [this.redis, ...this.storeRedises, ...(this.logRedis ? [this.logRedis] : [])]) dropConnection(c);
      await settlesWithin(inOrder, 1000);
    })();
    return this.stopping;
  }
}
