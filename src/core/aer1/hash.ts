import * as crypto from 'node:crypto';

type OneShot = (algorithm: string, data: crypto.BinaryLike, encoding: 'buffer') => Buffer;
// crypto.hash (Node >= 20.12) skips the Hash object: about twice as fast for the many small
// inputs of a Merkle tree. Older Node 20 falls back to createHash.
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

export function sha256(data: Uint8Array | string): Buffer {
  if (oneShot) return oneShot('sha256', data, 'buffer');
  return crypto.createHash('sha256').update(data).digest();
}

export function sha256Hex(data: Uint8Array | string): string {
  return sha256(data).toString('hex');
}

const pair = Buffer.allocUnsafe(64);

/** SHA-256(left || right) of two 32-byte digests, without allocating the concatenation. */
export function sha256Pair(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== 32 || right.length !== 32) throw new TypeError('sha256Pair takes two 32-byte digests');
  pair.set(left, 0);
  pair.set(right, 32);
  return sha256(pair);
}

const HEX64 = /^[0-9a-f]{64}$/;

/** True for 64 lowercase hex characters (a bare SHA-256 digest). */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

