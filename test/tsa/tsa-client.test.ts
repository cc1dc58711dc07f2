/**
 * Our RFC 3161 client against our dev TSA (and hostile HTTP answers): a token for a
 * checkpoint's note body comes back checked, `openssl ts -verify` accepts the very same
 * token, and the request is bounded in time, size and place (no redirect is followed).
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TsaClient, TsaError } from '../../src/adapters/tsa/index.js';
import { generateSignerKey, parseNote } from '../../src/core/log/note.js';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { checkCheckpointTimestamps, parseTsaTrustAnchors } from '../../src/core/tsa/index.js';
import { startDevTsa, type DevTsa } from '../../src/dev/tsa/index.js';
import { tempDir } from '../helpers/harness.js';
import { opensslVerifyToken } from './openssl-tsa-wrapper.js';

const dir = tempDir('tsa-client');
const { signer } = generateSignerKey('example.com/aer1');
const note = signCheckpoint({ origin: 'example.com/aer1', size: 7, root: createHash('sha256').update('root').digest(), extensions: [] }, signer);
const body = new TextEncoder().encode(parseNote(note).text);
let tsa: DevTsa;
const servers: Server[] = [];

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/tsa`;
}

async function refusal(promise: Promise<unknown>): Promise<TsaError> {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(TsaError);
  return err as TsaError;
}

beforeAll(async () => {
  tsa = await startDevTsa({ outDir: dir });
});
afterAll(async () => {
  await tsa.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('TsaClient against the dev TSA', () => {
  it('time-stamps a checkpoint note body: PASS with the dev CA given, and the proof field checks the same', async () => {
    const anchors = parseTsaTrustAnchors(tsa.ca.pem);
    const got = await new TsaClient(tsa.url, { trustAnchors: anchors }).timestamp(body);
    expect(got.check.status).toBe('PASS');
    expect(got.check.tsa).toBe('O=aer1-anchor development, CN=aer1-anchor dev TSA');
    expect(Math.abs(Date.parse(got.check.genTime!) - Date.now())).toBeLessThan(60_000);

    const results = await checkCheckpointTimestamps(parseNote(note).text, [{ url: tsa.url, token: Buffer.from(got.token).toString('base64') }], anchors);
    expect(results).toEqual([expect.objectContaining({ url: tsa.url, status: 'PASS', genTime: got.check.genTime, tsa: got.check.tsa })]);
  });

  it('keeps a sound token as "untrusted" when no TSA CA is given, never PASS', async () => {
    const got = await new TsaClient(tsa.url).timestamp(body);
    expect(got.check.status).toBe('untrusted');
    expect(got.check.detail).toMatch(/^TSA not trusted: no TSA CA given \(give --tsa-ca\)/);
  });

  it('openssl ts -verify accepts the token our client obtained (-token_in, -data of the note body, -CAfile of the dev CA file)', async () => {
    const got = await new TsaClient(tsa.url).timestamp(body);
    const verdict = await opensslVerifyToken(dir, got.token, body, tsa.caFile!);
    expect(verdict.output).toContain('Verification: OK');
    // and openssl refuses it for another body, so the check above can fail
    const other = await opensslVerifyToken(dir, got.token, new TextEncoder().encode('example.com/aer1\n8\nAAAA\n'), tsa.caFile!, 'other');
    expect(other.ok).toBe(false);
  });
});

describe('TsaClient bounds', () => {
  it('does not follow a redirect to another host', async () => {
    const url = await serve((_req, res) => res.writeHead(307, { Location: 'http://127.0.0.2:9/elsewhere' }).end());
    const err = await refusal(new TsaClient(url).timestamp(body));
    expect(err.code).toBe('http_status');
    expect(err.message).toMatch(/a redirect to http:\/\/127\.0\.0\.2:9\/elsewhere, not followed/);
  });

  it('aborts an answer over the size cap while it streams', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' });
      res.write(Buffer.alloc(3000));
      res.end(Buffer.alloc(3000));
    });
    const err = await refusal(new TsaClient(url, { maxResponseBytes: 4096 }).timestamp(body));
    expect(err.code).toBe('too_large');
  });

  it('gives up on a TSA that never answers, at the deadline', async () => {
    const url = await serve(() => undefined);
    const started = Date.now();
    const err = await refusal(new TsaClient(url, { timeoutMs: 300 }).timestamp(body));
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses an answer that is not application/timestamp-reply, and one that is not a TimeStampResp', async () => {
    const html = await serve((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>'));
    expect((await refusal(new TsaClient(html).timestamp(body))).code).toBe('bad_response');
    const junk = await serve((_req, res) => res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' }).end('not DER'));
    const err = await refusal(new TsaClient(junk).timestamp(body));
    expect(err.code).toBe('bad_response');
    expect(err.message).toMatch(/not a DER TimeStampResp/);
  });

  it('refuses a replayed answer: a granted token for another request carries another nonce', async () => {
    const replayed = await new Promise<Buffer>((resolve, reject) => {
      // one real answer from the dev TSA, captured and served again
      void (async () => {
        const { encodeTimeStampRequest, nonceFromRandom } = await import('../../src/core/tsa/index.js');
        const res = await fetch(tsa.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/timestamp-query' },
          body: encodeTimeStampRequest(body, nonceFromRandom(new Uint8Array(8).fill(7))),
        });
        resolve(Buffer.from(await res.arrayBuffer()));
      })().catch(reject);
    });
    const url = await serve((_req, res) => res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' }).end(replayed));
    const err = await refusal(new TsaClient(url).timestamp(body));
    expect(err.code).toBe('bad_token');
    expect(err.message).toMatch(/nonce 0707070707070707 is not the one we sent/);
  });

  it('reports the TSA\'s refusal with its failure info', async () => {
    const { TsaResponder } = await import('../../src/dev/tsa/index.js');
    const rejection = await new TsaResponder(tsa.tsa).respond(new Uint8Array([0x30, 0x00]));
    const url = await serve((_req, res) => res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' }).end(rejection));
    const err = await refusal(new TsaClient(url).timestamp(body));
    expect(err.code).toBe('refused');
    expect(err.message).toMatch(/answered rejection: badDataFormat: not a DER TimeStampReq/);
  });

  it('refuses a token whose genTime is an hour before the request (a TSA clock behind ours)', async () => {
    const late = await startDevTsa({ now: () => new Date(Date.now() - 3_600_000) });
    try {
      const err = await refusal(new TsaClient(late.url).timestamp(body));
      expect(err.code).toBe('bad_token');
      expect(err.message).toMatch(/genTime \S+ is before the request was sent .*the TSA's clock is behind$/);
    } finally {
      await late.close();
    }
  });

  it('refuses a URL that is not http(s) or carries credentials', () => {
    expect(() => new TsaClient('ftp://127.0.0.1/')).toThrow(/http or https/);
    expect(() => new TsaClient('http://u:p@127.0.0.1/')).toThrow(/no credentials/);
  });
});
