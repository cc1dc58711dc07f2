/**
 * A development OpenTimestamps calendar that speaks the real protocol and byte layout
 * (opentimestamps-server's `POST /digest` and `GET /timestamp/<hex>`), plus a dev-only
 * `POST /mine` that commits everything pending into a synthetic regtest block with a
 * real 80-byte header and real proof of work, appended to a headers file.
 *
 * Not for production: commitments live in memory, and `POST /mine` is unauthenticated.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InputError } from '../../core/errors/errors.js';
import { parseHeader, sha256d } from './block-header.js';
import { mineCommitments, type MinedBlock } from './confirmation.js';
import { readHeadersFile, withHeadersLock, writeHeadersFile } from './headers-file.js';
import { checkPendingUri } from './ots-ops.js';
import { buildRound } from './round.js';

/** The real server refuses larger digests (otsserver/rpc.py `MAX_DIGEST_LENGTH`). */
export const MAX_DIGEST_LENGTH = 64;
export const PENDING_REASON = 'Pending confirmation in Bitcoin blockchain';
export const NOT_FOUND_REASON = 'Not found';

export type DevCalendarMode = 'ok' | 'error500' | 'hang';
const MODES: readonly DevCalendarMode[] = ['ok', 'error500', 'hang'];

export interface DevCalendarOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** JSON headers file `{"<height>": "<header hex>"}`, shared safely by several calendars. */
  headersOut?: string;
  /** The URL pending attestations name (default `http://host:port` + basePath). */
  publicUrl?: string;
  /** Serve under a path prefix, e.g. `/ots/a` → `POST /ots/a/digest`. Default: none. */
  basePath?: string;
  /** Length of one aggregation round in ms (the real server: 1000). */
  aggregationMs?: number;
  /** Secret behind the 8-byte MACs (default: 32 random bytes). */
  hmacKey?: Buffer;
  /** Height of the first block when the headers file is empty or absent (default 1). */
  startHeight?: number;
  /** Extra transactions after the commitment tx in each mined block (default 0). */
  fillerTxs?: number;
}

export interface MineResult {
  height: number;
  /** Block hash as explorers and bitcoind print it (reversed internal order). */
  blockHash: string;
  /** Merkle root in internal byte order: the message the Bitcoin attestations commit to. */
  merkleRootHex: string;
  /** The 80-byte header, hex, as written to the headers file. */
  headerHex: string;
  /** How many commitments (aggregation rounds) the block confirmed. */
  count: number;
}

export interface DevCalendarStats {
  digestsReceived: number;
  rounds: number;
  pendingCommitments: number;
  confirmedCommitments: number;
  lastHeight: number | null;
}

export interface DevCalendar {
  /** Base URL of the calendar (the one pending attestations name). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  mine(): Promise<MineResult>;
  /** Commitments (not digests) waiting for the next `mine()`. */
  pendingCount(): number;
  setMode(mode: DevCalendarMode): void;
  stats(): DevCalendarStats;
}

interface Round {
  digests: Buffer[];
  waiters: { resolve: (b: Buffer) => void; reject: (e: Error) => void }[];
  timer: NodeJS.Timeout;
}

interface ChainTip {
  height: number;
  hash: Buffer;
  time: number;
}

