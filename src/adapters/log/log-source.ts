/**
 * Where `log verify` reads a log from: a folder, or an http(s) URL prefix on this machine
 * (loopback only). Every read is bounded: a file or body over its limit is an error naming
 * the path, never read whole.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../../core/errors/errors.js';
import { LogFormatError } from '../../core/log/errors.js';

export interface LogSource {
  /** What the prefix is, for reports. */
  readonly prefix: string;
  /** The bytes at `path` under the prefix, or null when there are none (ENOENT, 404). */
  read(path: string, maxBytes: number): Promise<Buffer | null>;
}

function tooLarge(path: string, maxBytes: number): LogFormatError {
  return new LogFormatError('log_too_large', `over ${maxBytes} bytes`, path);
}

export class DirectorySource implements LogSource {
  readonly prefix: string;
  constructor(dir: string) {
    this.prefix = resolve(dir);
  }

  read(path: string, maxBytes: number): Promise<Buffer | null> {
    let fd: number;
    try {
      fd = openSync(join(this.prefix, path), 'r');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return Promise.resolve(null);
      throw new UsageError(`cannot read ${join(this.prefix, path)}: ${code ?? 'error'}`, 'unreadable');
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new UsageError(`${join(this.prefix, path)} is not a regular file`, 'unreadable');
      if (st.size > maxBytes) throw tooLarge(path, maxBytes);
      const buf = Buffer.allocUnsafe(st.size);
      let at = 0;
      while (at < st.size) {
        const n = readSync(fd, buf, at, st.size - at, at);
        if (n === 0) break;
        at += n;
      }
      return Promise.resolve(buf.subarray(0, at));
    } finally {
      closeSync(fd);
    }
  }
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

export class HttpSource implements LogSource {
  readonly prefix: string;
  constructor(url: string, private readonly timeoutMs = 10_000) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`${JSON.stringify(url.slice(0, 80))} is not a URL`, 'usage');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`${parsed.protocol} URLs are not read: http or https`, 'usage');
    if (!LOOPBACK.has(parsed.hostname) && !/^127\.\d+\.\d+\.\d+$/.test(parsed.hostname)) {
      throw new UsageError(`${parsed.host} is not on this machine: log verify reads a folder or a loopback URL`, 'usage');
    }
    this.prefix = parsed.href.endsWith('/') ? parsed.href : `${parsed.href}/`;
  }

  async read(path: string, maxBytes: number): Promise<Buffer | null> {
    const url = new URL(path, this.prefix);
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs), redirect: 'error', headers: { 'accept-encoding': 'gzip, identity' } });
    } catch (err) {
      throw new UsageError(`cannot fetch ${url.href}: ${(err as Error).name === 'TimeoutError' ? `no answer in ${this.timeoutMs} ms` : ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`, 'unreadable');
    }
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new UsageError(`${url.href} answered HTTP ${res.status}`, 'unreadable');
    }
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > maxBytes) {
      await res.body?.cancel();
      throw tooLarge(path, maxBytes);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    if (res.body !== null) {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        total += chunk.length;
        if (total > maxBytes) {
          await res.body.cancel().catch(() => undefined);
          throw tooLarge(path, maxBytes);
        }
        chunks.push(Buffer.from(chunk));
      }
    }
    return Buffer.concat(chunks);
  }
}

/** A folder, or an http(s) URL on loopback. */
export function logSource(prefix: string): LogSource {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(prefix) ? new HttpSource(prefix) : new DirectorySource(prefix);
}
