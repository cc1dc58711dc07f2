import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BitcoindRpcSource,
  BitcoinVerificationError,
  EsploraSource,
  HeadersFileSource,
  type HeaderSource,
  headerSourceFrom,
  headerSourceFromConfig,
} from '../../../../src/adapters/bitcoin/index.js';
import { type FakeServer, startBitcoind, startEsplora } from './fake-servers.js';
import { mineRegtestHeader } from './regtest-header.js';

const h1 = mineRegtestHeader(Buffer.alloc(32, 0x11));
const h2 = mineRegtestHeader(Buffer.alloc(32, 0x22));
const headers = new Map([
  [100, h1],
  [101, h2],
]);

async function failure(source: HeaderSource, height: number): Promise<BitcoinVerificationError> {
  try {
    await source.headerAt(height);
  } catch (e) {
    expect(e).toBeInstanceOf(BitcoinVerificationError);
    return e as BitcoinVerificationError;
  }
  throw new Error(`headerAt(${height}) succeeded`);
}

let dir: string;
const servers: FakeServer[] = [];
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ots-headers-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await Promise.all(servers.map((s) => s.close()));
});

describe('HeadersFileSource', () => {
  it('reads {"<height>": "<hex>"} and says which height is missing', async () => {
    const file = path.join(dir, 'headers.json');
    writeFileSync(file, JSON.stringify({ 100: h1.toString('hex') }));
    const source = new HeadersFileSource(file);
    expect((await source.headerAt(100)).equals(h1)).toBe(true);
    const e = await failure(source, 101);
    expect(e.code).toBe('bitcoin_missing_header');
    expect(e.transient).toBe(true);
    expect(e.message).toContain('101');
  });

  it('sees headers added to the file after it was created', async () => {
    const file = path.join(dir, 'growing.json');
    writeFileSync(file, '{}');
    const source = new HeadersFileSource(file);
    expect((await failure(source, 100)).code).toBe('bitcoin_missing_header');
    writeFileSync(file, JSON.stringify({ 100: h1.toString('hex') }));
    expect((await source.headerAt(100)).equals(h1)).toBe(true);
  });

  it('refuses an unreadable, non-JSON or malformed file', async () => {
    expect((await failure(new HeadersFileSource(path.join(dir, 'nope.json')), 1)).message).toMatch(/cannot read .*ENOENT/);
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, '{not json');
    expect((await failure(new HeadersFileSource(bad), 1)).message).toMatch(/not JSON/);
    writeFileSync(bad, JSON.stringify({ 100: 'abcd' }));
    expect((await failure(new HeadersFileSource(bad), 100)).code).toBe('bitcoin_bad_header');
    writeFileSync(bad, JSON.stringify({ '-1': h1.toString('hex') }));
    expect((await failure(new HeadersFileSource(bad), 100)).message).toMatch(/not a block height/);
  });

  it('works from a map in memory', async () => {
    expect((await new HeadersFileSource(headers).headerAt(101)).equals(h2)).toBe(true);
  });
});

describe('EsploraSource', () => {
  it('asks block-height then block/:hash/header under the base path', async () => {
    const server = await startEsplora(headers, '/prefix/api');
    servers.push(server);
    const source = new EsploraSource(server.url + '/');
    expect((await source.headerAt(101)).equals(h2)).toBe(true);
    expect(server.requests[0]).toBe('GET /prefix/api/block-height/101');
    expect(server.requests[1]).toMatch(/^GET \/prefix\/api\/block\/[0-9a-f]{64}\/header$/);
  });

  it('reports an unknown height as a missing header', async () => {
    const server = await startEsplora(headers);
    servers.push(server);
    const e = await failure(new EsploraSource(server.url), 5);
    expect(e.code).toBe('bitcoin_missing_header');
  });

  it('refuses a header that does not hash to the block hash it announced', async () => {
    const server = await startEsplora(headers, '/api', { corrupt: true });
    servers.push(server);
    expect((await failure(new EsploraSource(server.url), 100)).code).toBe('bitcoin_header_mismatch');
  });

  it('gives up after its deadline', async () => {
    const server = await startEsplora(headers, '/api', { hang: true });
    servers.push(server);
    const e = await failure(new EsploraSource(server.url, { timeoutMs: 200 }), 100);
    expect(e.code).toBe('bitcoin_source_error');
    expect(e.message).toMatch(/no answer within 200 ms/);
  });

  it('reports a refused connection as a source error', async () => {
    const server = await startEsplora(headers);
    await server.close();
    const e = await failure(new EsploraSource(server.url, { timeoutMs: 2000 }), 100);
    expect(e.code).toBe('bitcoin_source_error');
    expect(e.transient).toBe(true);
  });
});

describe('BitcoindRpcSource', () => {
  it('calls getblockhash and getblockheader with Basic auth from the URL', async () => {
    const server = await startBitcoind(headers, 'rpc user', 'p@ss:w/rd');
    servers.push(server);
    const source = new BitcoindRpcSource(server.url);
    expect((await source.headerAt(100)).equals(h1)).toBe(true);
    expect(server.requests[0]).toBe('getblockhash [100]');
    expect(server.requests[1]).toMatch(/^getblockheader \["[0-9a-f]{64}",false\]$/);
    expect(source.name).not.toContain('p@ss');
    expect(source.name).not.toContain('w%2Frd');
  });

  it('reads "height out of range" as a missing header', async () => {
    const server = await startBitcoind(headers, 'u', 'p');
    servers.push(server);
    const e = await failure(new BitcoindRpcSource(server.url), 999);
    expect(e.code).toBe('bitcoin_missing_header');
    expect(e.message).toMatch(/out of range/);
  });

  it('says when the credentials are refused', async () => {
    const server = await startBitcoind(headers, 'u', 'p');
    servers.push(server);
    const wrong = server.url.replace('u:p@', 'u:wrong@');
    const e = await failure(new BitcoindRpcSource(wrong), 100);
    expect(e.code).toBe('bitcoin_source_error');
    expect(e.message).toMatch(/HTTP 401/);
  });

  it('refuses a header that does not hash to the block hash it announced', async () => {
    const server = await startBitcoind(headers, 'u', 'p', { corrupt: true });
    servers.push(server);
    expect((await failure(new BitcoindRpcSource(server.url), 100)).code).toBe('bitcoin_header_mismatch');
  });

  it('gives up after its deadline', async () => {
    const server = await startBitcoind(headers, 'u', 'p', { hang: true });
    servers.push(server);
    expect((await failure(new BitcoindRpcSource(server.url, { timeoutMs: 200 }), 100)).message).toMatch(/no answer within 200 ms/);
  });
});

describe('choosing a source from settings', () => {
  it('prefers a headers file, then bitcoind, then Esplora', () => {
    expect(headerSourceFrom({ headersFile: '/x.json', bitcoindUrl: 'http://127.0.0.1:1', esploraUrl: 'http://127.0.0.1:2' })).toBeInstanceOf(HeadersFileSource);
    expect(headerSourceFrom({ bitcoindUrl: 'http://127.0.0.1:1', esploraUrl: 'http://127.0.0.1:2' })).toBeInstanceOf(BitcoindRpcSource);
    expect(headerSourceFrom({ esploraUrl: 'http://127.0.0.1:2' })).toBeInstanceOf(EsploraSource);
    expect(headerSourceFrom({})).toBeNull();
  });

  it('without any, the daemon gets a source whose lookups fail transiently', async () => {
    const e = await failure(headerSourceFromConfig({ headersFile: null, esploraUrl: null, bitcoindUrl: null }), 1);
    expect(e.transient).toBe(true);
  });
});
