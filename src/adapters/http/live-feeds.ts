/**
 * The live event feeds the HTTP server serves (SSE and WebSocket): one reader per shard
 * (redis.shards), one live feed over each (`?shard=i`) and one over all of them (K = 1: the
 * same one), and where a client resumes (`Last-Event-ID`, `?since=`).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { DaemonView } from '../view/daemon-view.js';
import { EventFeed, normalizeStreamId } from '../feed/event-feed.js';
import { LiveFeed, parseFeedPosition, type Feed } from '../feed/live-feed.js';
import { liveFailure, type ReplayFailure } from './live-clients.js';
import type { RequestRedis } from './request-redis.js';
import { HttpError } from './respond.js';
import type { LiveStream } from './sse.js';
import { EventSocketServer } from './ws.js';

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

export interface LiveFeeds {
  /** One reader per shard, started. */
  readonly readers: readonly EventFeed[];
  /** The WebSocket server of each feed. */
  readonly sockets: ReadonlyMap<Feed, EventSocketServer>;
  /** SSE streams open now. */
  readonly streams: Set<LiveStream>;
  /** What an SSE client is told when its replay fails. */
  readonly sseFailed: ReplayFailure;
  /** The feed a live request asks for, and where it resumes. */
  pick(req: IncomingMessage, query: URLSearchParams): { feed: Feed; since: string | null };
}

export async function openLiveFeeds(daemon: DaemonView, requests: RequestRedis, log: Logger): Promise<LiveFeeds> {
  const cfg = daemon.config.http;
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
  const pick = (req: IncomingMessage, query: URLSearchParams): { feed: Feed; since: string | null } => {
    const shard = shardParam(query, feeds.length);
    return { feed: shard === null ? all : feeds[shard]!, since: resumeFrom(req, query, shard === null ? feeds.length : 1) };
  };
  return { readers, sockets, streams: new Set<LiveStream>(), sseFailed: replayFailed('SSE'), pick };
}
