/**
 * The daemon's HTTP surfaces on node:http: the status API, live events (SSE and WebSocket),
 * Prometheus metrics, health probes, the OpenAPI document and the status page.
 * Loopback by default; the bearer token guards writes, and reads when configured.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { redisRefusal } from '../redis/redis-refusal.js';
import { ConflictError, InputError, UsageError } from '../../core/errors/errors.js';
import { AnchorRoutes, parseLimit } from './anchors.js';
import { TokenAuth } from './auth.js';
import type { DaemonView } from '../view/daemon-view.js';
import { EventFeed, normalizeStreamId } from '../feed/event-feed.js';
import { LiveFeed, parseFeedPosition, type Feed } from '../feed/live-feed.js';
import { ANY_HOST_PATHS, HostCheck } from './host-check.js';
import { LiveClients, liveFailure, type ReplayFailure } from './live-clients.js';
import { Readiness } from './readiness.js';
import { RequestRedis } from './request-redis.js';
import { HttpError, JSON_TYPE, json, refusalError, send, sendError, type Reply } from './respond.js';
import { checkQuery, findRoute, splitUrl, type RequestContext, type Route } from './router.js';
import { streamEvents, type LiveStream } from './sse.js';
import { collectStats, gaugeSource } from './stats.js';
import { collectTimeline, daemonInfo, parseMinutes } from './overview.js';
import { loadStaticFiles, type StaticFile } from './static-files.js';
import { EventSocketServer } from './ws.js';
import { logRoutes } from './log-routes.js';
import { WebhookLog, mergeHookOverviews } from '../webhooks/delivery-log.js';

export interface HttpServerOptions {
  daemon: DaemonView;
  log: Logger;
}

export interface HttpServer {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** SSE and WebSocket clients connected now. */
  readonly liveClients: number;
  close(): Promise<void>;
}

const PAGE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** `?shard=i` of the live feed (redis.shards): null when absent (every shard); 400 unless an integer 0–K-1. */
function shardParam(query: URLSearchParams, shards: number): number | null {
  const text = query.get('shard');
  if (text === null) return null;
  if (!/^\d{1,3}$/.test(text) || Number(text) >= shards) throw new HttpError(400, 'bad_parameter', `shard must be an integer 0–${shards - 1} (redis.shards is ${shards}), got ${JSON.stringify(text.slice(0, 64))}`, 'shard');
  return Number(text);
}

/**
 * Where a live client resumes, from `Last-Event-ID` or `?since=`: a stream id on one shard's
 * feed, a merged position (K ids, comma-separated) on the feed of K > 1 shards; 400 when it is not one.
 */
function resumeFrom(req: IncomingMessage, query: URLSearchParams, shards: number): string | null {
  const header = req.headers['last-event-id'];
  const text = (Array.isArray(header) ? header[0] : header) ?? query.get('since');
  if (text === undefined || text === null || text.trim() === '') return null;
  const field = header !== undefined ? 'Last-Event-ID' : 'since';
  if (shards === 1) {
    const id = normalizeStreamId(text);
    if (!id) throw new HttpError(400, 'bad_parameter', `not a stream id (like 1700000000000-0 or 1700000000000-0.5): ${JSON.stringify(text.slice(0, 64))}`, field);
    return id;
  }
  const ids = parseFeedPosition(text, shards);
  if (!Array.isArray(ids)) {
    throw new HttpError(400, 'bad_parameter', `not a position in the feed of ${shards} shards (the id of one of its messages: ${shards} event ids, shard 0's first, comma-separated, like 1700000000000-0,1700000000002-1.5,…; ?shard=i follows one shard by its own ids): ${ids.problem}`, field);
  }
  return ids.join(',');
}

