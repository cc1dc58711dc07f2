/**
 * The log's Ed25519 key file: Go's signer-key text (`PRIVATE+KEY+<name>+<hash>+<base64>`,
 * which note.NewSigner reads), mode 0600, refused when group or others can read or write
 * it — the checks the Nostr key file gets (src/adapters/nostr/key-file.ts).
 */
import { chmodSync, closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { InputError, UsageError } from '../../core/errors/errors.js';
import { generateSignerKey, parseSignerKey, type LogSigner } from '../../core/log/note.js';

export interface WrittenLogKey {
  readonly path: string;
  readonly name: string;
  readonly verifierKey: string;
}

/** Writes a fresh log key named `name` (mode 0600, folder 0700); refuses to replace one unless `force`. */
export function writeLogKeyFile(path: string, name: string, options: { force?: boolean } = {}): WrittenLogKey {
  const { signerKeyText, signer } = generateSignerKey(name);
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new UsageError(`cannot create folder ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unwritable');
  }
  const body = Buffer.from(`${signerKeyText}\n`, 'utf8');
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    if (!options.force) {
      writeNew(path, body);
    } else {
      writeNew(tmp, body);
      renameSync(tmp, path);
    }
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never made, or already renamed
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new UsageError(`${path} exists; refusing to overwrite a signing key (use --force)`, 'key_file_exists');
    throw new UsageError(`cannot write key file ${path}: ${code ?? 'error'}`, 'unwritable');
  } finally {
    body.fill(0);
  }
  return { path, name: signer.name, verifierKey: signer.verifierKey };
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

/** Loads a log key file; one readable or writable by group or others is refused (as ssh does). */
export function loadLogKeyFile(file: string): LogSigner {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read log key file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
  let text: string;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UsageError(`log key file ${file} is not a regular file`, 'unreadable');
    const mode = st.mode & 0o777;
    if (process.platform !== 'win32' && (mode & 0o066) !== 0) {
      throw new UsageError(`log key file ${file} is readable or writable by group or others (mode ${mode.toString(8).padStart(4, '0')}); run: chmod 600 ${file}`, 'key_file_permissions');
    }
    if (st.size > 1024) throw new InputError('bad_signing_key', 'is too long to be a log key (over 1024 bytes)', `log key file ${file}`);
    const buf = readFileSync(fd);
    text = buf.toString('utf8');
    buf.fill(0);
  } finally {
    closeSync(fd);
  }
  return parseSignerKey(text, `log key file ${file}`);
}
