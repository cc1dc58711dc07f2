/**
 * Issue 18, reproduction 7: the `Host` header was not checked, so a web page using DNS
 * rebinding (evil.example resolving to 127.0.0.1) could read subjects, /metrics and
 * /v1/webhooks from an operator's browser. The server now answers only to the names in
 * `http.allowedHosts` (loopback names by default) and the address it binds; any other Host
 * gets 421 before a route runs. Health probes stay answerable by any name.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import { receiptFields } from '../helpers/harness.js';
import { TOKEN, startStack, withHttp, type Stack } from '../http/fixture.js';

interface Answer {
  status: number;
  body: string;
  headers: Record<string, unknown>;
}

/** A request with a Host header of our choosing (fetch does not let a caller set it). */
function withHost(base: string, path: string, host: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: init.method ?? 'GET', headers: { ...init.headers, Host: host } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A WebSocket upgrade with a chosen Host: the status it is answered with. */
function upgradeStatus(base: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/ws`, {
      headers: { Host: host, Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve(101);
    });
    req.on('error', reject);
    req.end();
  });
}

/** An HTTP/1.0 request with no Host header at all, over a raw socket. */
function withoutHost(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('utf8')));
    s.on('end', () => resolve(text));
    s.on('error', reject);
    s.write(`GET ${path} HTTP/1.0\r\n\r\n`);
  });
}

let s: Stack;
let port: number;
const extra: HttpServer[] = [];

beforeAll(async () => {
  s = await startStack({ http: { readsRequireToken: false } });
  port = s.http.port;
});

afterAll(async () => {
  await Promise.all(extra.map((x) => x.close()));
  await s?.close();
});

describe('DNS rebinding: a request naming another host', () => {
  it('is refused with 421 on every data endpoint, the page and unknown paths, with a short reason', async () => {
    for (const path of ['/v1/anchors', '/v1/stats', '/metrics', '/v1/webhooks', '/v1/anchors/x', '/', '/app.js', '/openapi.json', '/v1/events', '/nowhere', '/v1/anchors/%zz', '/livez/x']) {
      const a = await withHost(s.http.url, path, `evil.example:${port}`);
      expect(a.status, path).toBe(421);
      expect(JSON.parse(a.body), path).toMatchObject({ error: { code: 'host_not_allowed', field: 'Host' } });
      expect(JSON.parse(a.body).error.message, path).toMatch(/http\.allowedHosts/);
    }
    expect(await upgradeStatus(s.http.url, `evil.example:${port}`)).toBe(421);
  });

  it('cannot write either, even with the token: the POST is refused before it is read or applied', async () => {
    const subject = receiptFields();
    const a = await withHost(s.http.url, '/v1/anchors', `evil.example:${port}`, {
      method: 'POST',
      body: JSON.stringify(subject),
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
    });
    expect(a.status).toBe(421);
    expect(await s.daemon.store.subjects.getRecords([subject.receipt_uuid])).toEqual([null]);
  });

  it('look-alikes are refused too: a loopback name as a subdomain, a userinfo trick, no Host at all', async () => {
    for (const host of [`127.0.0.1.evil.example:${port}`, `localhost.evil.example`, `evil.example`, `127.0.0.1@evil.example`, `[::1].evil.example`, `evil.example:${port}:${port}`]) {
      expect((await withHost(s.http.url, '/v1/anchors', host)).status, host).toBe(421);
    }
    expect(await withoutHost(port, '/v1/anchors')).toMatch(/^HTTP\/1\.1 421 /);
  });
});

describe('the names the server is for', () => {
  it('answers 127.0.0.1, localhost and [::1] with any port, in any case', async () => {
    for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, `LocalHost:${port}`, 'localhost.', `[::1]:${port}`]) {
      expect((await withHost(s.http.url, '/v1/stats', host)).status, host).toBe(200);
    }
    expect(await upgradeStatus(s.http.url, `127.0.0.1:${port}`)).toBe(101);
    // fetch sends Host: 127.0.0.1:PORT
    expect((await s.get('/metrics')).status).toBe(200);
  });

  it('answers health probes by any name (a probe sends the pod address)', async () => {
    expect((await withHost(s.http.url, '/livez', `10.1.2.3:${port}`)).status).toBe(200);
    expect([200, 503]).toContain((await withHost(s.http.url, '/readyz', `10.1.2.3:${port}`)).status);
  });

  it('with http.allowedHosts set: those names and the bind address, nothing else; "*" answers any', async () => {
    const named = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, allowedHosts: ['anchor.internal', 'fd00::1'] }), log: s.log });
    const any = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, allowedHosts: ['*'] }), log: s.log });
    extra.push(named, any);
    expect((await withHost(named.url, '/v1/stats', `anchor.internal:${named.port}`)).status).toBe(200);
    expect((await withHost(named.url, '/v1/stats', `[fd00::1]:${named.port}`)).status).toBe(200);
    expect((await withHost(named.url, '/v1/stats', `127.0.0.1:${named.port}`)).status).toBe(200);
    expect((await withHost(named.url, '/v1/stats', `localhost:${named.port}`)).status).toBe(421);
    expect((await withHost(named.url, '/v1/stats', `evil.example:${named.port}`)).status).toBe(421);
    expect((await withHost(any.url, '/v1/stats', `evil.example:${any.port}`)).status).toBe(200);
  });
});
