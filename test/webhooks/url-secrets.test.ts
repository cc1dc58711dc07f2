/**
 * Issue 18, reproduction 5: a webhook URL carrying credentials (`http://user:pw@host/…?sig=…`)
 * used to be accepted, never delivered (fetch refuses such URLs) and put its password in the
 * warn log, in Redis `{prefix}:wh:<id>:log` and in the unauthenticated `GET /v1/webhooks`.
 * Now it is refused at config load; a receiver's credential goes in the hook's `headers`;
 * and a URL's query or credentials are shown and stored nowhere, even when a library caller
 * hands the deliverer such a URL directly or a receiver quotes its URL back in a refusal.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/adapters/config/config.js';
import { createLogger } from '../../src/daemon/logger.js';
import { WebhookDeliverer } from '../../src/adapters/webhooks/deliverer.js';
import { hookId, WebhookLog } from '../../src/adapters/webhooks/delivery-log.js';
import { startWebhooks, type WebhookDeliverer as Deliverer } from '../../src/adapters/webhooks/webhooks.js';
import { receiptFields, SHARED_REDIS_URL, uniquePrefix, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';
import { deletePrefix, oneRedis } from '../helpers/shared-redis.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'url-secrets-hook-secret-0123';
const PASSWORD = `pw${randomBytes(9).toString('hex')}`;
const SIG = `sig${randomBytes(9).toString('hex')}`;
const HEADER_TOKEN = `hdr${randomBytes(9).toString('hex')}`;

function capture(): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, log: createLogger('trace', sink) };
}

/** Everything stored under a hash-tagged prefix, as text. */
async function dump(redis: Redis, base: string): Promise<string> {
  const out: string[] = [];
  let cursor = '0';
  for (let i = 0; i < 10_000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${base}*`, 'COUNT', 500);
    for (const k of keys) {
      const type = await redis.type(k);
      if (type === 'list') out.push(k, ...(await redis.lrange(k, 0, -1)));
      else if (type === 'hash') out.push(k, JSON.stringify(await redis.hgetall(k)));
      else if (type === 'string') out.push(k, String(await redis.get(k)));
      else if (type === 'stream') out.push(k, JSON.stringify(await redis.xrange(k, '-', '+')));
      else out.push(k);
    }
    cursor = next;
    if (cursor === '0') break;
  }
  return out.join('\n');
}

function configError(webhooks: unknown, viaEnv: boolean): string {
  try {
    if (viaEnv) loadConfig({ env: { AER1_WEBHOOKS: JSON.stringify(webhooks) } });
    else loadConfig({ env: {}, overrides: { webhooks } });
  } catch (err) {
    return `${(err as Error).message} ${(err as { field?: string }).field ?? ''}`;
  }
  return '';
}

describe('a webhook URL with credentials', () => {
  it('is refused at config load, naming the key, pointing at "headers", never echoing the password or the query', () => {
    for (const viaEnv of [false, true]) {
      for (const url of [`http://user:${PASSWORD}@127.0.0.1:9/hook?sig=${SIG}`, `https://${PASSWORD}@hooks.example/x`, `http://user:${PASSWORD}@[::1]:9/`]) {
        const message = configError([{ url: 'http://127.0.0.1:9/fine', secret: SECRET }, { url, secret: SECRET }], viaEnv);
        expect(message, url).toMatch(/webhooks\[1\]\.url/);
        expect(message, url).toMatch(/must not carry credentials/);
        expect(message, url).toMatch(/"headers"/);
        expect(message, url).not.toContain(PASSWORD);
        expect(message, url).not.toContain(SIG);
        expect(message.length, url).toBeLessThan(400);
      }
    }
    // other URL errors show no query either
    const wrongScheme = configError([{ url: `ftp://127.0.0.1/h?sig=${SIG}`, secret: SECRET }], false);
    expect(wrongScheme).toMatch(/webhooks\[0\]\.url: URL must use http: or https:: "ftp:\/\/127\.0\.0\.1\/h"/);
    expect(configError([{ url: `http://x y/?sig=${SIG}`, secret: SECRET }], false)).not.toContain(SIG);
  });

  it('handed to the deliverer directly, is stored and logged without its password or query', async () => {
    const redis = new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: null });
    const base = `{${uniquePrefix('whcred')}}`;
    const stream = `${base}:events`;
    const receiver = await startReceiver(() => 204);
    const port = new URL(receiver.url).port;
    const url = `http://user:${PASSWORD}@127.0.0.1:${port}/hook?sig=${SIG}`;
    const { lines, log } = capture();
    const outcomes: string[] = [];
    const d = new WebhookDeliverer({ redis, stream, base, hooks: [{ url, secret: SECRET }], log, maxAttempts: 2, backoffMs: 10, backoffMaxMs: 10, blockMs: 200, onOutcome: (_h, o) => outcomes.push(o) });
    await d.start();
    try {
      await redis.xadd(stream, '*', 'data', JSON.stringify({ type: 'accepted', key: 'k', status: 'pending', at: new Date().toISOString() }));
      await waitFor('the delivery settled', () => outcomes.length === 1);
      // fetch refuses a URL with credentials: nothing reached the receiver
      expect(outcomes).toEqual(['failed']);
      expect(receiver.requests).toHaveLength(0);
      const [overview] = await new WebhookLog(redis, base).overview([url]);
      expect(overview!.url).toBe(`http://127.0.0.1:${port}/hook`);
      expect(overview!.recent[0]).toMatchObject({ outcome: 'failed', attempts: 2 });
      const shown = [JSON.stringify(overview), await dump(redis, base), lines.join('')];
      expect(lines.join('')).toContain('webhook delivery failed');
      for (const [i, text] of shown.entries()) {
        expect(text, `place ${i}`).not.toContain(PASSWORD);
        expect(text, `place ${i}`).not.toContain(SIG);
      }
    } finally {
      await d.stop();
      await receiver.close();
      await deletePrefix(redis, base);
      await redis.quit();
    }
  });
});

