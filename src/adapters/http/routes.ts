/**
 * The HTTP server's route table: the pages, the probes and metrics, the status API, the live
 * events and the anchor log's files, in the order the router matches them.
 */
import type { IncomingMessage } from 'node:http';
import type { DaemonView } from '../view/daemon-view.js';
import type { GaugeSource } from '../metrics/metrics.js';
import { AnchorRoutes, parseLimit } from './anchors.js';
import type { LiveClients } from './live-clients.js';
import type { LiveFeeds } from './live-feeds.js';
import type { Readiness } from './readiness.js';
import { HttpError, json, type Reply } from './respond.js';
import type { Route } from './router.js';
import { streamEvents } from './sse.js';
import { collectStats } from './stats.js';
import { collectTimeline, daemonInfo, parseMinutes } from './overview.js';
import type { StaticFile } from './static-files.js';
import { logRoutes } from './log-routes.js';
import { WebhookLog, mergeHookOverviews } from '../webhooks/delivery-log.js';

const PAGE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** What the routes answer from: the daemon as the request connection sees it, and the server's parts. */
export interface RouteParts {
  /** The daemon itself (its metrics, health, config and anchor logs). */
  daemon: DaemonView;
  /** The daemon with every Redis read and write on the request connection. */
  view: DaemonView;
  files: ReadonlyMap<string, StaticFile>;
  readiness: Readiness;
  gauges: GaugeSource;
  live: LiveClients;
  feeds: LiveFeeds;
}

export function routeTable(p: RouteParts): Route[] {
  return [...pageRoutes(p.files), ...probeRoutes(p), ...apiRoutes(p), ...liveRoutes(p), webhooksRoute(p), ...logRoutes(p.daemon.anchorLogs ?? [])];
}

function pageRoutes(files: ReadonlyMap<string, StaticFile>): Route[] {
  const staticRoute = (path: string, query: readonly string[] = []): Route => ({
    method: 'GET',
    path,
    access: 'public',
    query,
    handler: async ({ req }) => serveStatic(req, files.get(path)!),
  });
  return [
    // the pages read these in the browser: the list's tab and filters, the subject /verify loads
    staticRoute('/', ['status', 'witness', 'limit']),
    staticRoute('/app.js'),
    staticRoute('/style.css'),
    staticRoute('/openapi.json'),
    staticRoute('/verify', ['key', 'pubkey', 'network']),
    staticRoute('/verify.js'),
    staticRoute('/verify.bundle.js'),
  ];
}

/** /livez, /readyz and /metrics. */
function probeRoutes({ daemon, readiness, gauges }: RouteParts): Route[] {
  return [
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
  ];
}

/** /v1/stats, /v1/info, /v1/timeline and /v1/anchors. */
function apiRoutes({ view, readiness }: RouteParts): Route[] {
  const anchors = new AnchorRoutes(view, { onWriteRefused: (r) => readiness.noteRefusal(r) });
  return [
    { method: 'GET', path: '/v1/stats', access: 'read', handler: async () => json(200, await collectStats(view)) },
    { method: 'GET', path: '/v1/info', access: 'read', handler: async () => json(200, daemonInfo(view)) },
    { method: 'GET', path: '/v1/timeline', access: 'read', query: ['minutes'], handler: async ({ query }) => json(200, await collectTimeline(view, parseMinutes(query.get('minutes')))) },
    { method: 'GET', path: '/v1/anchors', access: 'read', query: ['status', 'witness', 'backend', 'cursor', 'limit'], handler: (c) => anchors.list(c) },
    { method: 'POST', path: '/v1/anchors', access: 'write', handler: (c) => anchors.post(c) },
    { method: 'GET', path: '/v1/anchors/{key}', access: 'read', handler: (c) => anchors.get(c) },
    { method: 'GET', path: '/v1/anchors/{key}/proof', access: 'read', handler: (c) => anchors.proof(c) },
  ];
}

/** /v1/events (SSE) and /v1/ws (the WebSocket's GET; its upgrade is the server's). */
function liveRoutes({ live, feeds }: RouteParts): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/events',
      access: 'read',
      query: ['since', 'shard'],
      streaming: true,
      handler: async ({ req, res, query }) => {
        const { feed, since } = feeds.pick(req, query);
        const release = live.admit();
        res.on('close', release);
        const stream = await streamEvents(res, feed, since, feeds.sseFailed);
        feeds.streams.add(stream);
        res.on('close', () => feeds.streams.delete(stream));
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
  ];
}

function webhooksRoute({ daemon, view }: RouteParts): Route {
  const webhookLogs = daemon.state.shards.map((s) => new WebhookLog(view.redis, s.keys.base));
  return {
    method: 'GET',
    path: '/v1/webhooks',
    access: 'read',
    query: ['limit'],
    handler: async ({ query }) => {
      const limit = query.has('limit') ? parseLimit(query.get('limit')) : 20;
      const urls = daemon.config.webhooks.map((h) => h.url);
      return json(200, { hooks: mergeHookOverviews(await Promise.all(webhookLogs.map((l) => l.overview(urls, limit))), limit) });
    },
  };
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
