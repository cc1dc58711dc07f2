/**
 * One aggregation round of the calendar, byte for byte as opentimestamps-server builds
 * it (otsserver/calendar.py `Aggregator` and `Calendar.submit`): every digest gets a
 * 16-byte nonce and sha256, the nonced digests form one `make_merkle_tree`, and the tip
 * becomes the commitment `time(4, BE) || tip || mac(8)` that carries a pending
 * attestation naming the calendar.
 */
import { randomBytes } from 'node:crypto';
import { sha256 } from '../../core/aer1/hash.js';
import { otsMerkleTree } from './merkle-paths.js';
import { append, opsBytes, pendingAttestationBytes, prepend, SHA256 } from './ots-ops.js';

export interface RoundResult {
  /** The 44-byte message at the pending node: what `GET /timestamp/<hex>` asks about. */
  commitment: Buffer;
  /** responses[i] is the serialized timestamp starting at digests[i]. */
  responses: Buffer[];
}

/**
 * otsserver `derive_key_for_idx(key, idx, bits=32)`: a binary tree of keys, so the key
 * of one second can be revealed without revealing the others.
 */
export function deriveKeyForIdx(key: Buffer, idx: number, bits = 32): Buffer {
  let k = key;
  for (let b = bits; b > 0; b--) {
    const bit = Math.floor(idx / 2 ** (b - 1)) % 2;
    k = sha256(Buffer.concat([k, Buffer.from([bit ? 0xff : 0x00])]));
  }
  return k;
}

/** The 8-byte MAC the real server appends: sha256(time || tip || key_for(time))[0:8]. */
export function commitmentMac(hmacKey: Buffer, time: number, timeAndTip: Buffer): Buffer {
  return sha256(Buffer.concat([timeAndTip, deriveKeyForIdx(hmacKey, time)])).subarray(0, 8);
}

export function buildRound(
  digests: readonly Buffer[],
  opts: { time: number; hmacKey: Buffer; uri: string; nonce?: (i: number) => Buffer },
): RoundResult {
  const nonces = digests.map((_, i) => opts.nonce?.(i) ?? randomBytes(16));
  const leaves = digests.map((d, i) => sha256(Buffer.concat([d, nonces[i]!])));
  const tree = otsMerkleTree(leaves);
  const time = Buffer.alloc(4);
  time.writeUInt32BE(opts.time >>> 0);
  const timeAndTip = Buffer.concat([time, tree.tip]);
  const mac = commitmentMac(opts.hmacKey, opts.time, timeAndTip);
  const commitment = Buffer.concat([timeAndTip, mac]);
  const tail = Buffer.concat([opsBytes([prepend(time), append(mac)]), pendingAttestationBytes(opts.uri)]);
  const responses = digests.map((_, i) =>
    Buffer.concat([opsBytes([append(nonces[i]!), SHA256, ...tree.paths[i]!]), tail]),
  );
  return { commitment, responses };
}