describe('a webhook URL with a query, and a credential in headers, on a running daemon', () => {
  let s: Stack;
  let receiver: Receiver;
  let hooks: Deliverer;
  const captured = capture();

  beforeAll(async () => {
    receiver = await startReceiver((_id, nth) => (nth === 1 ? 404 : 200));
    // a receiver that quotes the request back in its refusal
    receiver.refusal = (requestUrl) => `no route for ${requestUrl}`;
    s = await startStack({
      overrides: {
        webhooks: [
          { url: `${receiver.url}?sig=${SIG}`, secret: SECRET, headers: { Authorization: `Bearer ${HEADER_TOKEN}` } },
        ],
      },
    });
    hooks = await startWebhooks({ daemon: s.daemon, log: captured.log, tuning: { backoffMs: 20, backoffMaxMs: 50, blockMs: 200 } });
  });

  afterAll(async () => {
    await hooks?.stop();
    await s?.close();
    await receiver?.close();
  });

  it('delivers with the query and the header, and shows or stores neither', async () => {
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await waitFor('a delivery', () => receiver.delivered().length >= 1);
    const first = receiver.requests[0]!;
    expect(first.url).toBe(`/hook?sig=${SIG}`);
    expect(first.headers.authorization).toBe(`Bearer ${HEADER_TOKEN}`);
    expect(first.headers['x-aer1-signature']).toMatch(/^sha256=/);
    const id = hookId(`${receiver.url}?sig=${SIG}`);
    // the first attempt of each change was refused with the URL quoted back: that refusal is not kept whole
    const log = new WebhookLog(s.daemon.redis, s.daemon.store.keys.base);
    await waitFor('outcome recorded', async () => (await log.recent(id, 1)).length > 0);

    const res = await s.get('/v1/webhooks?limit=50');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(JSON.parse(body)).toMatchObject({ hooks: [{ id, url: receiver.url }] });
    const places: Array<[string, string]> = [
      ['GET /v1/webhooks', body],
      ['Redis', await dump(oneRedis(s.daemon.redis), s.daemon.store.keys.base)],
      ['log', captured.lines.join('')],
      ['/metrics', await (await s.get('/metrics')).text()],
    ];
    for (const [where, text] of places) {
      expect(text, where).not.toContain(SIG);
      expect(text, where).not.toContain(HEADER_TOKEN);
    }
  });

  it('refuses a header the daemon sets itself, and a header value it cannot send, without echoing the value', () => {
    const msg = (headers: unknown): string => configError([{ url: receiver.url, secret: SECRET, headers }], false);
    expect(msg({ 'X-Aer1-Signature': HEADER_TOKEN })).toMatch(/webhooks\[0\]\.headers\.X-Aer1-Signature: the daemon sets this header itself/);
    expect(msg({ 'Content-Type': 'text/plain' })).toMatch(/the daemon sets this header itself/);
    const crlf = msg({ Authorization: `Bearer ${HEADER_TOKEN}\r\nX-Injected: 1` });
    expect(crlf).toMatch(/webhooks\[0\]\.headers\.Authorization: expected 1 to 4096 printable ASCII characters/);
    expect(crlf).not.toContain(HEADER_TOKEN);
    expect(msg({ 'Bad Name': 'x' })).toMatch(/not an HTTP header name/);
    expect(msg(['Authorization'])).toMatch(/expected an object/);
  });
});
