/**
 * Which shard a subject belongs to, when the state is spread over `shards` hash tags
 * (`{prefix:0}` … `{prefix:K-1}`, see StateKeys.forShard): the first 4 bytes of
 * SHA-256 of the subject key's UTF-8 bytes, read as a big-endian unsigned 32-bit integer,
 * modulo K. With one shard every subject is in shard 0. The function is part of the
 * contract with issuers (docs/architecture.md, "Scale-out"): Python computes the same as
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
