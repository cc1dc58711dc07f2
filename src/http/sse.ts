/**
 * `GET /v1/events`: server-sent events. Each state change is one event whose `id:` is its
 * stream id (so EventSource resumes with `Last-Event-ID`) and whose `data:` is the change as
 * one line of JSON. A comment line every 15 s keeps proxies from closing an idle stream.
 */
import type { ServerResponse } from 'node:http';
import type { EventFeed, FeedMessage } from './event-feed.js';

/** A slow client whose unsent bytes pass this is dropped (it can resume with Last-Event-ID). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const HEARTBEAT_MS = 15_000;
/** How long EventSource waits before reconnecting. */
const RETRY_MS = 2000;

/** One SSE frame. JSON.stringify never emits a raw newline, so `data:` stays one line. */
export function sseFrame(message: FeedMessage): string {
  return `id: ${message.id}\ndata: ${JSON.stringify(message)}\n\n`;
}

export interface LiveStream {
  close(): void;
}

/** Streams the feed to one client until it goes away; returns a handle the server closes on shutdown. */
export async function streamEvents(res: ServerResponse, feed: EventFeed, since: string | null): Promise<LiveStream> {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'X-Content-Type-Options': 'nosniff',
  });
  res.write(`retry: ${RETRY_MS}\n: aer1-anchor events\n\n`);
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
  subscription = await feed.subscribe((message) => {
    if (done) return;
    res.write(sseFrame(message));
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      close();
      res.destroy();
    }
  }, since);
  if (done) subscription.close();
  return { close };
}
