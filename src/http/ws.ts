/**
 * `/v1/ws`: the same state changes as `/v1/events`, one JSON text frame each (the stream
 * id in `id`). `?since=<stream id>` replays what came after it. The server pings every
 * 30 s and drops a client that did not answer the previous ping.
 */
import type { Duplex } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EventFeed } from './event-feed.js';

const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const PING_MS = 30_000;

export class EventSocketServer {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
  private readonly feed: EventFeed;
  private readonly alive = new WeakMap<WebSocket, boolean>();
  private readonly pinger: NodeJS.Timeout;

  constructor(feed: EventFeed) {
    this.feed = feed;
    this.pinger = setInterval(() => this.ping(), PING_MS);
    this.pinger.unref();
  }

  get clientCount(): number {
    return this.wss.clients.size;
  }

  /** Completes an upgrade the server has already authorized. */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer, since: string | null): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      void this.attach(ws, since);
    });
  }

  private async attach(ws: WebSocket, since: string | null): Promise<void> {
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
    subscription = await this.feed.subscribe((message) => {
      if (!open || ws.readyState !== ws.OPEN) return;
      ws.send(JSON.stringify(message));
      if (ws.bufferedAmount > MAX_BUFFERED_BYTES) ws.terminate();
    }, since);
    if (!open) subscription.close();
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
