/**
 * `/v1/ws`: the same state changes as `/v1/events`, one JSON text frame each (the event
 * id in `id`: the stream id, or `<stream id>.<i>` inside a packed entry; every shard's,
 * comma-separated, on the feed of K shards: src/adapters/feed/live-feed.ts). `?since=<id>`
 * replays what came after it; a replay cut at
 * `http.maxReplay` closes with code 4000 and a reason naming the id to resume from; one that
 * Redis fails under (away, timing out, refusing the read) closes with 1011 and the cause.
 * The server pings every 30 s and drops a client that did not answer the previous ping.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { messageText } from '../feed/event-feed.js';
import type { Feed, Subscription } from '../feed/live-feed.js';
import { MAX_BUFFERED_BYTES, roomIn, type ReplayFailure } from './live-clients.js';

const PING_MS = 30_000;
/** Close code of a replay cut at http.maxReplay (private-use range). */
export const REPLAY_CUT_CODE = 4000;
/** Close code of a replay Redis failed under (RFC 6455 §7.4.1: the server met a condition that kept it from serving). */
export const FEED_FAILED_CODE = 1011;

/**
 * The close reason of a cut replay. A reason holds 123 bytes (RFC 6455 §5.5), too few for the
 * merged position of many shards: then it points at the last message's id, the same position.
 */
export function cutReason(resumeFrom: string | null): string {
  const reason = `replay limit reached; resume with ?since=${resumeFrom}`;
  return Buffer.byteLength(reason) <= 123 ? reason : "replay limit reached; resume with ?since=<the last message's id>";
}

export class EventSocketServer {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
  private readonly feed: Feed;
  private readonly failed: ReplayFailure;
  private readonly alive = new WeakMap<WebSocket, boolean>();
  private readonly pinger: NodeJS.Timeout;

  constructor(feed: Feed, failed: ReplayFailure) {
    this.feed = feed;
    this.failed = failed;
    this.pinger = setInterval(() => this.ping(), PING_MS);
    this.pinger.unref();
  }

  get clientCount(): number {
    return this.wss.clients.size;
  }

  /** Completes an upgrade the server has already authorized. */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer, since: string | null): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // attach handles a failed replay itself; anything else that throws there is a fault of ours, logged, and the client dropped
      this.attach(ws, socket as Socket, since).catch((err: unknown) => {
        this.failed(err);
        ws.terminate();
      });
    });
  }

  private async attach(ws: WebSocket, socket: Socket, since: string | null): Promise<void> {
    this.alive.set(ws, true);
    ws.on('pong', () => this.alive.set(ws, true));
    // Clients have nothing to say; frames they send are ignored.
    ws.on('message', () => undefined);
    ws.on('error', () => ws.terminate());
    let open = true;
    let subscription: { close(): void } | null = null;
    ws.on('close', () => {
      open = false;
      subscription?.close();
    });
    let sub: Subscription;
    try {
      sub = await this.feed.subscribe(
        (message) => {
          if (!open || ws.readyState !== ws.OPEN) return;
          ws.send(messageText(message));
          if (ws.bufferedAmount > MAX_BUFFERED_BYTES) ws.terminate();
        },
        since,
        async () => open && (await roomIn(socket)),
      );
    } catch (err) {
      // the feed let the subscriber go; what was sent stands, the client resumes from its last id
      const reason = this.failed(err);
      if (open) ws.close(FEED_FAILED_CODE, reason);
      return;
    }
    subscription = sub;
    if (!open) sub.close();
    else if (sub.cut) ws.close(REPLAY_CUT_CODE, cutReason(sub.resumeFrom));
  }

  private ping(): void {
    for (const ws of this.wss.clients) {
      if (this.alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      this.alive.set(ws, false);
      ws.ping();
    }
  }

  close(): void {
    clearInterval(this.pinger);
    for (const ws of this.wss.clients) ws.close(1001, 'server shutting down');
    this.wss.close();
  }
}
