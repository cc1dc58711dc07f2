/**
 * Files that hold a secret key (the Nostr signing key, the anchor log's key): written with mode
 * 0600 in a folder made 0700, never over an existing one unless forced (then atomically), and
 * read only when neither group nor others can write them (nor read them, unless the caller
 * allows it with a warning), as ssh does with its keys.
 */
import { chmodSync, closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { InputError, UsageError } from '../../core/errors/errors.js';

/** Writes `body` (zeroed afterwards) to `path`; refuses an existing file unless `force`. */
export function writeSecretFile(path: string, body: Buffer, force: boolean): void {
  const dir = dirname(path);
  try {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new UsageError(`cannot create folder ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unwritable');
    }
    if (!force) {
      writeNew(path, body);
      return;
    }
    const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      writeNew(tmp, body);
      renameSync(tmp, path);
    } catch (err) {
      try {
        unlinkSync(tmp);
      } catch {
        // never made, or already gone
      }
      throw err;
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new UsageError(`${path} exists; refusing to overwrite a signing key (use --force)`, 'key_file_exists');
    throw new UsageError(`cannot write key file ${path}: ${code ?? 'error'}`, 'unwritable');
  } finally {
    body.fill(0);
  }
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

export interface ReadSecretFileOptions {
  /** How messages name the file: `key file` or `log key file`. */
  what: string;
  /** Longest file taken (a key is a line). */
  maxBytes: number;
  /** A file group or others can read is taken with a warning instead of refused. */
  allowReadableByOthers?: boolean;
}

/** Reads a secret file's text after checking it is a regular file with safe permissions and no longer than `maxBytes`. */
export function readSecretFile(file: string, opts: ReadSecretFileOptions): { text: string; warnings: string[] } {
  const warnings: string[] = [];
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read ${opts.what} ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UsageError(`${opts.what} ${file} is not a regular file`, 'unreadable');
    if (process.platform !== 'win32') {
      const mode = st.mode & 0o777;
      const modeText = mode.toString(8).padStart(4, '0');
      if ((mode & 0o022) !== 0) {
        throw new UsageError(`${opts.what} ${file} is writable by group or others (mode ${modeText}); run: chmod 600 ${file}`, 'key_file_permissions');
      }
      if ((mode & 0o044) !== 0) {
        const message = `${opts.what} ${file} is readable by group or others (mode ${modeText}); run: chmod 600 ${file}`;
        if (opts.allowReadableByOthers !== true) throw new UsageError(message, 'key_file_permissions');
        warnings.push(message);
      }
    }
    if (st.size > opts.maxBytes) throw new InputError('bad_signing_key', `is too long to be a key (over ${opts.maxBytes} bytes)`, `${opts.what} ${file}`);
    const buf = readFileSync(fd);
    const text = buf.toString('utf8');
    buf.fill(0);
    return { text, warnings };
  } finally {
    closeSync(fd);
  }
}
