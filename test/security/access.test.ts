/**
 * Access to the HTTP surfaces of a daemon started the way `aer1-anchord` starts it
 * (runDaemon): loopback unless configured otherwise, the token required for writes (and
 * for every read when configured), request bodies bounded whether declared or streamed.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/adapters/config/config.js';
import { createLogger } from '../../src/daemon/logger.js';
import { runDaemon, type RunningDaemon } from '../../src/daemon/main.js';
import type { DaemonView } from '../../src/adapters/view/daemon-view.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { withHttp } from '../http/fixture.js';
import { SHARED_REDIS_URL, receiptFields, startRelays, tempDir, testConfig } from '../helpers/harness.js';
import { checkedFetch } from '../helpers/openapi.js';
import { join } from 'node:path';

const TOKEN = 'access-test-token-9f8e7d6c5b4a';
const READS = ['/v1/stats', '/v1/info', '/v1/timeline', '/v1/anchors', '/v1/anchors/x', '/v1/anchors/x/proof', '/v1/webhooks', '/metrics'];
const PUBLIC = ['/livez', '/readyz', '/', '/app.js', '/style.css', '/openapi.json', '/verify', '/verify.js', '/verify.bundle.js'];

/** True when a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** A raw POST: `declare` sends Content-Length, otherwise the body streams chunked. */
function rawPost(url: string, body: Buffer, declare: boolean, token: string | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (declare) headers['Content-Length'] = String(body.length);
    const req = request(`${url}/v1/anchors`, { method: 'POST', headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    // in pieces, so a streamed body crosses the limit mid-way
    for (let i = 0; i < body.length; i += 512) req.write(body.subarray(i, i + 512));
    req.end();
  });
}

function view(running: RunningDaemon, http: Partial<Config['http']>): DaemonView {
  return withHttp(running.daemon, http);
}

describe('HTTP access', () => {
  let relay: DevRelay;
  let running: RunningDaemon;
  const quiet = createLogger('silent', new Writable({ write: (_c, _e, done) => done() }));
  const extra: HttpServer[] = [];

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    // http.host left at its default
    const base = testConfig({ relays: [relay], overrides: { redis: { url: SHARED_REDIS_URL }, nostr: { keyFile }, http: { enabled: true, port: 0, token: TOKEN, readsRequireToken: true, maxBodyBytes: 2048 } } });
    running = await runDaemon(base, quiet);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(extra.map((s) => s.close()));
    await running?.stop();
    await relay?.close();
  });

  it('binds to loopback by default: 127.0.0.1 in the built-in defaults', async () => {
    expect(loadConfig({ env: {} }).http.host).toBe('127.0.0.1');
    const url = new URL(running.httpUrl!);
    expect(url.hostname).toBe('127.0.0.1');
    const port = Number(url.port);
    expect(await accepts('127.0.0.1', port)).toBe(true);
    // bound to 127.0.0.1 itself, not to every address: another loopback address is not served
    expect(await accepts('127.0.0.2', port)).toBe(false);
    const external = Object.values(networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4' && !a.internal).map((a) => a!.address);
    for (const address of external) expect(await accepts(address, port), address).toBe(false);
    console.log(`access: served on 127.0.0.1 only; refused on 127.0.0.2 and on ${external.length} non-loopback address(es) ${external.join(', ')}`);
  });

  it('binds where configured (http.host 127.0.0.2) and only there', async () => {
    const server = await startHttpServer({ daemon: view(running, { host: '127.0.0.2' }), log: quiet });
    extra.push(server);
    expect(server.url).toBe(`http://127.0.0.2:${server.port}`);
    expect((await checkedFetch(`${server.url}/livez`)).status).toBe(200);
    expect(await accepts('127.0.0.1', server.port)).toBe(false);
  });

  it('with reads requiring the token: every read refused without it or with a wrong one, served with it; health and page public', async () => {
    for (const path of READS) {
      expect((await checkedFetch(`${running.httpUrl}${path}`)).status, path).toBe(401);
      expect((await checkedFetch(`${running.httpUrl}${path}`, { headers: { Authorization: `Bearer ${TOKEN}x` } })).status, path).toBe(401);
      expect((await checkedFetch(`${running.httpUrl}${path}`, { headers: { Authorization: `Bearer ${TOKEN.slice(0, -1)}` } })).status, path).toBe(401);
      expect([200, 404]).toContain((await checkedFetch(`${running.httpUrl}${path}`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status);
      expect([200, 404]).toContain((await checkedFetch(`${running.httpUrl}${path}?access_token=${TOKEN}`)).status);
    }
    const events = await checkedFetch(`${running.httpUrl}/v1/events`);
    expect(events.status).toBe(401);
    for (const path of PUBLIC) expect((await checkedFetch(`${running.httpUrl}${path}`)).status, path).toBe(200);
    // a WebSocket upgrade without the token
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${running.httpUrl}/v1/ws`, { headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('upgrade', () => resolve(101));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(401);
  });

  it('writes need the token in the header: refused without it, with a wrong one, or with it only in the query', async () => {
    const body = JSON.stringify(receiptFields());
    const post = (headers: Record<string, string>, q = ''): Promise<Response> => checkedFetch(`${running.httpUrl}/v1/anchors${q}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
    expect((await post({})).status).toBe(401);
    expect((await post({ Authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await post({ Authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` })).status).toBe(401);
    expect((await post({}, `?access_token=${TOKEN}`)).status).toBe(401);
    expect((await post({ Authorization: `Bearer ${TOKEN}` })).status).toBe(202);
  });

  it('with reads open, reads need no token but writes still do; with no token configured, writes are refused', async () => {
    const open = await startHttpServer({ daemon: view(running, { readsRequireToken: false }), log: quiet });
    const none = await startHttpServer({ daemon: view(running, { readsRequireToken: false, token: null }), log: quiet });
    extra.push(open, none);
    for (const path of READS) expect([200, 404], path).toContain((await checkedFetch(`${open.url}${path}`)).status);
    const post = (url: string, auth: string | null): Promise<Response> =>
      checkedFetch(`${url}/v1/anchors`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...(auth ? { Authorization: auth } : {}) }, body: JSON.stringify(receiptFields()) });
    expect((await post(open.url, null)).status).toBe(401);
    expect((await post(none.url, null)).status).toBe(403);
    expect((await post(none.url, `Bearer ${TOKEN}`)).status).toBe(403);
  });

  it('bounds request bodies (2 KiB here), declared or streamed, and keeps serving', async () => {
    const big = Buffer.from(JSON.stringify({ subject: 'receipt', pad: 'x'.repeat(4096) }));
    expect(await rawPost(running.httpUrl!, big, true, TOKEN)).toBe(413);
    expect(await rawPost(running.httpUrl!, big, false, TOKEN)).toBe(413);
    // a 64 MiB declaration is refused before a byte of it is read
    expect(await new Promise<number>((resolve, reject) => {
      const req = request(`${running.httpUrl}/v1/anchors`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(64 * 1024 * 1024), Authorization: `Bearer ${TOKEN}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
      req.write('{');
    })).toBe(413);
    // without the token, a big body is refused as unauthorized, not read
    expect(await rawPost(running.httpUrl!, big, true, null)).toBe(401);
    const ok = Buffer.from(JSON.stringify(receiptFields()));
    expect(await rawPost(running.httpUrl!, ok, false, TOKEN)).toBe(202);
    expect((await checkedFetch(`${running.httpUrl}/livez`)).status).toBe(200);
  });
});
