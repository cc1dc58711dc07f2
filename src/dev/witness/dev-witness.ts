/**
 * A development C2SP witness (tlog-witness) on loopback: `POST /add-checkpoint` with every
 * status of the spec (400, 403, 404, 409 + `text/x.tlog.size`, 422, 200 with a
 * cosignature/v1 line) and the monitoring read `GET /<hex SHA-256 of the origin>/checkpoint`.
 * State is durable per origin (WitnessStore); the check and the update run under the
 * origin's lock.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VerifierKey } from '../../core/log/note.js';
import { formatTlogSize, MAX_ADD_CHECKPOINT_BYTES, TLOG_SIZE_TYPE } from '../../core/witness/add-checkpoint.js';
import { cosign, type CosignerKey } from '../../core/witness/cosignature.js';
import { decideAddCheckpoint, requestOrigin, type Decision } from './witness-decision.js';
import { WitnessStore } from './witness-store.js';

export interface DevWitnessOptions {
  readonly host?: string;
  readonly port?: number;
  readonly stateDir: string;
  readonly key: CosignerKey;
  /** Origin → the log keys trusted for it. */
  readonly logs: ReadonlyMap<string, readonly VerifierKey[]>;
  /** POSIX seconds for the cosignature's time (default the clock). */
  readonly clock?: () => number;
  /** Called for each answer to add-checkpoint (status and reason), e.g. to print refusals. */
  readonly onAnswer?: (status: number, reason: string) => void;
}

export interface DevWitness {
  readonly url: string;
  readonly verifierKey: string;
  readonly store: WitnessStore;
  /** add-checkpoint requests answered, by status. */
  readonly answered: ReadonlyMap<number, number>;
  close(): Promise<void>;
}

/** Bounds the time a client may take to send its request. */
const REQUEST_TIMEOUT_MS = 10_000;

function send(res: ServerResponse, status: number, type: string, body: string): void {
  if (res.writableEnded) return;
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': bytes.length });
  res.end(bytes);
}

async function readCapped(req: IncomingMessage, cap: number): Promise<Buffer | null> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > cap) return null;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > cap) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, total);
}

export async function startDevWitness(options: DevWitnessOptions): Promise<DevWitness> {
  const store = new WitnessStore(options.stateDir);
  const clock = options.clock ?? ((): number => Math.floor(Date.now() / 1000));
  const answered = new Map<number, number>();
  const answer = (res: ServerResponse, status: number, type: string, body: string, reason: string): void => {
    answered.set(status, (answered.get(status) ?? 0) + 1);
    options.onAnswer?.(status, reason);
    send(res, status, type, body);
  };

  const addCheckpoint = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readCapped(req, MAX_ADD_CHECKPOINT_BYTES);
    if (body === null) {
      answer(res, 413, 'text/plain; charset=utf-8', `request over ${MAX_ADD_CHECKPOINT_BYTES} bytes\n`, 'too large');
      return;
    }
    const origin = requestOrigin(body) ?? '';
    const decision = await store.update<{ d: Decision; line?: string }>(origin, (record) => {
      const d = decideAddCheckpoint(body, options.logs, (o) => (o === origin ? record : null));
      if (d.status !== 200) return { persist: null, answer: { d } };
      // the origin read under the lock is the checkpoint's: requestOrigin reads the same line
      if (d.checkpoint.origin !== origin) return { persist: null, answer: { d: { status: 400, reason: 'origin line unreadable' } } };
      const line = cosign(d.noteText, options.key, BigInt(clock()));
      return { persist: { origin, size: d.checkpoint.size, root: d.checkpoint.root, checkpoint: d.note + line }, answer: { d, line } };
    });
    const d = decision.d;
    if (d.status === 200) answer(res, 200, 'text/plain; charset=utf-8', decision.line!, `cosigned ${d.checkpoint.origin} at size ${d.checkpoint.size}`);
    else if (d.status === 409) answer(res, 409, TLOG_SIZE_TYPE, formatTlogSize(d.knownSize), d.reason);
    else answer(res, d.status, 'text/plain; charset=utf-8', `${d.reason}\n`, d.reason);
  };

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const done = (p: Promise<void>): void => {
      p.catch((err: unknown) => send(res, 500, 'text/plain; charset=utf-8', `internal error: ${(err as Error).message}\n`));
    };
    if (path === '/add-checkpoint') {
      if (req.method !== 'POST') {
        res.setHeader('Allow', 'POST');
        send(res, 405, 'text/plain; charset=utf-8', 'POST only\n');
        return;
      }
      done(addCheckpoint(req, res));
      return;
    }
    const monitor = /^\/([0-9a-f]{64})\/checkpoint$/.exec(path);
    if (monitor && (req.method === 'GET' || req.method === 'HEAD')) {
      done(
        (async () => {
          const record = await store.readHash(monitor[1]!);
          if (record === null) send(res, 404, 'text/plain; charset=utf-8', 'never cosigned a checkpoint of this log\n');
          else send(res, 200, 'text/plain; charset=utf-8', record.checkpoint);
        })(),
      );
      return;
    }
    send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  });
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    verifierKey: options.key.verifierKey,
    store,
    answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
