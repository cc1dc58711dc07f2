/**
 * The dev calendar's HTTP side: the real server's `POST /digest` and `GET /timestamp/<hex>`
 * (same statuses, bodies and cache headers as otsserver/rpc.py), a text home page, and the
 * dev-only `POST /mine` and `POST /mode/<mode>`. Protocol answers obey the fault mode and
 * the behaviour switches (Not-found window, gzip, delay).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { checkMode, GARBAGE_ANSWER, OVERSIZED_BYTES, REDIRECT_HOST, type DevCalendarBehaviour, type DevCalendarMode } from './behaviour.js';
import type { CommitmentBook } from './commitment-book.js';

/** The real server refuses larger digests (otsserver/rpc.py `MAX_DIGEST_LENGTH`). */
export const MAX_DIGEST_LENGTH = 64;
export const PENDING_REASON = 'Pending confirmation in Bitcoin blockchain';
export const NOT_FOUND_REASON = 'Not found';

export interface HandlerDeps {
  basePath: string;
  book: CommitmentBook;
  mine(): Promise<unknown>;
  mode(): DevCalendarMode;
  setMode(m: DevCalendarMode): void;
  behaviour(): DevCalendarBehaviour;
  homePage(): string;
  /** Waits `ms` (cut short when the calendar closes). */
  sleep(ms: number): Promise<void>;
}

interface Answer {
  status: number;
  type: string;
  body: Buffer | string;
  cache?: string;
}

function send(res: ServerResponse, a: Answer, gzip = false): void {
  let bytes = typeof a.body === 'string' ? Buffer.from(a.body) : a.body;
  if (res.destroyed || res.writableEnded) return;
  res.statusCode = a.status;
  res.setHeader('Content-Type', a.type);
  if (gzip) {
    bytes = gzipSync(bytes);
    res.setHeader('Content-Encoding', 'gzip');
  }
  res.setHeader('Content-Length', bytes.length);
  if (a.cache) res.setHeader('Cache-Control', a.cache);
  res.end(bytes);
}

const text = (status: number, body: string, cache?: string): Answer => ({ status, type: 'text/plain', body, ...(cache ? { cache } : {}) });

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

/** `POST /digest`; `close`: the connection is closed after the answer (as the real server does on a bad length). */
async function postDigest(req: IncomingMessage, deps: HandlerDeps): Promise<{ answer: Answer; close: boolean }> {
  const header = req.headers['content-length'];
  const length = header !== undefined && /^[0-9]+$/.test(header) ? Number(header) : NaN;
  if (!Number.isSafeInteger(length)) return { answer: text(400, 'invalid Content-Length'), close: true };
  if (length > MAX_DIGEST_LENGTH) return { answer: text(400, 'digest too long'), close: true };
  const digest = await readBody(req, length);
  const bytes = await deps.book.submit(digest);
  return { answer: { status: 200, type: 'application/octet-stream', body: bytes }, close: false };
}

function getTimestamp(hex: string, deps: HandlerDeps): Answer {
  const forever = 'public, max-age=31536000';
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return text(400, 'commitment must be hex-encoded bytes', forever);
  const found = deps.book.lookup(hex, deps.behaviour().notFoundMs);
  if (found.state === 'complete') return { status: 200, type: 'application/octet-stream', body: found.upgrade, cache: forever };
  if (found.state === 'pending') return text(404, PENDING_REASON, 'public, max-age=60');
  return text(404, NOT_FOUND_REASON, 'public, max-age=60');
}

/** Dev endpoints: answered in every mode and never delayed or compressed. */
async function devEndpoint(method: string, path: string, deps: HandlerDeps): Promise<Answer | null> {
  if (method === 'POST' && path === '/mine') {
    return { status: 200, type: 'application/json', body: JSON.stringify(await deps.mine()) + '\n' };
  }
  if (method === 'POST' && path.startsWith('/mode/')) {
    let wanted: DevCalendarMode;
    try {
      wanted = checkMode(path.slice('/mode/'.length));
    } catch (err) {
      return text(400, (err as Error).message);
    }
    deps.setMode(wanted);
    return text(200, `mode ${wanted}\n`);
  }
  return null;
}

export function createHandler(deps: HandlerDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const raw = req.url ?? '/';
    const { basePath } = deps;
    if (basePath && raw !== basePath && !raw.startsWith(basePath + '/')) return send(res, text(404, 'not found'));
    const path = raw.slice(basePath.length) || '/';
    const method = req.method ?? 'GET';

    const dev = await devEndpoint(method, path, deps);
    if (dev) return send(res, dev);

    const mode = deps.mode();
    if (mode === 'hang') return; // accept, read nothing, never answer
    if (mode === 'error500') return send(res, text(500, 'Internal Server Error'));
    if (mode === 'garbage') return send(res, { status: 200, type: 'application/octet-stream', body: GARBAGE_ANSWER });
    if (mode === 'oversized') return send(res, { status: 200, type: 'application/octet-stream', body: Buffer.alloc(OVERSIZED_BYTES, 0xf0) });
    if (mode === 'redirect') {
      res.setHeader('Location', `${REDIRECT_HOST}${raw}`);
      return send(res, text(307, 'moved'));
    }

    let answer: Answer;
    let close = false;
    let protocol = true;
    if (method === 'POST' && path === '/digest') ({ answer, close } = await postDigest(req, deps));
    else if (method === 'GET' && path.startsWith('/timestamp/')) answer = getTimestamp(path.slice('/timestamp/'.length), deps);
    else {
      protocol = false;
      answer = method === 'GET' && path === '/' ? text(200, deps.homePage(), 'public, max-age=5') : text(404, 'not found', 'public, max-age=3600');
    }
    const behaviour = deps.behaviour();
    if (protocol && behaviour.delayMs > 0) await deps.sleep(behaviour.delayMs);
    if (close) res.setHeader('Connection', 'close');
    send(res, answer, protocol && behaviour.gzip);
  };
}

/** For the top-level error handler: a 500 when nothing was sent yet. */
export function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) res.destroy();
  else send(res, text(500, `dev calendar error: ${(err as Error).message}`));
}
