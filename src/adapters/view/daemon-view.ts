/**
 * What the HTTP surfaces and the webhooks need of the daemon. `Daemon` fits it as it is;
 * naming the slice keeps these adapters from reaching into the rest.
 */
import type { Queue } from 'bullmq';
import type { RedisClient as Redis } from '../redis/connection.js';
import type { Config } from '../config/config.js';
import type { DaemonMetrics } from '../metrics/metrics.js';
import type { WitnessHealth } from '../health/witness-health.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { WitnessName } from '../state/keys.js';
import type { ShardedStore } from '../state/sharded-store.js';
import type { ShardTarget } from '../queue/routed-producer.js';
import type { RefusalBackoff } from '../redis/refusal-backoff.js';

/** One shard's anchor log: its folder, origin, verifier key and Redis keys' base. */
export interface AnchorLogInfo {
  readonly dir: string;
  readonly origin: string;
  readonly verifierKey: string;
}

export interface DaemonView {
  readonly config: Config;
  readonly redis: Redis;
  /** Shard 0's store (with one shard, the whole state). */
  readonly store: AnchorStore;
  /** Every shard's state read as one (redis.shards). */
  readonly state: ShardedStore;
  /** Shard i's intake queue and store at index i: where POST /v1/anchors puts each subject. */
  readonly intakeTargets: readonly ShardTarget[];
  readonly metrics: DaemonMetrics;
  readonly health: WitnessHealth;
  readonly witnesses: readonly WitnessName[];
  /** The Nostr signing key's x-only public key, for `GET /v1/info` (absent or null: not known here). */
  readonly signerPubkey?: string | null;
  readonly intakeQueue: Queue;
  /** The daemon's shared backoff while Redis refuses writes (absent: none; each worker logs its own errors). */
  readonly refusals?: RefusalBackoff;
  /** The intake and witness queues (the HTTP server counts their jobs on its own connection). */
  readonly queues: readonly Queue[];
  readonly running: boolean;
  /** Each shard's anchor log (log.enabled), shard i at index i; empty when the log is off. */
  readonly anchorLogs?: readonly AnchorLogInfo[];
  queueCounts(): Promise<{ waiting: number; active: number; delayed: number; failed: number }>;
}