export async function startHttpServer(opts: HttpServerOptions): Promise<HttpServer> {
  const { daemon } = opts;
  const log = opts.log.child({ part: 'http' });
  const cfg = daemon.config.http;
  if (cfg.readsRequireToken && cfg.token === null) {
    throw new InputError('bad_config', 'reads require a token but no token is set (set http.token / AER1_HTTP_TOKEN)', 'config http.readsRequireToken');
  }
  const auth = new TokenAuth(cfg.token, cfg.readsRequireToken);
  const hosts = new HostCheck(cfg.allowedHosts, cfg.host);
  const files = loadStaticFiles();
  // every read and write of a request goes through this connection: bounded, never replayed
  const requests = await RequestRedis.open(daemon, cfg.redisTimeoutMs, log);
  const view = requests.view;
  // one reader per shard (redis.shards); one live feed over each (?shard=i) and one over all of them (K = 1: the same one).
  // Replays read through the request connection: one that Redis fails under ends within http.redisTimeoutMs, not when Redis is back.
  const readers = daemon.state.shards.map((s) => new EventFeed(daemon.redis, s.keys.events, log, { reads: requests.redis }));
  await Promise.all(readers.map((f) => f.start()));
  const feeds: Feed[] = readers.map((r) => new LiveFeed([r], log, { maxReplay: cfg.maxReplay }));
  const all: Feed = feeds.length === 1 ? feeds[0]! : new LiveFeed(readers, log, { maxReplay: cfg.maxReplay });
  /** One line per client whose replay Redis failed under (the cause, no stack); a fault of ours is logged whole. */
  const replayFailed = (client: 'WebSocket' | 'SSE'): ReplayFailure => (err) => {
    const { cause, ours } = liveFailure(err, cfg.redisTimeoutMs);
    if (ours) log.error({ err }, `${client} client closed: its replay failed`);
    else log.warn({ cause }, `${client} client closed: its replay could not read Redis`);
    return cause;
  };
  const sockets = new Map<Feed, EventSocketServer>([...new Set<Feed>([...feeds, all])].map((f) => [f, new EventSocketServer(f, replayFailed('WebSocket'))]));
  /** The feed a live request asks for, and where it resumes. */
  const liveFeed = (req: IncomingMessage, query: URLSearchParams): { feed: Feed; since: string | null } => {
    const shard = shardParam(query, feeds.length);
    return { feed: shard === null ? all : feeds[shard]!, since: resumeFrom(req, query, shard === null ? feeds.length : 1) };
  };
  const streams = new Set<LiveStream>();
  const sseFailed = replayFailed('SSE');
  const readiness = new Readiness(requests.redis, daemon.state.shards.map((s) => s.keys.probe), cfg.redisTimeoutMs);
  const anchors = new AnchorRoutes(view, { onWriteRefused: (r) => readiness.noteRefusal(r) });
  const webhookLogs = daemon.state.shards.map((s) => new WebhookLog(requests.redis, s.keys.base));
  const gauges = { ...gaugeSource(view), redisWritable: async () => (await readiness.redisProblem()) === null };
  const live = new LiveClients(cfg.maxLiveClients, daemon.metrics.registry);

  const staticRoute = (path: string, query: readonly string[] = []): Route => ({
    method: 'GET',
    path,
    access: 'public',
    query,
    handler: async ({ req }) => serveStatic(req, files.get(path)!),
  });

  const routes: Route[] = [
    // the pages read these in the browser: the list's tab and filters, the subject /verify loads
    staticRoute('/', ['status', 'witness', 'limit']),
    staticRoute('/app.js'),
    staticRoute('/style.css'),
    staticRoute('/openapi.json'),
    staticRoute('/verify', ['key', 'pubkey', 'network']),
    staticRoute('/verify.js'),
    staticRoute('/verify.bundle.js'),
    { method: 'GET', path: '/livez', access: 'public', handler: async () => json(200, { status: 'ok' }) },
    {
      method: 'GET',
      path: '/readyz',
      access: 'public',
      handler: async () => {
        const reasons: string[] = [];
        const redis = await readiness.redisProblem();
        if (redis) reasons.push(redis);
        if (!daemon.running) reasons.push('worker: the intake worker is not running');
        // failing witnesses do not make the daemon unready: it still takes and queues work, and retries them
        // /readyz is public: states and counts only; the error text is in /v1/stats, behind read access
        const witnesses = daemon.health.snapshot().map(({ lastError: _, ...w }) => w);
        const failing = witnesses.filter((w) => w.state === 'failing').map((w) => `${w.kind} ${w.url}`);
        const throttled = witnesses.filter((w) => w.state === 'throttled').map((w) => `${w.kind} ${w.url}`);
        if (reasons.length > 0) return json(503, { error: { code: 'not_ready', message: reasons.join('; ') }, failing, throttled, witnesses });
        return json(200, { status: 'ready', failing, throttled, witnesses });
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      access: 'read',
      handler: async () => {
        // servers sharing one daemon's metrics (a second listener) each read through their own connection
        daemon.metrics.attach(gauges);
        return { status: 200, body: await daemon.metrics.registry.metrics(), headers: { 'Content-Type': daemon.metrics.registry.contentType } };
      },
    },
    { method: 'GET', path: '/v1/stats', access: 'read', handler: async () => json(200, await collectStats(view)) },
    { method: 'GET', path: '/v1/info', access: 'read', handler: async () => json(200, daemonInfo(view)) },
    { method: 'GET', path: '/v1/timeline', access: 'read', query: ['minutes'], handler: async ({ query }) => json(200, await collectTimeline(view, parseMinutes(query.get('minutes')))) },
    { method: 'GET', path: '/v1/anchors', access: 'read', query: ['status', 'witness', 'backend', 'cursor', 'limit'], handler: (c) => anchors.list(c) },
    { method: 'POST', path: '/v1/anchors', access: 'write', handler: (c) => anchors.post(c) },
    { method: 'GET', path: '/v1/anchors/{key}', access: 'read', handler: (c) => anchors.get(c) },
    { method: 'GET', path: '/v1/anchors/{key}/proof', access: 'read', handler: (c) => anchors.proof(c) },
    {
      method: 'GET',
      path: '/v1/events',
      access: 'read',
      query: ['since', 'shard'],
      streaming: true,
      handler: async ({ req, res, query }) => {
        const { feed, since } = liveFeed(req, query);
        const release = live.admit();
        res.on('close', release);
        const stream = await streamEvents(res, feed, since, sseFailed);
        streams.add(stream);
        res.on('close', () => streams.delete(stream));
      },
    },
    {
      method: 'GET',
      path: '/v1/ws',
      access: 'read',
      query: ['since', 'shard'],
      handler: async () => {
        throw new HttpError(426, 'upgrade_required', 'this is a WebSocket endpoint: connect with Upgrade: websocket', undefined, { Upgrade: 'websocket', Connection: 'Upgrade' });
      },
    },
    {
      method: 'GET',
      path: '/v1/webhooks',
      access: 'read',
      query: ['limit'],
      handler: async ({ query }) => {
        const limit = query.has('limit') ? parseLimit(query.get('limit')) : 20;
        const urls = daemon.config.webhooks.map((h) => h.url);
        return json(200, { hooks: mergeHookOverviews(await Promise.all(webhookLogs.map((l) => l.overview(urls, limit))), limit) });
      },
    },
    ...logRoutes(daemon.anchorLogs ?? []),
  ];

  const inFlight = { count: 0 };
  const server = createServer({ requestTimeout: 60_000 }, requestHandler({ routes, hosts, auth, log, redisTimeoutMs: cfg.redisTimeoutMs, inFlight }));
  const acceptSocket: SocketAcceptor = (req, query) => {
    const { feed, since } = liveFeed(req, query);
    return (socket, head) => sockets.get(feed)!.accept(req, socket, head, since);
  };
  server.on('upgrade', upgradeHandler({ routes, hosts, auth, log, live, accept: acceptSocket }));
  const port = await listen(server, cfg.port, cfg.host);
  const url = `http://${hostForUrl(cfg.host)}:${port}`;
  log.debug({ url }, 'http server listening');

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    get liveClients() {
      return live.size;
    },
    close() {
      closing ??= (async () => {
        live.detach();
        for (const s of sockets.values()) s.close();
        for (const s of streams) s.close();
        streams.clear();
        const { closed } = await drain(server, inFlight);
        await Promise.all(readers.map((f) => f.close()));
        await requests.close();
        await closed;
      })();
      return closing;
    },
  };
}

