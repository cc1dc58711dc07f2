/**
 * A webhook receiver on loopback for tests: records every request and answers with the
 * status a policy picks (by event id and attempt), so failures can be scripted. Status 0
 * never answers (a receiver that hangs). `down()` stops listening (connections refused),
 * `up()` listens again on the same port.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  /** The request target: path and query. */
  url: string;
  eventId: string;
  attempt: number;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

export interface Receiver {
  url: string;
  requests: Received[];
  /** Requests answered 2xx, in arrival order. */
  delivered(): Received[];
  policy: (eventId: string, nth: number) => number;
  /** Body of a refusal (default "receiver says no"); some receivers quote the request back. */
  refusal: (requestUrl: string) => string;
  /** Stops listening: connections are refused until `up()`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(policy: (eventId: string, nth: number) => number = () => 204): Promise<Receiver> {
  const seen = new Map<string, number>();
  const receiver: Receiver = {
    url: '',
    requests: [],
    delivered: () => receiver.requests.filter((r) => r.answered >= 200 && r.answered < 300),
    policy,
    refusal: () => 'receiver says no',
    down: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
    up: () => new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    }),
    close: () => new Promise((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const eventId = String(req.headers['x-aer1-event-id'] ?? '');
      const nth = (seen.get(eventId) ?? 0) + 1;
      seen.set(eventId, nth);
      const status = receiver.policy(eventId, nth);
      receiver.requests.push({ url: req.url ?? '', eventId, attempt: Number(req.headers['x-aer1-delivery-attempt']), headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered: status });
      if (status === 0) return; // hangs: the client's timeout ends it, or close()
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(status >= 300 ? receiver.refusal(req.url ?? '') : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${port}/hook`;
  return receiver;
}
