/**
 * The daemon's Nostr signing key: generated or parsed (hex or nsec), signing NIP-01
 * events; files and environment variables are src/adapters/nostr/key-file.ts. The secret never leaves `SigningKey` in
 * printable form: toString/toJSON/inspect all say `[signing key redacted]`, and no
 * error message quotes the key's text.
 */
import { inspect } from 'node:util';
import { serializeEvent, verifyEvent, generateSecretKey as nostrGenerateSecretKey } from 'nostr-tools/pure';
import type { EventTemplate } from 'nostr-tools/core';
import { decode as nip19Decode, npubEncode } from 'nostr-tools/nip19';
import { InputError } from '../errors/errors.js';
import { sha256 } from '../aer1/hash.js';
import { bip340Key, bip340Sign, type Bip340Key } from './bip340.js';

const REDACTED = '[signing key redacted]';
const HEX64_ANY_CASE = /^[0-9a-fA-F]{64}$/;

/** An event as signed by `SigningKey.sign`: NIP-01 fields only, in NIP-01 order. */
export interface SignedEvent {
  id: string;
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

let secretHex: (key: SigningKey) => string;

/** A BIP-340 secret key that refuses to be printed. */
export class SigningKey {
  readonly #secret: Uint8Array;
  /** The secret prepared for signing (bip340.ts): its public key derived once, not per event. */
  readonly #prepared: Bip340Key;
  /** x-only public key, 64 lowercase hex characters. */
  readonly publicKey: string;

  private constructor(secret: Uint8Array, prepared: Bip340Key) {
    this.#secret = secret;
    this.#prepared = prepared;
    this.publicKey = prepared.px.toString('hex');
  }

  /**
   * Takes a copy of 32 secret bytes; refuses zero or out-of-range scalars. The key signs a
   * probe event that nostr-tools verifies (independently of bip340.ts) before it is handed
   * out: the one verification a key's signatures get (see bip340.ts for why not per event).
   */
  static fromBytes(secret: Uint8Array, source = 'signing key'): SigningKey {
    if (!(secret instanceof Uint8Array) || secret.length !== 32) {
      throw new InputError('bad_signing_key', 'a secret key is 32 bytes', source);
    }
    const copy = Uint8Array.from(secret);
    let prepared: Bip340Key;
    try {
      prepared = bip340Key(copy);
    } catch {
      // say only that it is out of range: never describe the scalar
      throw new InputError('bad_signing_key', 'not a valid secp256k1 secret key (zero or not below the curve order)', source);
    }
    const key = new SigningKey(copy, prepared);
    if (!verifyEvent({ ...key.sign({ kind: 27235, created_at: 0, tags: [], content: 'aer1-anchor key check' }) })) {
      throw new InputError('bad_signing_key', 'its signatures do not verify (secp256k1 signing is broken on this machine)', source);
    }
    return key;
  }

  /**
   * Parses 64 hex characters (either case) or an `nsec1...` string, surrounding
   * whitespace ignored. `source` names where the text came from, for error messages.
   */
  static parse(text: string, source = 'signing key'): SigningKey {
    const trimmed = text.trim();
    if (trimmed === '') throw new InputError('bad_signing_key', 'is empty', source);
    if (HEX64_ANY_CASE.test(trimmed)) return SigningKey.fromBytes(Buffer.from(trimmed, 'hex'), source);
    if (trimmed.toLowerCase().startsWith('nsec1')) {
      let decoded: ReturnType<typeof nip19Decode>;
      try {
        decoded = nip19Decode(trimmed);
      } catch {
        // bech32 errors quote their input: never pass them on
        throw new InputError('bad_signing_key', 'is not a valid nsec (bech32 checksum or length wrong)', source);
      }
      if (decoded.type !== 'nsec') throw new InputError('bad_signing_key', 'is not an nsec', source);
      return SigningKey.fromBytes(decoded.data, source);
    }
    throw new InputError('bad_signing_key', 'is neither 64 hex characters nor an nsec1 string', source);
  }

  /** NIP-19 `npub1...` of the public key. */
  get npub(): string {
    return npubEncode(this.publicKey);
  }

  /**
   * Signs a template (not mutated) and returns the event with NIP-01 field order,
   * so `JSON.stringify` of it is what relays echo back.
   */
  sign(template: EventTemplate): SignedEvent {
    const unsigned = { kind: template.kind, created_at: template.created_at, tags: template.tags.map((t) => [...t]), content: template.content, pubkey: this.publicKey };
    // NIP-01's id: nostr-tools' serialization (which refuses a malformed template) hashed by
    // node:crypto, where nostr-tools' getEventHash hashes the same text in JavaScript
    const digest = sha256(serializeEvent(unsigned));
    const id = digest.toString('hex');
    const sig = bip340Sign(digest, this.#prepared).toString('hex');
    return { id, pubkey: this.publicKey, created_at: unsigned.created_at, kind: unsigned.kind, tags: unsigned.tags, content: unsigned.content, sig };
  }

  static {
    // the one way out for the secret's text, and it stays inside this module
    secretHex = (key) => Buffer.from(key.#secret).toString('hex');
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}

/** A fresh random key. */
export function generateSecretKey(): SigningKey {
  return SigningKey.fromBytes(nostrGenerateSecretKey());
}

/** x-only public key (hex) of a secret key. */
export function publicKeyOf(secret: SigningKey | Uint8Array): string {
  return secret instanceof SigningKey ? secret.publicKey : SigningKey.fromBytes(secret).publicKey;
}

/** NIP-19 npub of a 64-hex public key. */
export function npub(pubkeyHex: string): string {
  if (!/^[0-9a-f]{64}$/.test(pubkeyHex)) {
    throw new InputError('bad_pubkey', 'a public key is 64 lowercase hex characters', 'pubkey');
  }
  return npubEncode(pubkeyHex);
}

/** The text a key file holds (hex and a newline): for src/adapters/nostr/key-file.ts only. */
export function keyFileText(key: SigningKey): string {
  return `${secretHex(key)}\n`;
}
