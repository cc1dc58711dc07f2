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
