/**
 * Secrets: the daemon's Nostr signing key, its API token and a webhook secret never appear
 * in anything it emits during a busy run — every pino line at trace level, every HTTP answer
 * (status, headers, body) of every endpoint including refusals and errors, /metrics, the
 * webhook deliveries, and what it stores in Redis — searched for the key in hex (either
 * case), nsec and base64, and for every 20-character substring of the key, token and secret.
 * Error messages about bad keys and bad config name the problem, not the secret.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { nip19 } from 'nostr-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/adapters/config/config.js';
import { createLogger } from '../../src/daemon/logger.js';
import { runDaemon, type RunningDaemon } from '../../src/daemon/main.js';
import { SigningKey } from '../../src/core/nostr/keys.js';
import { loadSigningKey } from '../../src/adapters/nostr/key-file.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { SHARED_REDIS_URL, receiptFields, startCalendars, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { checkedFetch, expectUndocumented } from '../helpers/openapi.js';

function freshKeyHex(): string {
  for (;;) {
    const hex = randomBytes(32).toString('hex');
    try {
      SigningKey.parse(hex);
      return hex;
    } catch {
      // zero or not below the curve order: draw again
    }
  }
}

const KEY_HEX = freshKeyHex();
const NSEC = nip19.nsecEncode(Buffer.from(KEY_HEX, 'hex'));
const TOKEN = `tok_${randomBytes(24).toString('base64url')}`;
const HOOK_SECRET = `whs_${randomBytes(20).toString('hex')}`;
/** Sent to the receiver (in its URL's query, in a header), shown and stored nowhere else. */
const HOOK_QUERY = `whq_${randomBytes(20).toString('hex')}`;
const HOOK_HEADER = `whh_${randomBytes(20).toString('hex')}`;
const HOOK_PASSWORD = `whp_${randomBytes(20).toString('hex')}`;

function substrings(s: string, n = 20): string[] {
  return Array.from({ length: s.length - n + 1 }, (_, i) => s.slice(i, i + n));
}

const NEEDLES: Array<[string, string]> = [
  ['key hex', KEY_HEX],
  ['key hex uppercase', KEY_HEX.toUpperCase()],
  ['key nsec', NSEC],
  ['key base64', Buffer.from(KEY_HEX, 'hex').toString('base64')],
  ...substrings(KEY_HEX).map((s, i): [string, string] => [`key hex [${i}..${i + 20})`, s]),
  ...substrings(NSEC).map((s, i): [string, string] => [`nsec [${i}..${i + 20})`, s]),
  ['token', TOKEN],
  ...substrings(TOKEN).map((s, i): [string, string] => [`token [${i}..${i + 20})`, s]),
  ['webhook secret', HOOK_SECRET],
  ...substrings(HOOK_SECRET).map((s, i): [string, string] => [`webhook secret [${i}..${i + 20})`, s]),
];
const HOOK_CREDENTIALS: Array<[string, string]> = [
  ...substrings(HOOK_QUERY).map((s, i): [string, string] => [`webhook URL query [${i}..${i + 20})`, s]),
  ...substrings(HOOK_HEADER).map((s, i): [string, string] => [`webhook header [${i}..${i + 20})`, s]),
];

/** Every needle found in `text`, by name (the webhook's own credentials too, unless it is what the receiver got). */
function leaks(text: string, needles = [...NEEDLES, ...HOOK_CREDENTIALS]): string[] {
  const lower = text.toLowerCase();
  return needles.filter(([name, n]) => (name.startsWith('key hex') || name === 'key nsec' ? lower.includes(n.toLowerCase()) : text.includes(n))).map(([name]) => name);
}

