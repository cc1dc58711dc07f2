/**
 * AnchorStatusReader: what an issuer or auditor reads of the daemon's state, read-only and
 * straight from its Redis, as the HTTP API shows it: a subject's detail (`GET
 * /v1/anchors/{key}`), its proof (`…/proof`), a list page (`GET /v1/anchors`), the counts of
 * `GET /v1/stats`, and what a producer checks before queueing (enqueueAnchor takes it). The
 * state's keys and layout stay the daemon's: nothing here writes or names them.
 */
import type { RedisClient as Redis } from '../adapters/redis/connection.js';
import { groupByShard } from '../core/shard/shard.js';
import { ShardedStore } from '../adapters/state/sharded-store.js';
import { WITNESS_STATUSES, type AnchorProof } from '../core/proof/format.js';
import { WITNESSES, type WitnessName } from '../adapters/state/keys.js';
import { ProofExporter, type RetiredAnchor } from '../adapters/proof/export.js';
import { retiredLogIndex } from '../adapters/proof/retired.js';
import { LogKeys } from '../adapters/log/log-sequencer.js';
import { shardLogDir } from '../adapters/config/config.js';
import { subjectDetail, summarize, type AnchorDetail, type AnchorSummary } from '../adapters/state/subject-view.js';
import type { IntakeState, KnownSubjects } from '../adapters/state/subjects.js';
import type { SubjectStatus } from '../adapters/state/subject-hash.js';

export type { AnchorDetail, AnchorSummary, IntakeState, RetiredAnchor, SubjectStatus, WitnessName };

export interface StatusReaderOptions {
  /** The daemon's `redis.prefix` (default `aer1`). */
  prefix?: string;
  /** The daemon's `redis.shards` (default 1). */
  shards?: number;
  /**
   * The relays and calendars the daemon is configured with: a subject not sent anywhere yet
   * lists them as what it waits for, as the daemon's own view does (default: none).
   */
  relays?: readonly string[];
  calendars?: readonly string[];
  /**
   * The daemon's anchor log folder (its `log.dir`, with `log.enabled`): a subject retired
   * lean (docs/reliability.md, Retention) is read back from it, and proofs carry the log's
   * part. Without it, reading such a subject throws an error naming this option.
   */
  logDir?: string;
}

export interface StatusListQuery {
  /** An overall status, or with `witness` that witness's status. */
  status?: SubjectStatus | undefined;
  witness?: WitnessName | undefined;
  /** `next` of the previous page. */
  cursor?: string | undefined;
  /** 1 to 1000. */
  limit?: number | undefined;
}

export interface StatusCounts {
  subjects: { total: number; byStatus: Record<string, number> };
  witnesses: Record<string, Record<string, number>>;
}

export class AnchorStatusReader implements KnownSubjects {
  private readonly state: ShardedStore;
  private readonly sources: { relays: readonly string[]; calendars: readonly string[] };
  /** Shard i's proof exporter at index i. */
  private readonly exporters: ProofExporter[];
  private readonly logDir: string | null;

  constructor(redis: Redis, opts: StatusReaderOptions = {}) {
    const shards = opts.shards ?? 1;
    if (!Number.isInteger(shards) || shards < 1) throw new RangeError(`shards must be a positive integer, got ${String(shards)}`);
    this.state = ShardedStore.open(redis, opts.prefix ?? 'aer1', shards);
    this.sources = { relays: opts.relays ?? [], calendars: opts.calendars ?? [] };
    const logDir = (this.logDir = opts.logDir ?? null);
    const files = { redis: { prefix: opts.prefix ?? 'aer1', shards }, log: { dir: logDir, keyFile: null } };
    this.exporters = this.state.shards.map((store, i) => new ProofExporter(store, this.sources, logDir === null ? null : { dir: shardLogDir(files, i) }));
  }

  /** The BullMQ prefix of the (one shard's) intake queue: `new Queue('aer1-anchor', { prefix })`. */
  get queuePrefix(): string {
    if (this.state.count !== 1) throw new RangeError(`${this.state.count} shards have a queue each: use shardTargets and enqueueAnchorRouted`);
    return this.state.shards[0]!.keys.bullPrefix;
  }

  /**
   * A subject as `GET /v1/anchors/{key}` shows it (its witnesses down to every relay and
   * calendar, its history; retired lean: the summary of its proof, `retired: 'log'` and its
   * log index), or null.
   */
  async get(key: string): Promise<AnchorDetail | RetiredAnchor | null> {
    const detail = await subjectDetail(this.state.of(key), { nostr: { enabled: true, relays: this.sources.relays }, ots: { enabled: true, calendars: this.sources.calendars } }, key);
    return detail ?? (await this.retired(key));
  }

  /** The subject's proof as `GET /v1/anchors/{key}/proof` gives it (the anchor log's part with `logDir`), or null. */
  async proof(key: string): Promise<AnchorProof | null> {
    const proof = await this.exporterOf(key).export(key);
    if (proof === null) await this.retired(key); // a subject retired lean and no logDir: an error naming it
    return proof;
  }

  /** A subject retired lean, from the log folder; throws naming `logDir` when it is one and no folder was given. */
  private async retired(key: string): Promise<RetiredAnchor | null> {
    if (this.logDir !== null) return this.exporterOf(key).retiredAnchor(key);
    const index = await retiredLogIndex(this.state.of(key).redis, new LogKeys(this.state.of(key).keys.base), key);
    if (index !== null) throw new RangeError(`subject ${key} is retired to the anchor log (entry ${index}): give logDir (the daemon's log.dir) to read it`);
    return null;
  }

  private exporterOf(key: string): ProofExporter {
    return this.exporters[this.state.shards.indexOf(this.state.of(key))]!;
  }

  /** One page of `GET /v1/anchors`: newest first, `next` to go on from (null at the end). */
  async list(q: StatusListQuery = {}): Promise<{ items: AnchorSummary[]; next: string | null }> {
    const limit = q.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RangeError(`limit must be an integer from 1 to 1000, got ${String(limit)}`);
    if (q.witness !== undefined && !WITNESSES.includes(q.witness)) throw new RangeError(`witness must be one of ${WITNESSES.join(', ')}, got ${JSON.stringify(q.witness)}`);
    const page = await this.state.list({ status: q.status, witness: q.witness, cursor: q.cursor, limit });
    const records = await this.state.getRecords(page.keys, { envelopes: false });
    return { items: records.flatMap((r) => (r ? [summarize(r)] : [])), next: page.next };
  }

  /** Subjects per overall status and per witness status, as `GET /v1/stats` counts them. */
  async stats(witnesses: readonly WitnessName[] = WITNESSES): Promise<StatusCounts> {
    const [byStatus, byWitness] = await Promise.all([this.state.countByStatus(), this.state.countByWitness(witnesses)]);
    for (const w of witnesses) byWitness[w] ??= Object.fromEntries(WITNESS_STATUSES.map((s) => [s, 0]));
    return { subjects: { total: Object.values(byStatus).reduce((a, b) => a + b, 0), byStatus }, witnesses: byWitness };
  }

  /** What enqueueAnchor checks of each key before queueing it (each from its own shard). */
  async intakeStates(keys: readonly string[]): Promise<IntakeState[]> {
    const out: IntakeState[] = keys.map(() => ({ fingerprint: null, status: null, digest: null }));
    await Promise.all([...groupByShard(keys, this.state.count, (k) => k)].map(async ([s, idx]) => {
      const states = await this.state.shards[s]!.subjects.intakeStates(idx.map((i) => keys[i]!));
      idx.forEach((i, j) => (out[i] = states[j]!));
    }));
    return out;
  }
}
