/**
 * A development RFC 3161 timestamp authority on loopback: `POST /` with a DER
 * `TimeStampReq` (`application/timestamp-query`) answers a `TimeStampResp`
 * (`application/timestamp-reply`) signed by a TSA certificate from its own dev CA.
 * The CA certificate (PEM) is what a verifier gives as `--tsa-ca`.
 *
 * Not for production: the keys live in memory and are made anew at each start.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { makeDevCa, makeDevTsaCertificate, type DevCertificate, type TsaCertificateOptions } from './dev-pki.js';
import { TsaResponder, type ResponderOptions } from './tsa-responder.js';

/** A `TimeStampReq` is about 60 bytes; anything much larger is not one. */
export const MAX_REQUEST_BYTES = 4096;
export const CA_FILE = 'tsa-ca.pem';
export const TSA_CERT_FILE = 'tsa-cert.pem';

export interface DevTsaOptions extends ResponderOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Folder to write `tsa-ca.pem` (and `tsa-cert.pem`) into; none: nothing is written. */
  readonly outDir?: string;
  /** The TSA certificate's shape (tests make broken ones). */
  readonly certificate?: TsaCertificateOptions;
  /** Serve with this CA (default: a new one). */
  readonly ca?: DevCertificate;
}

export interface DevTsa {
  readonly url: string;
  readonly ca: DevCertificate;
  readonly tsa: DevCertificate;
  /** The CA certificate file, when `outDir` was given. */
  readonly caFile: string | undefined;
  /** Requests answered so far. */
  readonly answered: () => number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' }).end(text + '\n');
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > MAX_REQUEST_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function startDevTsa(opts: DevTsaOptions = {}): Promise<DevTsa> {
  const ca = opts.ca ?? (await makeDevCa());
  const tsa = await makeDevTsaCertificate(ca, opts.certificate);
  const responder = new TsaResponder(tsa, opts);
  let answered = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST') return send(res, 405, 'POST a TimeStampReq');
      const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/timestamp-query') return send(res, 415, 'Content-Type must be application/timestamp-query');
      const body = await readBody(req);
      if (body === null) return send(res, 413, `a TimeStampReq is at most ${MAX_REQUEST_BYTES} bytes`);
      const answer = await responder.respond(body);
      answered++;
      res.writeHead(200, { 'Content-Type': 'application/timestamp-reply', 'Content-Length': answer.length }).end(answer);
    })().catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, `dev TSA: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  let caFile: string | undefined;
  if (opts.outDir !== undefined) {
    caFile = join(opts.outDir, CA_FILE);
    try {
      mkdirSync(opts.outDir, { recursive: true });
      writeFileSync(caFile, ca.pem);
      writeFileSync(join(opts.outDir, TSA_CERT_FILE), tsa.pem);
    } catch (err) {
      await new Promise((resolve) => server.close(resolve));
      throw err;
    }
  }
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}/`,
    ca,
    tsa,
    caFile,
    answered: () => answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
