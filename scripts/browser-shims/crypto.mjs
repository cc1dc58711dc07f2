// node:crypto for the browser bundle of the verifier (scripts/build-verify-bundle.mjs):
// createHash over @noble/hashes for the digests the verify code uses, returning Buffers.
import { sha256 } from '@noble/hashes/sha2.js';
import { ripemd160, sha1 } from '@noble/hashes/legacy.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { Buffer } from 'buffer';

const HASHES = { sha256, sha1, ripemd160, keccak256: keccak_256 };

const bytes = (data) => (typeof data === 'string' ? new TextEncoder().encode(data) : data);

export function createHash(name) {
  const fn = HASHES[String(name).toLowerCase()];
  if (!fn) throw new Error(`hash ${name} is not available in the browser bundle`);
  const h = fn.create();
  const hash = {
    update(data) {
      h.update(bytes(data));
      return hash;
    },
    digest(encoding) {
      const out = Buffer.from(h.digest());
      return encoding ? out.toString(encoding) : out;
    },
  };
  return hash;
}

export default { createHash, hash: undefined };

// no one-shot `crypto.hash` here: the verify code falls back to createHash
export const hash = undefined;

// Ed25519 for the anchor log's signed checkpoints (src/core/log/note.ts): public keys arrive
// as RFC 8410 SPKI DER (a 12-byte prefix and the 32-byte key); only verifying is offered.
import { ed25519 } from '@noble/curves/ed25519';

const SPKI_ED25519_PREFIX = 12;

export function createPublicKey(input) {
  const der = input && input.key;
  if (!der || der.length !== SPKI_ED25519_PREFIX + 32) throw new Error('only raw Ed25519 public keys are available in the browser bundle');
  return { ed25519: Uint8Array.from(der.subarray(SPKI_ED25519_PREFIX)) };
}

export function verify(algorithm, message, key, signature) {
  if (algorithm !== null && algorithm !== undefined) throw new Error(`verify ${algorithm} is not available in the browser bundle`);
  try {
    return ed25519.verify(signature, message, key.ed25519, { zip215: false });
  } catch {
    return false;
  }
}

const signingUnavailable = () => {
  throw new Error('signing keys are not available in the browser bundle');
};
export const createPrivateKey = signingUnavailable;
export const generateKeyPairSync = signingUnavailable;
export const sign = signingUnavailable;
