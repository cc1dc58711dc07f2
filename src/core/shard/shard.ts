/**
 * Which shard a subject belongs to, when the state is spread over `shards` hash tags
 * (`{prefix:0}` … `{prefix:K-1}`, see StateKeys.forShard): the first 4 bytes of
 * SHA-256 of the subject key's UTF-8 bytes, read as a big-endian unsigned 32-bit integer,
 * modulo K. With one shard every subject is in shard 0. The function is part of the
 * contract with issuers (docs/architecture.md, "Shards"): Python computes the same as
 *
 *     int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], 'big') % k
 */
import { sha256 } from '../aer1/hash.js';

/** Most shards a deployment may have (each one its own batches, queues and hash tag). */
export const MAX_SHARDS = 64;

export function shardOf(key: string, shards: number): number {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) throw new RangeError(`shards must be an integer 1–${MAX_SHARDS}, got ${shards}`);
  if (shards === 1) return 0;
  return sha256(Buffer.from(key, 'utf8')).readUInt32BE(0) % shards;
}

/**
 * The positions of `items` grouped by shard, each group in the order given: what a caller
 * splits a list by before handing each shard its part. `keyOf` names an item's subject key;
 * an item without one (null: it does not read as a subject) goes to shard 0, whose intake
 * refuses it in its place.
 */
export function groupByShard<T>(items: readonly T[], shards: number, keyOf: (item: T) => string | null): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  items.forEach((item, i) => {
    const key = keyOf(item);
    const shard = key === null ? 0 : shardOf(key, shards);
    const group = groups.get(shard);
    if (group) group.push(i);
    else groups.set(shard, [i]);
  });
  return groups;
}

/** The key prefix of shard `shard` of `shards` (before the hash tag's braces): `prefix` for one shard, `prefix:i` otherwise. */
export function shardPrefix(prefix: string, shard: number, shards: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard >= shards) throw new RangeError(`shard must be an integer 0–${shards - 1}, got ${shard}`);
  return shards === 1 ? prefix : `${prefix}:${shard}`;
}

/** Each shard's part of a per-relay event rate (nostr.ratePerMinute): split K ways, at least one event per minute per shard. */
export function ratePerShard(ratePerMinute: number, shards: number): number {
  return Math.max(1, Math.floor(ratePerMinute / shards));
}
