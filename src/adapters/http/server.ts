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
import { TokenAuth } from './auth.js';
import type { DaemonView } from '../view/daemon-view.js';
import { ANY_HOST_PATHS, HostCheck } from './host-check.js';
import { LiveClients } from './live-clients.js';
import { openLiveFeeds, type LiveFeeds } from './live-feeds.js';
import { Readiness } from './readiness.js';
import { RequestRedis } from './request-redis.js';
import { HttpError, JSON_TYPE, refusalError, send, sendError } from './respond.js';
import { checkQuery, findRoute, splitUrl, type RequestContext, type Route } from './router.js';
import { routeTable } from './routes.js';
import { gaugeSource } from './stats.js';
import { loadStaticFiles } from './static-files.js';

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

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
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
  const feeds = await openLiveFeeds(daemon, requests, log);
  const readiness = new Readiness(requests.redis, daemon.state.shards.map((s) => s.keys.probe), cfg.redisTimeoutMs);
  const gauges = { ...gaugeSource(view), redisWritable: async () => (await readiness.redisProblem()) === null };
  const live = new LiveClients(cfg.maxLiveClients, daemon.metrics.registry);
  const routes = routeTable({ daemon, view, files, readiness, gauges, live, feeds });

  const inFlight = { count: 0 };
  const server = createServer({ requestTimeout: 60_000 }, requestHandler({ routes, hosts, auth, log, redisTimeoutMs: cfg.redisTimeoutMs, inFlight }));
  const acceptSocket: SocketAcceptor = (req, query) => {
    const { feed, since } = feeds.pick(req, query);
    return (socket, head) => feeds.sockets.get(feed)!.accept(req, socket, head, since);
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
      closing ??= closeServer(server, inFlight, live, feeds, requests);
      return closing;
    },
  };
}

/** Live clients first (they never finish on their own), then requests in flight, the feeds' readers and the request connection. */
async function closeServer(server: Server, inFlight: InFlight, live: LiveClients, feeds: LiveFeeds, requests: RequestRedis): Promise<void> {
  live.detach();
  for (const s of feeds.sockets.values()) s.close();
  for (const s of feeds.streams) s.close();
  feeds.streams.clear();
  const { closed } = await drain(server, inFlight);
  await Promise.all(feeds.readers.map((f) => f.close()));
  await requests.close();
  await closed;
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
