/**
 * `GET /v1/events`: server-sent events. Each subject's state change is one event whose `id:`
 * is its event id (the stream id, or `<stream id>.<i>` inside a packed entry, or on the feed of
 * K shards every shard's, comma-separated: src/adapters/feed/live-feed.ts; so EventSource
 * resumes with `Last-Event-ID`, from the middle of an entry too) and whose `data:` is the change as
 * one line of JSON. A comment line every 15 s keeps proxies from closing an idle stream.
 * A replay cut at `http.maxReplay` ends the response; so does one Redis fails under (a comment
 * line names the cause); EventSource reconnects from its last id either way.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { messageText, type FeedMessage } from '../feed/event-feed.js';
import type { Feed, Subscription } from '../feed/live-feed.js';
import { MAX_BUFFERED_BYTES, roomIn, type ReplayFailure } from './live-clients.js';

const HEARTBEAT_MS = 15_000;
/** How long EventSource waits before reconnecting. */
const RETRY_MS = 2000;

/** One SSE frame. JSON.stringify never emits a raw newline, so `data:` stays one line. */
export function sseFrame(message: FeedMessage): string {
  return `id: ${message.id}\ndata: ${messageText(message)}\n\n`;
}

export interface LiveStream {
  close(): void;
}

/** Streams the feed to one client until it goes away; returns a handle the server closes on shutdown. */
export async function streamEvents(res: ServerResponse, feed: Feed, since: string | null, failed: ReplayFailure): Promise<LiveStream> {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'X-Content-Type-Options': 'nosniff',
  });
  res.write(`retry: ${RETRY_MS}\n: aer1-anchor events\n\n`);
  const socket = res.socket as Socket | null;
  let done = false;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  let subscription: { close(): void } | null = null;
  const close = (): void => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    subscription?.close();
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);
  res.on('error', close);
  let sub: Subscription;
  try {
    sub = await feed.subscribe(
      (message) => {
        if (done) return;
        res.write(sseFrame(message));
        // a client that does not keep up is dropped; it resumes with Last-Event-ID
        if (res.writableLength > MAX_BUFFERED_BYTES) {
          close();
          res.destroy();
        }
      },
      since,
      async () => !done && socket !== null && (await roomIn(socket)),
    );
  } catch (err) {
    // the feed let the subscriber go; what was sent stands, EventSource resumes from its last id
    const cause = failed(err).replace(/[\r\n]+/g, ' ');
    if (!done) {
      res.write(`: replay failed: ${cause}; reconnect with Last-Event-ID to go on\n\n`);
      close();
    }
    return { close };
  }
  subscription = sub;
  if (done) sub.close();
  else if (sub.cut) {
    res.write(': replay limit (http.maxReplay) reached; reconnect with Last-Event-ID to go on\n\n');
    close();
  }
  return { close };
}
