/**
 * The dev relay's listening half: one HTTP server on host:port that serves the NIP-11
 * document and hands WebSocket upgrades to the relay; it stops and listens again on the
 * same port.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage as HttpRequest, type RequestListener, type Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';

export type ConnectionHandler = (ws: WebSocket, req: HttpRequest) => void;

/** NIP-11 on the same port: GET with Accept: application/nostr+json */
export function relayInfoResponder(infoText: string): RequestListener {
  return (req, res) => {
    const accept = String(req.headers.accept ?? '');
    if (req.method === 'GET' && accept.includes('application/nostr+json')) {
      res.writeHead(200, { 'content-type': 'application/nostr+json', 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'GET' });
      res.end(infoText);
      return;
    }
    res.writeHead(426, { 'content-type': 'text/plain' });
    res.end('a Nostr relay: connect with a WebSocket, or GET with Accept: application/nostr+json\n');
  };
}

export class RelayListener {
  private wss: WebSocketServer | undefined;
  private http: Server | undefined;
  /** The requested port until the first listen, then the bound one. */
  private boundPort: number;

  constructor(
    readonly host: string,
    port: number,
    private readonly onRequest: RequestListener,
    private readonly onConnection: ConnectionHandler,
  ) {
    this.boundPort = port;
  }

  get port(): number {
    return this.boundPort;
  }

  get listening(): boolean {
    return this.wss !== undefined;
  }

  async listen(): Promise<void> {
    const httpServer = createServer(this.onRequest);
    await new Promise<void>((resolve, reject) => {
      httpServer.once('listening', resolve);
      httpServer.once('error', reject);
      httpServer.listen(this.boundPort, this.host);
    });
    httpServer.on('error', () => undefined);
    const wss = new WebSocketServer({ server: httpServer, maxPayload: 1024 * 1024 });
    wss.on('error', () => undefined);
    wss.on('connection', this.onConnection);
    this.boundPort = (httpServer.address() as AddressInfo).port;
    this.wss = wss;
    this.http = httpServer;
  }

  /** Drops every connection and stops listening; a no-op when not listening. */
  async stop(): Promise<void> {
    const wss = this.wss;
    const httpServer = this.http;
    if (!wss || !httpServer) return;
    this.wss = undefined;
    this.http = undefined;
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    httpServer.closeAllConnections();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
  }
}
