/**
 * The signing key's file and environment variable: loaded with the permission checks ssh
 * makes, written atomically with mode 0600. The key itself is `SigningKey` (src/core).
 */
import { existsSync } from 'node:fs';
import { UsageError } from '../../core/errors/errors.js';
import { readSecretFile, writeSecretFile } from '../key-file/secret-file.js';
import { generateSecretKey, keyFileText, SigningKey } from '../../core/nostr/keys.js';

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
  const { text, warnings } = readSecretFile(file, { what: 'key file', maxBytes: 4096, allowReadableByOthers });
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
  writeSecretFile(path, Buffer.from(keyFileText(key), 'utf8'), options.force === true);
  return { path, publicKey: key.publicKey, npub: key.npub };
}
