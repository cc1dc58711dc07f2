/**
 * The anchor log's C2SP tlog-tiles read API (log.enabled, docs/log.md), served from the log's
 * folder: `/v1/log/checkpoint`, `/v1/log/tile/<L>/<N>[.p/<W>]`, `/v1/log/tile/entries/<N>[.p/<W>]`
 * and `/v1/log/vkey`; with K shards the same under `/v1/log/<shard>/`. The checkpoint is
 * `text/plain; charset=utf-8` and not cached; tiles and bundles are `application/octet-stream`,
 * immutable, and served only once a checkpoint covers them.
 */
import { parseTilePath } from '../../core/log/tiles.js';
import { LogFolder } from '../log/log-folder.js';
import { HttpError, type Reply } from './respond.js';
import type { Route } from './router.js';

/** What the routes need of one shard's log. */
export interface ServedLog {
  readonly dir: string;
  readonly origin: string;
  readonly verifierKey: string;
}

const TEXT = 'text/plain; charset=utf-8';
const IMMUTABLE = 'public, max-age=31536000, immutable';

function notFound(what: string): HttpError {
  return new HttpError(404, 'not_found', what);
}

function checkpointOf(folder: LogFolder): NonNullable<ReturnType<LogFolder['checkpoint']>> {
  const cp = folder.checkpoint();
  if (cp === null) throw notFound('the log has no checkpoint yet');
  return cp;
}

function serveTile(folder: LogFolder, rel: string): Reply {
  const tile = parseTilePath(`tile/${rel}`);
  if (tile === null) throw notFound(`tile/${rel} is not a tlog-tiles path`);
  const bytes = folder.tile(tile, checkpointOf(folder).size);
  if (bytes === null) throw notFound(`tile/${rel}: no checkpoint covers it`);
  return { status: 200, body: bytes, headers: { 'Content-Type': 'application/octet-stream', 'Cache-Control': IMMUTABLE } };
}

function routesAt(base: string, log: ServedLog): Route[] {
  const folder = new LogFolder(log.dir);
  return [
    {
      method: 'GET',
      path: `${base}/checkpoint`,
      access: 'read',
      handler: async () => ({ status: 200, body: checkpointOf(folder).note, headers: { 'Content-Type': TEXT, 'Cache-Control': 'no-cache' } }),
    },
    {
      method: 'GET',
      path: `${base}/vkey`,
      access: 'read',
      handler: async () => ({ status: 200, body: `${log.verifierKey}\n`, headers: { 'Content-Type': TEXT, 'Cache-Control': 'public, max-age=3600' } }),
    },
    { method: 'GET', path: `${base}/tile/{tile+}`, access: 'read', handler: async ({ params }) => serveTile(folder, params.tile!) },
  ];
}

/** The log routes: `/v1/log/…` with one shard, `/v1/log/<shard>/…` with more; none when the log is off. */
export function logRoutes(logs: readonly ServedLog[]): Route[] {
  if (logs.length === 0) return [];
  if (logs.length === 1) return routesAt('/v1/log', logs[0]!);
  return logs.flatMap((log, i) => routesAt(`/v1/log/${i}`, log));
}
