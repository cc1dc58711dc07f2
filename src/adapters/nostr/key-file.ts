/**
 * The signing key's file and environment variable: loaded with the permission checks ssh
 * makes, written atomically with mode 0600. The key itself is `SigningKey` (src/core).
 */
import { chmodSync, closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, basename, join } from 'node:path';
import { InputError, UsageError } from '../../core/errors/errors.js';
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
  const body = Buffer.from(keyFileText(key), 'utf8');
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
