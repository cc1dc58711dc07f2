/** Loopback stand-ins for an Esplora API and bitcoind JSON-RPC, serving headers from a map. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { displayHex, sha256d } from '../../../../src/core/bitcoin/header.js';

export interface FakeServer {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

export interface FakeBehaviour {
  /** Never answer (to exercise deadlines). */
  hang?: boolean;
  /** Serve a header that does not hash to the announced block hash. */
  corrupt?: boolean;
  /** Allow cross-origin reads (`Access-Control-Allow-Origin: *`), as public Esplora instances do, for a page to fetch from. */
  cors?: boolean;
}

async function listen(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

function byHash(headers: Map<number, Buffer>): Map<string, Buffer> {
  return new Map([...headers.values()].map((h) => [displayHex(sha256d(h)), h]));
}

function served(header: Buffer, b: FakeBehaviour): Buffer {
  if (!b.corrupt) return header;
  const copy = Buffer.from(header);
  copy[79] = copy[79]! ^ 0xff;
  return copy;
}

export async function startEsplora(headers: Map<number, Buffer>, prefix = '/api', b: FakeBehaviour = {}): Promise<FakeServer> {
  const hashes = byHash(headers);
  const requests: string[] = [];
  const { server, port } = await listen((req, _body, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (b.hang) return;
    if (b.cors) res.setHeader('access-control-allow-origin', '*');
    const url = req.url ?? '';
    const height = new RegExp(`^${prefix}/block-height/(\\d+)$`).exec(url);
    const header = new RegExp(`^${prefix}/block/([0-9a-f]{64})/header$`).exec(url);
    if (height) {
      const h = headers.get(Number(height[1]));
      if (!h) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Block not found');
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end(displayHex(sha256d(h)));
    }
    if (header) {
      const h = hashes.get(header[1]!);
      if (!h) return void res.writeHead(404).end('Block not found');
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end(served(h, b).toString('hex'));
    }
    res.writeHead(404).end('not found');
  });
  return { url: `http://127.0.0.1:${port}${prefix}`, requests, close: closer(server) };
}

export async function startBitcoind(headers: Map<number, Buffer>, user: string, pass: string, b: FakeBehaviour = {}): Promise<FakeServer> {
  const hashes = byHash(headers);
  const requests: string[] = [];
  const expected = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const { server, port } = await listen((req, body, res) => {
    if (b.hang) return;
    if (req.headers.authorization !== expected) return void res.writeHead(401).end();
    const call = JSON.parse(body) as { id: unknown; method: string; params: unknown[] };
    requests.push(`${call.method} ${JSON.stringify(call.params)}`);
    const reply = (status: number, result: unknown, error: unknown = null): void =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ result, error, id: call.id }));
    if (call.method === 'getblockhash') {
      const h = headers.get(call.params[0] as number);
      if (!h) return reply(500, null, { code: -8, message: 'Block height out of range' });
      return reply(200, displayHex(sha256d(h)));
    }
    if (call.method === 'getblockheader') {
      const h = hashes.get(call.params[0] as string);
      if (!h) return reply(500, null, { code: -5, message: 'Block not found' });
      if (call.params[1] !== false) return reply(500, null, { code: -1, message: 'want verbose=false in this fake' });
      return reply(200, served(h, b).toString('hex'));
    }
    reply(404, null, { code: -32601, message: 'Method not found' });
  });
  return { url: `http://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${port}/`, requests, close: closer(server) };
}
