/**
 * The headers file the development calendar mines into: JSON `{"<height>": "<80-byte
 * header hex>"}`, the same shape as `vectors/bitcoin-headers.json`. Several calendars
 * (even in several processes) may share one file: each `mine` takes a lock file, reads
 * the file, extends the highest header, and replaces the file atomically (temp + rename),
 * so the heights form one chain instead of two chains fighting over the same heights.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { InputError } from '../../core/errors/errors.js';

export type HeadersMap = Map<number, Buffer>;

export function parseHeadersJson(text: string, source: string): HeadersMap {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InputError('bad_headers_file', `${source} is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InputError('bad_headers_file', `${source} must be an object {"<height>": "<header hex>"}`);
  }
  const out: HeadersMap = new Map();
  for (const [key, hex] of Object.entries(value as Record<string, unknown>)) {
    if (!/^(0|[1-9][0-9]{0,8})$/.test(key)) throw new InputError('bad_headers_file', `height ${JSON.stringify(key)} is not a decimal height`, source);
    if (typeof hex !== 'string' || !/^[0-9a-fA-F]{160}$/.test(hex)) {
      throw new InputError('bad_headers_file', `header at height ${key} is not 160 hex characters`, source);
    }
    out.set(Number(key), Buffer.from(hex, 'hex'));
  }
  return out;
}

export function headersJson(headers: HeadersMap): string {
  const sorted = [...headers.entries()].sort((a, b) => a[0] - b[0]);
  const obj: Record<string, string> = {};
  for (const [h, header] of sorted) obj[String(h)] = header.toString('hex');
  return JSON.stringify(obj, null, 2) + '\n';
}

export async function readHeadersFile(file: string): Promise<HeadersMap> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw err;
  }
  return text.trim() === '' ? new Map() : parseHeadersJson(text, file);
}

export async function writeHeadersFile(file: string, headers: HeadersMap): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, headersJson(headers));
  await rename(tmp, file);
}

const LOCK_STALE_MS = 30_000;
const LOCK_MAX_WAIT_MS = 15_000;
const inProcess = new Map<string, Promise<unknown>>();

/** Runs `fn` holding `<file>.lock` (O_EXCL), queued behind other holders in this process. */
export async function withHeadersLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const previous = inProcess.get(file) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(() => withLockFile(file, fn));
  inProcess.set(file, run);
  try {
    return await run;
  } finally {
    if (inProcess.get(file) === run) inProcess.delete(file);
  }
}

async function withLockFile<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const lock = `${file}.lock`;
  const deadline = Date.now() + LOCK_MAX_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lock, 'wx');
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > LOCK_STALE_MS) await unlink(lock).catch(() => undefined);
      else if (Date.now() > deadline) throw new Error(`headers file lock ${lock} held for over ${LOCK_MAX_WAIT_MS} ms`);
      else await sleep(10);
    }
  }
  try {
    return await fn();
  } finally {
    await unlink(lock).catch(() => undefined);
  }
}
