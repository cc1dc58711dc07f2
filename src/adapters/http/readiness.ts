/**
 * `/readyz`: red while Redis does not take writes, not only while it is unreachable. Each
 * check writes the probe key (SET with a short expiry) within `http.redisTimeoutMs`; a write
 * Redis refused, here or on `POST /v1/anchors`, keeps readiness red for as long as the 503
 * told clients to wait, so a Redis at its memory limit does not flap green between refusals.
 * A Redis Cluster node given as redis.url that does not serve the prefix's slot (MOVED) is
 * red, and says so; on redis.cluster the probe key goes to the node serving its slot.
 * With redis.shards K > 1 each shard's probe key is written (one per hash tag, so every
 * master holding a shard is checked).
 */
import { describeRefusal, redisRefusal, type RedisRefusal } from '../redis/redis-refusal.js';
import { clusterRedirect, describeClusterRedirect } from '../redis/cluster-redirect.js';
import { describeClient, type RedisClient } from '../redis/connection.js';

const PROBE_TTL_MS = 60_000;

export class Readiness {
  private readonly redis: RedisClient;
  private readonly probeKeys: readonly string[];
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private lastRefused: { refusal: RedisRefusal; atMs: number } | null = null;

  constructor(redis: RedisClient, probeKey: string | readonly string[], timeoutMs: number, now: () => number = Date.now) {
    this.redis = redis;
    this.probeKeys = typeof probeKey === 'string' ? [probeKey] : probeKey;
    this.timeoutMs = timeoutMs;
    this.now = now;
  }

  /** Redis refused a write (OOM, READONLY, ...): readiness stays red for the refusal's Retry-After. */
  noteRefusal(refusal: RedisRefusal): void {
    if (refusal.writesRefused) this.lastRefused = { refusal, atMs: this.now() };
  }

  /** Why Redis is not ready for writes, or null. */
  async redisProblem(): Promise<string | null> {
    for (const probeKey of this.probeKeys) {
      try {
        await this.redis.set(probeKey, String(this.now()), 'PX', PROBE_TTL_MS);
      } catch (err) {
        const redirect = clusterRedirect(err);
        if (redirect) return `redis: ${describeClusterRedirect(redirect, probeKey.slice(0, probeKey.indexOf('}') + 1), describeClient(this.redis))}`;
        const refusal = redisRefusal(err);
        if (!refusal) return `redis: ${(err as Error).message.slice(0, 200)}`;
        this.noteRefusal(refusal);
        return `redis: ${describeRefusal(refusal, this.timeoutMs)}`;
      }
    }
    const last = this.lastRefused;
    if (last === null) return null;
    const ageMs = this.now() - last.atMs;
    if (ageMs >= last.refusal.retryAfterSeconds * 1000) {
      this.lastRefused = null;
      return null;
    }
    return `redis: refused a write ${(ageMs / 1000).toFixed(1)} s ago: ${describeRefusal(last.refusal, this.timeoutMs)}`;
  }
}