function normalizeBasePath(p: string | undefined): string {
  if (!p || p === '/') return '';
  const trimmed = p.replace(/\/+$/, '');
  if (!/^\/[A-Za-z0-9\-._/]*$/.test(trimmed)) {
    throw new InputError('bad_option', `basePath ${JSON.stringify(p)} must start with / and use A-Za-z0-9-._/`);
  }
  return trimmed;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function tipOf(headers: Map<number, Buffer>): ChainTip | null {
  let best: number | null = null;
  for (const h of headers.keys()) if (best === null || h > best) best = h;
  if (best === null) return null;
  const header = headers.get(best)!;
  return { height: best, hash: sha256d(header), time: parseHeader(header).time };
}

export async function startDevCalendar(opts: DevCalendarOptions = {}): Promise<DevCalendar> {
  const host = opts.host ?? '127.0.0.1';
  const basePath = normalizeBasePath(opts.basePath);
  const aggregationMs = opts.aggregationMs ?? 1000;
  const hmacKey = opts.hmacKey ?? randomBytes(32);
  const startHeight = opts.startHeight ?? 1;
  const fillerTxs = opts.fillerTxs ?? 0;
  if (!Number.isInteger(aggregationMs) || aggregationMs < 0) throw new InputError('bad_option', 'aggregationMs must be a non-negative integer');
  if (!Number.isInteger(startHeight) || startHeight < 0) throw new InputError('bad_option', 'startHeight must be a non-negative integer');
  if (!Number.isInteger(fillerTxs) || fillerTxs < 0 || fillerTxs > 1000) throw new InputError('bad_option', 'fillerTxs must be an integer in 0..1000');

  let mode: DevCalendarMode = 'ok';
  let round: Round | null = null;
  let uri = '';
  const pending = new Map<string, Buffer>();
  const confirmed = new Map<string, Buffer>();
  let memoryTip: ChainTip | null = null;
  let mineQueue: Promise<unknown> = Promise.resolve();
  const counters = { digestsReceived: 0, rounds: 0, lastHeight: null as number | null };

  if (opts.headersOut) {
    // Create the file up front so readers can rely on it; a bad existing file fails here.
    const file = opts.headersOut;
    await withHeadersLock(file, async () => {
      const headers = await readHeadersFile(file);
      if (headers.size === 0) await writeHeadersFile(file, headers);
    });
  }

  function closeRound(): void {
    const r = round;
    if (!r) return;
    round = null;
    try {
      const result = buildRound(r.digests, { time: nowSeconds(), hmacKey, uri });
      pending.set(result.commitment.toString('hex'), result.commitment);
      counters.rounds++;
      r.waiters.forEach((w, i) => w.resolve(result.responses[i]!));
    } catch (err) {
      for (const w of r.waiters) w.reject(err as Error);
    }
  }

  function submitDigest(digest: Buffer): Promise<Buffer> {
    counters.digestsReceived++;
    if (!round) round = { digests: [], waiters: [], timer: setTimeout(closeRound, aggregationMs) };
    const r = round;
    r.digests.push(digest);
    return new Promise((resolve, reject) => r.waiters.push({ resolve, reject }));
  }

  async function extendChain(commitments: Buffer[]): Promise<MinedBlock> {
    const build = (tip: ChainTip | null): MinedBlock =>
      mineCommitments({
        commitments,
        height: tip ? tip.height + 1 : startHeight,
        prevHash: tip ? tip.hash : Buffer.alloc(32),
        time: Math.max(nowSeconds(), tip ? tip.time + 1 : 0),
        fillerTxs,
      });
    const file = opts.headersOut;
    if (!file) {
      const block = build(memoryTip);
      memoryTip = { height: block.height, hash: block.hash, time: parseHeader(block.header).time };
      return block;
    }
    return withHeadersLock(file, async () => {
      const headers = await readHeadersFile(file);
      const block = build(tipOf(headers));
      headers.set(block.height, block.header);
      await writeHeadersFile(file, headers);
      return block;
    });
  }

  async function mineNow(): Promise<MineResult> {
    const keys = [...pending.keys()];
    const commitments = keys.map((k) => pending.get(k)!);
    const block = await extendChain(commitments);
    keys.forEach((k, i) => {
      confirmed.set(k, block.upgrades[i]!);
      pending.delete(k);
    });
    counters.lastHeight = block.height;
    return {
      height: block.height,
      blockHash: Buffer.from(block.hash).reverse().toString('hex'),
      merkleRootHex: block.merkleRoot.toString('hex'),
      headerHex: block.header.toString('hex'),
      count: commitments.length,
    };
  }

  function mine(): Promise<MineResult> {
    const run = mineQueue.catch(() => undefined).then(mineNow);
    mineQueue = run;
    return run;
  }

  function send(res: ServerResponse, status: number, type: string, body: Buffer | string, cache?: string): void {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    res.statusCode = status;
    res.setHeader('Content-Type', type);
    res.setHeader('Content-Length', bytes.length);
    if (cache) res.setHeader('Cache-Control', cache);
    res.end(bytes);
  }

  async function readBody(req: IncomingMessage, length: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of req) {
      total += (chunk as Buffer).length;
      if (total > length) break;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).subarray(0, length);
  }

  async function postDigest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const header = req.headers['content-length'];
    const length = header !== undefined && /^[0-9]+$/.test(header) ? Number(header) : NaN;
    if (!Number.isSafeInteger(length)) {
      res.setHeader('Connection', 'close');
      return send(res, 400, 'text/plain', 'invalid Content-Length');
    }
    if (length > MAX_DIGEST_LENGTH) {
      res.setHeader('Connection', 'close');
      return send(res, 400, 'text/plain', 'digest too long');
    }
    const digest = await readBody(req, length);
    const answer = await submitDigest(digest);
    send(res, 200, 'application/octet-stream', answer);
  }

  function getTimestamp(hex: string, res: ServerResponse): void {
    if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
      return send(res, 400, 'text/plain', 'commitment must be hex-encoded bytes', 'public, max-age=31536000');
    }
    const key = hex.toLowerCase();
    const upgrade = confirmed.get(key);
    if (upgrade) return send(res, 200, 'application/octet-stream', upgrade, 'public, max-age=31536000');
    if (pending.has(key)) return send(res, 404, 'text/plain', PENDING_REASON, 'public, max-age=60');
    send(res, 404, 'text/plain', NOT_FOUND_REASON, 'public, max-age=60');
  }

  function homePage(): string {
    return [
      'aer1-anchor development OpenTimestamps calendar (not for production)',
      `calendar: ${uri}`,
      `pending commitments: ${pending.size}`,
      `confirmed commitments: ${confirmed.size}`,
      `last mined height: ${counters.lastHeight ?? 'none'}`,
      'POST /digest, GET /timestamp/<hex>; dev only: POST /mine, POST /mode/<ok|error500|hang>',
      '',
    ].join('\n');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    if (basePath && raw !== basePath && !raw.startsWith(basePath + '/')) return send(res, 404, 'text/plain', 'not found');
    const path = raw.slice(basePath.length) || '/';
    const method = req.method ?? 'GET';

    // Development controls answer in every mode.
    if (method === 'POST' && path === '/mine') {
      const result = await mine();
      return send(res, 200, 'application/json', JSON.stringify(result) + '\n');
    }
    if (method === 'POST' && path.startsWith('/mode/')) {
      const wanted = path.slice('/mode/'.length) as DevCalendarMode;
      if (!MODES.includes(wanted)) return send(res, 400, 'text/plain', `mode must be one of ${MODES.join(', ')}`);
      mode = wanted;
      return send(res, 200, 'text/plain', `mode ${mode}\n`);
    }

    if (mode === 'hang') return; // accept, read nothing, never answer
    if (mode === 'error500') return send(res, 500, 'text/plain', 'Internal Server Error');

    if (method === 'POST' && path === '/digest') return postDigest(req, res);
    if (method === 'GET' && path.startsWith('/timestamp/')) return getTimestamp(path.slice('/timestamp/'.length), res);
    if (method === 'GET' && path === '/') return send(res, 200, 'text/plain', homePage(), 'public, max-age=5');
    send(res, 404, 'text/plain', 'not found', 'public, max-age=3600');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else send(res, 500, 'text/plain', `dev calendar error: ${(err as Error).message}`);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  try {
    if (opts.publicUrl) {
      uri = opts.publicUrl.replace(/\/$/, '');
    } else {
      if (host.includes(':')) throw new InputError('bad_option', `an IPv6 host (${host}) cannot be named in a pending attestation; give publicUrl`);
      uri = `http://${host}:${port}${basePath}`;
    }
    const problem = checkPendingUri(uri);
    if (problem) throw new InputError('bad_option', problem, 'publicUrl');
  } catch (err) {
    server.close();
    throw err;
  }

  let closed: Promise<void> | null = null;
  return {
    url: uri,
    port,
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        if (round) {
          clearTimeout(round.timer);
          const r = round;
          round = null;
          for (const w of r.waiters) w.reject(new Error('dev calendar closed'));
        }
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
    mine,
    pendingCount: () => pending.size,
    setMode(m: DevCalendarMode): void {
      if (!MODES.includes(m)) throw new InputError('bad_option', `mode must be one of ${MODES.join(', ')}`);
      mode = m;
    },
    stats: () => ({
      digestsReceived: counters.digestsReceived,
      rounds: counters.rounds,
      pendingCommitments: pending.size,
      confirmedCommitments: confirmed.size,
      lastHeight: counters.lastHeight,
    }),
  };
}
