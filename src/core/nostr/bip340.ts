/**
 * BIP-340 Schnorr signatures over secp256k1 (what NIP-01 events carry), signing only, with
 * node:crypto: the point multiplication k·G is OpenSSL's (ECDH's public key of k, a
 * constant-time ladder), the tagged hashes SHA-256, the scalar arithmetic BigInt mod n.
 *
 * A key is prepared once (`bip340Key`: d negated when d·G has an odd y, and the x-only public
 * key), so a signature costs one multiplication, where nostr-tools' finalizeEvent derives the
 * public key again and @noble/curves' sign derives it a second time and then verifies (two
 * more multiplications, three quarters of its cost).
 *
 * No verification after signing. BIP-340 recommends one against faults in the signer (a
 * fault-injecting attacker reading the faulty signatures); ours run on the daemon's own
 * machine, which an attacker able to inject faults already holds. What the verification would
 * catch otherwise is a wrong implementation, and that is what the tests settle: byte for byte
 * the signatures of @noble/curves for the same auxiliary randomness, the BIP-340 test vectors,
 * and nostr-tools' verifyEvent (test/witness/nostr/bip340.test.ts). `SigningKey` also checks
 * each key once, when it is made: a probe signature verified by nostr-tools (a key whose
 * signatures relays would refuse never signs anything).
 */
// a namespace import, made use of only when signing: the verifier's browser bundle reaches this
// module (through keys.ts) with a node:crypto shim that has hashes only
import * as crypto from 'node:crypto';
import { sha256 } from '../aer1/hash.js';

/** The order of secp256k1's group. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** SHA-256(tag) || SHA-256(tag): the prefix of a BIP-340 tagged hash. */
function tagPrefix(tag: string): Buffer {
  const t = crypto.createHash('sha256').update(tag).digest();
  return Buffer.concat([t, t]);
}

const AUX = tagPrefix('BIP0340/aux');
const NONCE = tagPrefix('BIP0340/nonce');
const CHALLENGE = tagPrefix('BIP0340/challenge');

/** Room for the longest tagged-hash input: the 64-byte prefix and three 32-byte parts. */
const scratch = Buffer.alloc(64 + 3 * 32);

/** SHA-256(prefix || parts...), the parts copied into one buffer and hashed in one call (no Hash object per hash). */
function tagged(prefix: Buffer, ...parts: Uint8Array[]): Buffer {
  let at = prefix.copy(scratch, 0);
  for (const p of parts) {
    scratch.set(p, at);
    at += p.length;
  }
  return sha256(scratch.subarray(0, at));
}

function toBig(bytes: Uint8Array): bigint {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  return BigInt(`0x${b.toString('hex')}`);
}

function to32(x: bigint): Buffer {
  return Buffer.from(x.toString(16).padStart(64, '0'), 'hex');
}

/** One ECDH context, made at the first use and used synchronously: k·G as its public key (x and the parity of y). */
let ecdh: crypto.ECDH | null = null;

function timesG(k: bigint): { x: Buffer; oddY: boolean } {
  ecdh ??= crypto.createECDH('secp256k1');
  ecdh.setPrivateKey(to32(k));
  const point = ecdh.getPublicKey(null, 'compressed');
  return { x: point.subarray(1), oddY: point[0] === 3 };
}

/** A secret key prepared for signing: d with an even-y public point, and that point's x. */
export interface Bip340Key {
  readonly d: bigint;
  /** x-only public key, 32 bytes. */
  readonly px: Buffer;
}

/** Prepares a 32-byte secret; throws (without quoting it) when it is 0 or not below n. */
export function bip340Key(secret: Uint8Array): Bip340Key {
  if (secret.length !== 32) throw new RangeError('a secret key is 32 bytes');
  const d0 = toBig(secret);
  if (d0 <= 0n || d0 >= N) throw new RangeError('the secret key is 0 or not below the curve order');
  const P = timesG(d0);
  return { d: P.oddY ? N - d0 : d0, px: Buffer.from(P.x) };
}

/** The 64-byte BIP-340 signature of a 32-byte message (an event id), with fresh auxiliary randomness unless given. */
export function bip340Sign(message: Uint8Array, key: Bip340Key, aux: Uint8Array = crypto.randomBytes(32)): Buffer {
  if (message.length !== 32 || aux.length !== 32) throw new RangeError('BIP-340 signs 32 bytes with 32 bytes of auxiliary randomness');
  const t = to32(key.d ^ toBig(tagged(AUX, aux)));
  const k0 = toBig(tagged(NONCE, t, key.px, message)) % N;
  // probability 2^-256: BIP-340 says fail
  if (k0 === 0n) throw new RangeError('BIP-340 nonce is 0');
  const R = timesG(k0);
  const k = R.oddY ? N - k0 : k0;
  const e = toBig(tagged(CHALLENGE, R.x, key.px, message)) % N;
  return Buffer.concat([R.x, to32((k + e * key.d) % N)]);
}
