/**
 * Where block headers come from, behind one interface: a JSON headers file, an
 * Esplora-style HTTP API, or bitcoind JSON-RPC. A source only fetches; checking the
 * header (proof of work, merkle root) is `verifyBitcoinAttestation`'s job. Every HTTP
 * request has a deadline and a cap on the answer's size.
 */
import { readFile } from 'node:fs/promises';
import { BitcoinVerificationError } from '../../core/bitcoin/errors.js';
import { HEADER_LENGTH, displayHex, sha256d } from '../../core/bitcoin/header.js';
import type { HeaderSource } from '../../core/bitcoin/header-source.js';

export type { HeaderSource };

export interface HttpSourceOptions {
  /** Deadline of one request (default 10 s). */
  timeoutMs?: number;
}

/**
 * The daemon passes `ots.timeoutMs`; the verifier and `aer1-anchor ots` get this, its default
 * (test/config/config.test.ts checks they agree). A literal, not read from the config schema:
 * the /verify page's browser bundle includes this file and should not carry zod.
 */
export const DEFAULT_SOURCE_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

function checkHeight(height: number): void {
  if (!Number.isSafeInteger(height) || height < 0) throw new RangeError(`block height out of range: ${height}`);
}

function headerFromHex(hex: unknown, what: string): Buffer {
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]+$/.test(hex) || hex.length !== 2 * HEADER_LENGTH) {
    throw new BitcoinVerificationError('bitcoin_bad_header', `${what} is not ${HEADER_LENGTH} bytes of hex`);
  }
  return Buffer.from(hex, 'hex');
}

/** Parses `{"<height>": "<80-byte header hex>"}` (the shape of vectors/bitcoin-headers.json). */
export function parseHeadersJson(value: unknown, name: string): Map<number, Buffer> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BitcoinVerificationError('bitcoin_source_error', `${name} must be an object {"<height>": "<header hex>"}`);
  }
  const out = new Map<number, Buffer>();
  for (const [key, hex] of Object.entries(value as Record<string, unknown>)) {
    if (!/^(0|[1-9][0-9]{0,15})$/.test(key) || !Number.isSafeInteger(Number(key))) {
      throw new BitcoinVerificationError('bitcoin_source_error', `${name}: key ${JSON.stringify(key)} is not a block height`);
    }
    out.set(Number(key), headerFromHex(hex, `${name}: header at height ${key}`));
  }
  checkLinks(out, name);
  return out;
}

/**
 * Where the file holds consecutive heights, each header must name the one below it as its
 * previous block: a run of headers that does not link is no chain, and is refused whole.
 */
function checkLinks(headers: ReadonlyMap<number, Buffer>, name: string): void {
  for (const [height, header] of headers) {
    const below = headers.get(height - 1);
    if (!below) continue;
    if (!header.subarray(4, 36).equals(sha256d(below))) {
      throw new BitcoinVerificationError('bitcoin_source_error', `${name}: the header at height ${height} does not link to the header at height ${height - 1} (its previous-block hash is ${displayHex(header.subarray(4, 36))}, the block below hashes to ${displayHex(sha256d(below))})`);
    }
  }
}

/**
 * Headers from a JSON file (read again on each lookup, so a file that grows — the dev
 * calendar mines into one — is seen), or from a map given in memory.
 */
export class HeadersFileSource implements HeaderSource {
  readonly name: string;
  private readonly file: string | null;
  private readonly headers: Map<number, Buffer> | null;

  /** `name` names headers given in memory in messages (default `headers in memory`), e.g. a file dropped on /verify. */
  constructor(source: string | Map<number, Buffer>, name?: string) {
    if (typeof source === 'string') {
      this.file = source;
      this.headers = null;
      this.name = `headers file ${source}`;
    } else {
      this.file = null;
      this.headers = source;
      this.name = name ?? 'headers in memory';
    }
  }

