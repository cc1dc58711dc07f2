/**
 * A Redis Cluster node that does not serve the key prefix's slot answers every command on
 * our keys with `MOVED <slot> <host:port>` (or `ASK`). Given as redis.url, such a node is
 * spoken to as one Redis, which would loop on those answers for ever without accepting
 * anything: the daemon checks at start (and `/readyz` on every probe) and says in one line
 * to name the cluster in redis.cluster instead, where the cluster client follows MOVED.
 */
import type { RedisClient } from './connection.js';

export interface ClusterRedirect {
  kind: 'MOVED' | 'ASK';
  slot: number;
  /** The node that serves the slot, as Redis named it (host:port). */
  target: string;
}

/** The redirect a Redis error carries, or null. */
export function clusterRedirect(err: unknown): ClusterRedirect | null {
  if (!(err instanceof Error)) return null;
  const m = /^(MOVED|ASK) (\d{1,5}) (\S{1,300})/.exec(err.message);
  return m ? { kind: m[1] as 'MOVED' | 'ASK', slot: Number(m[2]), target: m[3]! } : null;
}

/** One line for people: what the address is and what to do. */
export function describeClusterRedirect(r: ClusterRedirect, hashTag: string, where = 'the configured Redis'): string {
  return (
    `${where} is a Redis Cluster node that does not serve slot ${r.slot} of the key prefix ${hashTag} (it answered ${r.kind} to ${r.target}); ` +
    'for a Redis Cluster set redis.cluster (AER1_REDIS_CLUSTER) to its nodes instead of redis.url (REDIS_URL), which is for one standalone Redis or primary'
  );
}

/**
 * Asks for one of our keys (a read, so nothing is written): null when this Redis serves the
 * prefix's slot (a standalone Redis always does; a cluster client follows redirects), else the redirect it answered.
 */
export async function checkSlotServed(redis: RedisClient, key: string): Promise<ClusterRedirect | null> {
  try {
    await redis.exists(key);
    return null;
  } catch (err) {
    const r = clusterRedirect(err);
    if (r) return r;
    throw err;
  }
}