interface Dispatch {
  routes: readonly Route[];
  hosts: HostCheck;
  auth: TokenAuth;
  log: Logger;
}

/** Requests being answered now; streams leave the count once they start (they never finish on their own). */
interface InFlight {
  count: number;
}

/** Host check, route, method, access and query checks, then the handler; every error answered by `replyError`. */
function requestHandler(d: Dispatch & { redisTimeoutMs: number; inFlight: InFlight }): (req: IncomingMessage, res: ServerResponse) => void {
  const { routes, hosts, auth, log, inFlight } = d;
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    let path = '?';
    // streams never finish on their own; only ordinary requests hold up a shutdown
    let counted = true;
    inFlight.count += 1;
    try {
      // before the path is even parsed: a rebound name learns nothing, not even a 400
      if (!ANY_HOST_PATHS.has((req.url ?? '/').split('?', 1)[0]!)) hosts.check(req);
      const url = splitUrl(req.url ?? '/');
      path = url.path;
      const match = findRoute(routes, req.method ?? 'GET', url.segments);
      if (match === null) throw new HttpError(404, 'not_found', `no such endpoint: ${req.method} ${url.path}`);
      if ('allow' in match) {
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.path} (allowed: ${match.allow.join(', ')})`, undefined, {
          Allow: match.allow.join(', '),
        });
      }
      auth.check(match.route.access, req, url.query);
      checkQuery(match.route, url.query);
      const ctx: RequestContext = { req, res, params: match.params, query: url.query };
      if (match.route.streaming) {
        counted = false;
        inFlight.count -= 1;
      }
      const reply = await match.route.handler(ctx);
      if (reply) send(res, reply);
    } catch (err) {
      replyError(res, err, log, d.redisTimeoutMs);
    } finally {
      if (counted) inFlight.count -= 1;
      // the path only: the query may carry the access token
      log.debug({ method: req.method, path, status: res.statusCode, ms: Date.now() - started }, 'request');
    }
  }
  return (req, res) => {
    void handle(req, res);
  };
}

/** Picks the feed of a /v1/ws upgrade and where it resumes (400 when it cannot); the returned call completes it. */
type SocketAcceptor = (req: IncomingMessage, query: URLSearchParams) => (socket: Duplex, head: Buffer) => void;

/** WebSocket upgrades: only /v1/ws, with the same host, access and query checks as its GET. */
function upgradeHandler(d: Dispatch & { live: LiveClients; accept: SocketAcceptor }): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const { routes, hosts, auth, log, live, accept } = d;
  return (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    try {
      hosts.check(req);
      const url = splitUrl(req.url ?? '/');
      if (url.path !== '/v1/ws') throw new HttpError(404, 'not_found', `no WebSocket endpoint at ${url.path} (use /v1/ws)`);
      auth.check('read', req, url.query);
      checkQuery(routes.find((r) => r.path === '/v1/ws')!, url.query);
      const upgrade = accept(req, url.query);
      socket.on('close', live.admit());
      upgrade(socket, head);
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, 'internal', 'internal error');
      if (!(err instanceof HttpError)) log.error({ err }, 'upgrade failed');
      rejectUpgrade(socket, e);
    }
  };
}

/** The operator's words for an address the HTTP server cannot take (one line, exit 2). */
function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const why: Record<string, string> = {
    EADDRINUSE: 'the address is already in use (another aer1-anchord, or another program?)',
    EACCES: 'permission denied (ports below 1024 need privileges)',
    EADDRNOTAVAIL: 'no interface of this machine has that address',
  };
  const reason = err.code ? why[err.code] : undefined;
  if (!reason) return err;
  return new UsageError(`the HTTP server cannot listen on ${where}: ${reason}; set http.host / http.port (AER1_HTTP_HOST / AER1_HTTP_PORT), or http.enabled false`, 'cannot_listen');
}

/** Listens on host:port; resolves with the port bound (port 0: any free one). */
async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException): void => reject(listenError(err, host, port));
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/**
 * Stops accepting, lets requests in flight finish (up to 2 s), then drops whatever is left,
 * kept-alive or not. `closed` settles when the server has closed.
 */
async function drain(server: Server, inFlight: InFlight): Promise<{ closed: Promise<void> }> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  for (let i = 0; i < 100 && inFlight.count > 0; i++) await new Promise((r) => setTimeout(r, 20));
  server.closeAllConnections();
  return { closed };
}

function serveStatic(req: IncomingMessage, file: StaticFile): Reply {
  const headers: Record<string, string> = { 'Content-Type': file.type, ETag: file.etag, 'Cache-Control': 'no-cache' };
  if (file.type.startsWith('text/html')) {
    headers['Content-Security-Policy'] = file.csp ?? PAGE_CSP;
    headers['Referrer-Policy'] = 'no-referrer';
  }
  if (req.headers['if-none-match'] === file.etag) return { status: 304, body: '', headers };
  return { status: 200, body: file.body, headers };
}

function replyError(res: ServerResponse, err: unknown, log: Logger, redisTimeoutMs: number): void {
  let e: HttpError;
  const refusal = redisRefusal(err);
  if (err instanceof HttpError) e = err;
  else if (err instanceof ConflictError) e = new HttpError(409, err.code, err.message);
  else if (err instanceof InputError) e = new HttpError(400, err.code, err.message, err.field);
  else if (refusal) e = refusalError(refusal, redisTimeoutMs);
  else {
    log.error({ err }, 'request failed');
    e = new HttpError(500, 'internal', 'internal error; see the daemon log');
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendError(res, e);
  // A refused body is not read to its end; the connection cannot be reused.
  if (e.status === 413) res.on('finish', () => res.socket?.destroySoon?.());
}

function rejectUpgrade(socket: Duplex, err: HttpError): void {
  const body = `${JSON.stringify(err.body())}\n`;
  const headers = {
    'Content-Type': JSON_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    ...err.headers,
  };
  const head = [`HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  socket.end(`${head}\r\n\r\n${body}`);
}