  private async load(): Promise<Map<number, Buffer>> {
    if (this.headers) return this.headers;
    let text: string;
    try {
      text = await readFile(this.file!, 'utf8');
    } catch (err) {
      throw new BitcoinVerificationError('bitcoin_source_error', `cannot read ${this.name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new BitcoinVerificationError('bitcoin_source_error', `${this.name} is not JSON: ${(err as Error).message}`);
    }
    return parseHeadersJson(value, this.name);
  }

  async headerAt(height: number): Promise<Buffer> {
    checkHeight(height);
    const header = (await this.load()).get(height);
    if (!header) throw new BitcoinVerificationError('bitcoin_missing_header', `${this.name} has no header at height ${height}`);
    return header;
  }
}

interface HttpAnswer {
  status: number;
  body: string;
}

/** One request with a deadline; the body is read up to MAX_ANSWER_BYTES. */
async function request(url: string, init: RequestInit, timeoutMs: number, name: string): Promise<HttpAnswer> {
  let res: Response;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    res = await fetch(url, { ...init, signal, redirect: 'error' });
  } catch (err) {
    throw new BitcoinVerificationError('bitcoin_source_error', `${name}: ${describeFetchError(err, timeoutMs)}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    if (res.body) {
      for await (const chunk of res.body) {
        size += (chunk as Uint8Array).length;
        if (size > MAX_ANSWER_BYTES) {
          await res.body.cancel().catch(() => undefined);
          throw new BitcoinVerificationError('bitcoin_source_error', `${name}: answer larger than ${MAX_ANSWER_BYTES} bytes`);
        }
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
    }
  } catch (err) {
    if (err instanceof BitcoinVerificationError) throw err;
    throw new BitcoinVerificationError('bitcoin_source_error', `${name}: ${describeFetchError(err, timeoutMs)}`);
  }
  return { status: res.status, body: Buffer.concat(chunks).toString('utf8') };
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

function joinPath(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path}`;
}

/** An Esplora-style API (`GET {base}/block-height/:h`, `GET {base}/block/:hash/header`); the base path is kept. */
export class EsploraSource implements HeaderSource {
  readonly name: string;
  private readonly base: string;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, opts: HttpSourceOptions = {}) {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`esplora URL must be http(s): ${baseUrl}`);
    this.base = baseUrl;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_SOURCE_TIMEOUT_MS;
    this.name = `esplora ${baseUrl}`;
  }

  async headerAt(height: number): Promise<Buffer> {
    checkHeight(height);
    const byHeight = await request(joinPath(this.base, `block-height/${height}`), {}, this.timeoutMs, this.name);
    if (byHeight.status === 404) throw new BitcoinVerificationError('bitcoin_missing_header', `${this.name} knows no block at height ${height}`);
    if (byHeight.status !== 200) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: HTTP ${byHeight.status} for block-height/${height}`);
    const hash = byHeight.body.trim().toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: block-height/${height} did not answer a block hash`);
    const res = await request(joinPath(this.base, `block/${hash}/header`), {}, this.timeoutMs, this.name);
    if (res.status !== 200) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: HTTP ${res.status} for block/${hash}/header`);
    const header = headerFromHex(res.body.trim(), `${this.name}: header of block ${hash}`);
    if (displayHex(sha256d(header)) !== hash) {
      throw new BitcoinVerificationError('bitcoin_header_mismatch', `${this.name}: the header served for block ${hash} hashes to ${displayHex(sha256d(header))}`);
    }
    return header;
  }
}

/** bitcoind JSON-RPC (`getblockhash`, `getblockheader hash false`); `user:password@` in the URL becomes Basic auth. */
export class BitcoindRpcSource implements HeaderSource {
  readonly name: string;
  private readonly url: string;
  private readonly auth: string | null;
  private readonly timeoutMs: number;
  private nextId = 1;

  constructor(rpcUrl: string, opts: HttpSourceOptions = {}) {
    const url = new URL(rpcUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`bitcoind URL must be http(s): ${rpcUrl}`);
    this.auth = url.username || url.password ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}` : null;
    url.username = '';
    url.password = '';
    this.url = url.toString();
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_SOURCE_TIMEOUT_MS;
    this.name = `bitcoind ${this.url}`; // never the password
  }

  private async call(method: string, params: unknown[]): Promise<unknown> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.auth) headers.authorization = this.auth;
    const body = JSON.stringify({ jsonrpc: '1.0', id: this.nextId++, method, params });
    const res = await request(this.url, { method: 'POST', headers, body }, this.timeoutMs, this.name);
    if (res.status === 401 || res.status === 403) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: HTTP ${res.status} (check user:password in the URL)`);
    let answer: { result?: unknown; error?: { code?: number; message?: string } | null };
    try {
      answer = JSON.parse(res.body) as typeof answer;
    } catch {
      throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: HTTP ${res.status}, not a JSON-RPC answer to ${method}`);
    }
    if (answer.error) {
      const { code, message } = answer.error;
      // RPC_INVALID_PARAMETER (-8): "Block height out of range"; RPC_INVALID_ADDRESS_OR_KEY (-5): "Block not found".
      if (code === -8 || code === -5) throw new BitcoinVerificationError('bitcoin_missing_header', `${this.name}: ${method}: ${message ?? code}`);
      throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: ${method}: ${message ?? `error ${code}`}`);
    }
    if (res.status !== 200) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: HTTP ${res.status} for ${method}`);
    return answer.result;
  }

  async headerAt(height: number): Promise<Buffer> {
    checkHeight(height);
    const hash = await this.call('getblockhash', [height]);
    if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) throw new BitcoinVerificationError('bitcoin_source_error', `${this.name}: getblockhash ${height} did not answer a block hash`);
    const header = headerFromHex(await this.call('getblockheader', [hash, false]), `${this.name}: header of block ${hash}`);
    if (displayHex(sha256d(header)) !== hash) {
      throw new BitcoinVerificationError('bitcoin_header_mismatch', `${this.name}: the header served for block ${hash} hashes to ${displayHex(sha256d(header))}`);
    }
    return header;
  }
}

export interface HeaderSourceSettings {
  headersFile?: string | null;
  esploraUrl?: string | null;
  bitcoindUrl?: string | null;
  timeoutMs?: number;
}

/** The configured source: a headers file first, then bitcoind, then Esplora; null when none is set. */
export function headerSourceFrom(settings: HeaderSourceSettings): HeaderSource | null {
  const opts = settings.timeoutMs === undefined ? {} : { timeoutMs: settings.timeoutMs };
  if (settings.headersFile) return new HeadersFileSource(settings.headersFile);
  if (settings.bitcoindUrl) return new BitcoindRpcSource(settings.bitcoindUrl, opts);
  if (settings.esploraUrl) return new EsploraSource(settings.esploraUrl, opts);
  return null;
}