describe('secrets never leave the daemon', () => {
  let relay: DevRelay;
  let calendar: DevCalendar;
  let receiver: Server;
  const deliveries: string[] = [];
  const logLines: string[] = [];
  const answers: string[] = [];
  let running: RunningDaemon;
  const keyEnv = `AER1_TEST_SECRET_${randomBytes(4).toString('hex').toUpperCase()}`;

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    let refusals = 0;
    relay.beforeEvent = () => (refusals++ < 3 ? { accept: false, message: 'rate-limited: slow down' } : undefined);
    const headersFile = join(tempDir('headers'), 'headers.json');
    [calendar] = (await startCalendars(1, headersFile)) as [DevCalendar];
    calendar.setMode('error500');
    receiver = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        deliveries.push(`${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
        res.writeHead(deliveries.length % 3 === 0 ? 500 : 204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const config = testConfig({
      relays: [relay],
      calendars: [calendar],
      headersFile,
      overrides: {
        redis: { url: SHARED_REDIS_URL },
        nostr: { keyEnv, keyFile: join(tempDir('nokey'), 'absent.key') },
        http: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN, readsRequireToken: true, maxBodyBytes: 64 * 1024 },
        webhooks: [{ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook?sig=${HOOK_QUERY}`, secret: HOOK_SECRET, headers: { Authorization: `Bearer ${HOOK_HEADER}` } }],
        log: { level: 'trace' },
      },
    });
    process.env[keyEnv] = KEY_HEX;
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    running = await runDaemon(config, createLogger('trace', sink));
  }, 60_000);

  afterAll(async () => {
    delete process.env[keyEnv];
    await running?.stop();
    await new Promise<void>((r) => receiver?.close(() => r()));
    await relay?.close();
    await calendar?.close();
  });

  async function call(path: string, init: RequestInit & { undocumented?: boolean } = {}): Promise<Response> {
    const { undocumented, ...rest } = init;
    const url = `${running.httpUrl}${path}`;
    const res = undocumented ? await fetch(url, rest) : await checkedFetch(url, rest);
    if (undocumented) expectUndocumented(rest.method ?? 'GET', url, res.status);
    const body = await res.text();
    // the answer only (status, headers, body): the request itself carries the token
    answers.push(`${res.status}\n${JSON.stringify([...res.headers])}\n${body}`);
    return new Response(body, { status: res.status, headers: res.headers });
  }
  const auth = (extra: Record<string, string> = {}): Record<string, string> => ({ Authorization: `Bearer ${TOKEN}`, ...extra });
  const json = { 'Content-Type': 'application/json' };

  it('runs a busy day: writes, reads, refusals, retries, failures, confirmations, webhooks', { timeout: 90_000 }, async () => {
    const subjects = Array.from({ length: 5 }, () => receiptFields());
    expect((await call('/v1/anchors', { method: 'POST', headers: auth(json), body: JSON.stringify({ subjects }) })).status).toBe(202);
    // refusals of every kind
    expect((await call('/v1/anchors', { method: 'POST', headers: json, body: JSON.stringify(receiptFields()) })).status).toBe(401);
    expect((await call('/v1/anchors', { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}x`, ...json }, body: '{}' })).status).toBe(401);
    expect((await call(`/v1/anchors?access_token=${TOKEN}`, { method: 'POST', headers: json, body: JSON.stringify(receiptFields()) })).status).toBe(401);
    expect((await call('/v1/anchors', { method: 'POST', headers: auth(json), body: '{"subject": "receipt"' })).status).toBe(400);
    expect((await call('/v1/anchors', { method: 'POST', headers: auth(json), body: JSON.stringify({ subject: 'receipt', receipt_uuid: 'u', output_sha256: TOKEN }) })).status).toBe(400);
    expect((await call('/v1/anchors', { method: 'POST', headers: auth(json), body: JSON.stringify({ pad: 'x'.repeat(70_000) }) })).status).toBe(413);
    expect((await call('/v1/anchors', { method: 'POST', headers: auth({ 'Content-Type': 'text/plain' }), body: KEY_HEX.slice(0, 8) })).status).toBe(415);
    expect((await call(`/v1/nowhere?access_token=${TOKEN}`, { undocumented: true })).status).toBe(404);
    expect((await call('/v1/stats')).status).toBe(401);
    expect((await call(`/v1/anchors/${subjects[0]!.receipt_uuid}?access_token=${TOKEN}x`)).status).toBe(401);

    // the relay refuses, then accepts; the calendar fails, then recovers and confirms
    await waitFor('nostr confirmed', async () => {
      await call(`/v1/anchors?witness=nostr&status=confirmed&access_token=${TOKEN}`);
      return (await running.daemon.store.indexes.countByWitness(['nostr'])).nostr!.confirmed! >= 5;
    }, 30_000, 300);
    calendar.setMode('ok');
    const keys = subjects.map((s) => s.receipt_uuid);
    await waitFor('confirmed', async () => {
      if (calendar.pendingCount() > 0) await calendar.mine();
      return (await running.daemon.store.subjects.getRecords(keys)).every((r) => r?.status === 'confirmed');
    }, 60_000, 300);
    const conflict = await call('/v1/anchors', { method: 'POST', headers: auth(json), body: JSON.stringify({ ...subjects[0]!, output_sha256: 'cd'.repeat(32) }) });
    expect(conflict.status).toBe(409);

    // every read endpoint, with the header and with the query parameter
    for (const path of ['/v1/stats', '/v1/anchors', `/v1/anchors/${keys[0]}`, `/v1/anchors/${keys[0]}/proof`, '/v1/webhooks', '/metrics', '/', '/app.js', '/openapi.json', '/livez', '/readyz']) {
      expect((await call(path, { headers: auth() })).status, path).toBe(200);
      expect((await call(`${path}${path.includes('?') ? '&' : '?'}access_token=${TOKEN}`)).status, path).toBeLessThan(500);
    }
    // a few seconds of the live event stream
    const ctrl = new AbortController();
    const stream = await checkedFetch(`${running.httpUrl}/v1/events?since=0-0&access_token=${TOKEN}`, { signal: ctrl.signal });
    const reader = stream.body!.getReader();
    let sse = '';
    const deadline = Date.now() + 3000;
    for (let i = 0; i < 50 && Date.now() < deadline && !sse.includes('"to":"confirmed"'); i++) {
      const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 500))]);
      if (chunk?.value) sse += new TextDecoder().decode(chunk.value);
    }
    ctrl.abort();
    answers.push(sse);
    expect(sse).toContain('"to":"confirmed"');
    await waitFor('webhook deliveries', () => deliveries.length >= 10, 30_000, 200);
  });

  it('nothing emitted carries the key, the token or the webhook secret', async () => {
    const logs = logLines.join('');
    const metrics = await running.daemon.metrics.registry.metrics();
    // the log was captured: start-up, requests at trace level, witness warnings
    expect(logs).toContain('aer1-anchord ready');
    expect(logs).toContain('"msg":"request"');
    expect(answers.length).toBeGreaterThan(30);
    expect(leaks(logs), 'daemon log').toEqual([]);
    const leakyAnswers = answers.filter((a) => leaks(a).length > 0).map((a) => a.slice(0, 300));
    expect(leakyAnswers, 'HTTP answers').toEqual([]);
    expect(leaks(metrics), '/metrics').toEqual([]);
    expect(leaks(deliveries.join('\n'), NEEDLES), 'webhook deliveries').toEqual([]);
    // the receiver, and only the receiver, got its query and its header
    expect(deliveries.every((d) => d.startsWith(`/hook?sig=${HOOK_QUERY}\n`) && d.includes(`Bearer ${HOOK_HEADER}`))).toBe(true);
    // the signed webhook bodies carry an HMAC, not the secret
    expect(deliveries.some((d) => /x-aer1-signature|signature/i.test(d))).toBe(true);
    console.log(`secrets: searched ${logs.length} bytes of log, ${answers.length} HTTP answers, ${metrics.length} bytes of metrics, ${deliveries.length} webhook deliveries for ${NEEDLES.length + HOOK_CREDENTIALS.length} needles: none found`);
  });

  it('nothing stored in Redis carries them either', async () => {
    const redis = running.daemon.redis;
    const base = running.daemon.store.keys.base;
    let cursor = '0';
    const seen: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 500);
      for (const k of keys) {
        const type = await redis.type(k);
        let value: unknown = null;
        if (type === 'string') value = await redis.get(k);
        else if (type === 'hash') value = await redis.hgetall(k);
        else if (type === 'list') value = await redis.lrange(k, 0, -1);
        else if (type === 'set') value = await redis.smembers(k);
        else if (type === 'zset') value = await redis.zrange(k, 0, -1);
        else if (type === 'stream') value = await redis.xrange(k, '-', '+');
        seen.push(`${k}\n${JSON.stringify(value)}`);
      }
      cursor = next;
      if (cursor === '0') break;
    }
    expect(seen.length).toBeGreaterThan(20);
    expect(leaks(seen.join('\n'))).toEqual([]);
  });

  it('errors about bad keys and bad config name the problem, never the secret', () => {
    const dir = tempDir('keys');
    const bad = [KEY_HEX.slice(0, 63), `${KEY_HEX}0`, `${NSEC.slice(0, -1)}${NSEC.endsWith('q') ? 'p' : 'q'}`, `nsec${KEY_HEX}`, `${KEY_HEX.slice(0, 30)} ${KEY_HEX.slice(30)}`, `npub${KEY_HEX.slice(4)}`];
    for (const [i, text] of bad.entries()) {
      const file = join(dir, `k${i}`);
      writeFileSync(file, text, { mode: 0o600 });
      let message = '';
      try {
        loadSigningKey({ file });
      } catch (err) {
        message = `${(err as Error).message} ${(err as { field?: string }).field ?? ''}`;
      }
      expect(message, `key form ${i}`).not.toBe('');
      for (const s of substrings(text, 12)) expect(message, `key form ${i}`).not.toContain(s);
    }
    // a config file with a malformed token line, and a webhook secret too short
    const cfg = join(dir, 'config.json');
    writeFileSync(cfg, `{"http": {"token": ${TOKEN}}}`);
    let message = '';
    try {
      loadConfig({ file: cfg, env: {} });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/config file .* is not JSON/);
    for (const s of substrings(TOKEN, 8)) expect(message).not.toContain(s);
    try {
      loadConfig({ env: { AER1_WEBHOOKS: JSON.stringify([{ url: 'http://127.0.0.1:1/', secret: HOOK_SECRET.slice(0, 12) }]) } });
      message = '';
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/secret/);
    expect(message).not.toContain(HOOK_SECRET.slice(0, 12));
    try {
      loadConfig({ env: { AER1_WEBHOOKS: `[{"url": "http://127.0.0.1:1/", "secret": ${HOOK_SECRET}}]` } });
      message = '';
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/AER1_WEBHOOKS must be JSON/);
    for (const s of substrings(HOOK_SECRET, 8)) expect(message).not.toContain(s);
    // a webhook URL with credentials, and a header value that cannot be sent
    for (const hook of [
      { url: `http://user:${HOOK_PASSWORD}@127.0.0.1:1/h?sig=${HOOK_QUERY}`, secret: HOOK_SECRET },
      { url: 'http://127.0.0.1:1/h', secret: HOOK_SECRET, headers: { Authorization: `Bearer ${HOOK_HEADER}\n` } },
    ]) {
      try {
        loadConfig({ env: { AER1_WEBHOOKS: JSON.stringify([hook]) } });
        message = '';
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/config webhooks\[0\]\.(url|headers\.Authorization):/);
      for (const secret of [HOOK_PASSWORD, HOOK_QUERY, HOOK_HEADER]) for (const s of substrings(secret, 8)) expect(message).not.toContain(s);
    }
  });

  it('the signing key object does not print itself', () => {
    const key = SigningKey.parse(NSEC);
    const shown = [JSON.stringify({ key }), String(key), `${key}`, inspect(key, { showHidden: true, depth: 5 }), JSON.stringify(Object.entries(key))].join('\n');
    expect(leaks(shown)).toEqual([]);
    expect(key.publicKey).toMatch(/^[0-9a-f]{64}$/);
  });
});
