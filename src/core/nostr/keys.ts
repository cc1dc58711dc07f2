/**
 * The daemon's Nostr signing key: generated, loaded from a file or an environment
 * variable, written to a mode-0600 file. The secret never leaves `SigningKey` in
 * printable form: toString/toJSON/inspect all say `[signing key redacted]`, and no
 * error message quotes the key's text.
 */
import { chmodSync, closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, basename, join } from 'node:path';
import { inspect } from 'node:util';
import { finalizeEvent, getPublicKey, generateSecretKey as nostrGenerateSecretKey } from 'nostr-tools/pure';
import type { EventTemplate } from 'nostr-tools/core';
import { decode as nip19Decode, npubEncode } from 'nostr-tools/nip19';
import { InputError, UsageError } from '../errors/errors.js';

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
  /** x-only public key, 64 lowercase hex characters. */
  readonly publicKey: string;

  private constructor(secret: Uint8Array, publicKey: string) {
    this.#secret = secret;
    this.publicKey = publicKey;
  }

  /** Takes a copy of 32 secret bytes; refuses zero or out-of-range scalars. */
  static fromBytes(secret: Uint8Array, source = 'signing key'): SigningKey {
    if (!(secret instanceof Uint8Array) || secret.length !== 32) {
      throw new InputError('bad_signing_key', 'a secret key is 32 bytes', source);
    }
    const copy = Uint8Array.from(secret);
    let publicKey: string;
    try {
      publicKey = getPublicKey(copy);
    } catch {
      // the curve library's message could describe the scalar: say only that it is out of range
      throw new InputError('bad_signing_key', 'not a valid secp256k1 secret key (zero or not below the curve order)', source);
    }
    return new SigningKey(copy, publicKey);
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
    const signed = finalizeEvent(
      { kind: template.kind, created_at: template.created_at, tags: template.tags.map((t) => [...t]), content: template.content },
      this.#secret,
    );
    return {
      id: signed.id,
      pubkey: signed.pubkey,
      created_at: signed.created_at,
      kind: signed.kind,
      tags: signed.tags,
      content: signed.content,
      sig: signed.sig,
    };
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

export interface LoadSigningKeyOptions {
  /** Path of a key file (hex or nsec, whitespace trimmed). */
  file?: string;
  /** Name of an environment variable holding the key (hex or nsec). */
  env?: string;
  /** Environment to read `env` from; defaults to `process.env`. */
  environment?: NodeJS.ProcessEnv;
  /**
   * Load a key file that group or others can read, with a warning instead of a refusal
   * (for secret mounts that cannot be made 0600). Group- or world-writable files are
   * refused regardless.
   */
  allowReadableByOthers?: boolean;
}

export interface LoadedSigningKey {
  key: SigningKey;
  /** `file:<path>` or `env:<NAME>`: where the key came from, never the key itself. */
  source: string;
  /** Things an operator should fix (e.g. a key file readable by others when allowed). */
  warnings: string[];
}

/**
 * Loads the signing key from an environment variable when it is named and set
 * (it wins over the file, with a warning if the file exists too), else from the
 * file. A key file readable or writable by group/others is refused
 * (as ssh does) unless `allowReadableByOthers`, which turns readability into a warning.
 */
export function loadSigningKey(options: LoadSigningKeyOptions): LoadedSigningKey {
  const environment = options.environment ?? process.env;
  const envValue = options.env !== undefined ? environment[options.env] : undefined;
  const envSet = envValue !== undefined && envValue.trim() !== '';
  if (envSet) {
    const warnings: string[] = [];
    if (options.file !== undefined && existsSync(options.file)) {
      warnings.push(`key file ${options.file} ignored: environment variable ${options.env} is set and takes precedence`);
    }
    return { key: SigningKey.parse(envValue, `environment variable ${options.env}`), source: `env:${options.env}`, warnings };
  }
  if (options.file === undefined) {
    const where = options.env !== undefined ? `environment variable ${options.env} is not set and no key file was given` : 'no key file or environment variable was given';
    throw new UsageError(`no Nostr signing key: ${where} (make one with: aer1-anchor keygen)`, 'no_signing_key');
  }
  return loadKeyFile(options.file, options.allowReadableByOthers === true);
}

function loadKeyFile(file: string, allowReadableByOthers: boolean): LoadedSigningKey {
  const warnings: string[] = [];
  let text: string;
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read key file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UsageError(`key file ${file} is not a regular file`, 'unreadable');
    if (process.platform !== 'win32') {
      const mode = st.mode & 0o777;
      const modeText = mode.toString(8).padStart(4, '0');
      if ((mode & 0o022) !== 0) {
        throw new UsageError(
          `key file ${file} is writable by group or others (mode ${modeText}); run: chmod 600 ${file}`,
          'key_file_permissions',
        );
      }
      if ((mode & 0o044) !== 0) {
        const message = `key file ${file} is readable by group or others (mode ${modeText}); run: chmod 600 ${file}`;
        if (!allowReadableByOthers) throw new UsageError(message, 'key_file_permissions');
        warnings.push(message);
      }
    }
    if (st.size > 4096) throw new InputError('bad_signing_key', 'is too long to be a key (over 4096 bytes)', `key file ${file}`);
    const buf = readFileSync(fd);
    text = buf.toString('utf8');
    buf.fill(0);
  } finally {
    closeSync(fd);
  }
  return { key: SigningKey.parse(text, `key file ${file}`), source: `file:${file}`, warnings };
}

export interface WriteKeyFileOptions {
  /** Replace an existing file (atomically, through a temporary file in the same folder). */
  force?: boolean;
  /** Key to write; a fresh one when absent. */
  key?: SigningKey;
}

export interface WrittenKeyFile {
  path: string;
  publicKey: string;
  npub: string;
}

/**
 * Writes a key file (64 lowercase hex characters and a newline) with mode 0600,
 * creating its folder (mode 0700) if needed. Refuses to replace an existing file
 * unless `force`.
 */
export function writeKeyFile(path: string, options: WriteKeyFileOptions = {}): WrittenKeyFile {
  const key = options.key ?? generateSecretKey();
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new UsageError(`cannot create folder ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unwritable');
  }
  const body = Buffer.from(secretHex(key) + '\n', 'utf8');
  try {
    if (!options.force) {
      writeNew(path, body);
    } else {
      const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
      try {
        writeNew(tmp, body);
        renameSync(tmp, path);
      } catch (err) {
        try {
          unlinkSync(tmp);
        } catch {
          // already gone
        }
        throw err;
      }
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new UsageError(`${path} exists; refusing to overwrite a signing key (use --force)`, 'key_file_exists');
    }
    throw new UsageError(`cannot write key file ${path}: ${code ?? 'error'}`, 'unwritable');
  } finally {
    body.fill(0);
  }
  return { path, publicKey: key.publicKey, npub: key.npub };
}

function writeNew(path: string, body: Buffer): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    // the umask can only narrow the mode; make it exactly 0600 whatever it is
    chmodSync(path, 0o600);
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
