import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventHash } from 'nostr-tools/pure';
import { Redis } from 'ioredis';
import { assessEvent, MAX_RELAY_INFO_BYTES, parseRelayInfo, relayPolicyOf } from '../../../src/core/nostr/relay-policy.js';
import { getPow, PowMiner, powDifficultyNamed, committedTarget } from '../../../src/core/nostr/pow.js';
import { fetchRelayPolicy, PolicyPublisher, RelayPolicies, relayInfoUrl } from '../../../src/adapters/nostr/relay-policy.js';
import { AnchorStore } from '../../../src/adapters/state/anchor-store.js';
import type { RelayClient } from '../../../src/adapters/nostr/relay-client.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../../helpers/shared-redis.js';
import { TEST_KEY, eventFor } from './fixtures.js';

describe('NIP-11 policy parsing (the document is a claim)', () => {
  it('takes well-typed limitation fields', () => {
    const p = parseRelayInfo(JSON.stringify({
      name: 'x',
      limitation: { max_message_length: 65536, max_content_length: 8196, max_event_tags: 100, min_pow_difficulty: 20, auth_required: true, payment_required: false, restricted_writes: false, created_at_lower_limit: 94608000, created_at_upper_limit: 900 },
    }));
    expect(p).toEqual({ maxMessageLength: 65536, maxContentLength: 8196, maxEventTags: 100, minPowDifficulty: 20, authRequired: true, paymentRequired: false, restrictedWrites: false, createdAtLowerLimit: 94608000, createdAtUpperLimit: 900, ignored: [] });
  });

  it('ignores wrong types and out-of-range numbers, by name', () => {
    const p = relayPolicyOf({ limitation: { max_message_length: '65536', min_pow_difficulty: 300, auth_required: 'yes', payment_required: 1, max_content_length: -5, max_event_tags: 1.5, created_at_lower_limit: 1e300, restricted_writes: null } });
    expect(p.maxMessageLength).toBeUndefined();
    expect(p.minPowDifficulty).toBeUndefined();
    expect(p.authRequired).toBeUndefined();
    expect(p.paymentRequired).toBeUndefined();
    expect(p.ignored.sort()).toEqual(['limitation.auth_required', 'limitation.created_at_lower_limit', 'limitation.max_content_length', 'limitation.max_event_tags', 'limitation.max_message_length', 'limitation.min_pow_difficulty', 'limitation.payment_required']);
  });

  it('a document that is not JSON, not an object, or huge states nothing', () => {
    expect(parseRelayInfo('<html>hello</html>')).toEqual({ ignored: ['document is not JSON'] });
    expect(parseRelayInfo('[1,2]')).toEqual({ ignored: ['document is not a JSON object'] });
    expect(parseRelayInfo('"limitation"')).toEqual({ ignored: ['document is not a JSON object'] });
    expect(parseRelayInfo(JSON.stringify({ limitation: [1] }))).toEqual({ ignored: ['limitation'] });
    const huge = JSON.stringify({ limitation: { payment_required: true }, pad: 'x'.repeat(MAX_RELAY_INFO_BYTES) });
    expect(parseRelayInfo(huge).paymentRequired).toBeUndefined();
  });

  it('names what a relay can never take, and what a copy can meet', () => {
    const ev = eventFor(1);
    const now = ev.created_at + 10;
    expect(assessEvent({ ignored: [] }, ev, now)).toEqual({ send: true, pow: 0, refreshCreatedAt: false });
    expect(assessEvent({ paymentRequired: true, ignored: [] }, ev, now)).toEqual({ send: false, reason: 'relay policy (NIP-11): payment_required' });
    expect(assessEvent({ restrictedWrites: true, ignored: [] }, ev, now)).toMatchObject({ send: false, reason: expect.stringContaining('restricted_writes') });
    expect(assessEvent({ maxMessageLength: 200, ignored: [] }, ev, now)).toMatchObject({ send: false, reason: expect.stringContaining('max_message_length 200') });
    expect(assessEvent({ maxContentLength: 10, ignored: [] }, ev, now)).toMatchObject({ send: false, reason: expect.stringContaining('max_content_length 10') });
    expect(assessEvent({ minPowDifficulty: 12, ignored: [] }, ev, now)).toEqual({ send: true, pow: 12, refreshCreatedAt: false });
    // older than the relay's window: a copy signed now
    expect(assessEvent({ createdAtLowerLimit: 5, ignored: [] }, ev, now)).toEqual({ send: true, pow: 0, refreshCreatedAt: true });
  });
});

describe('NIP-11 fetch: bounded in time and size', () => {
  let server: Server;
  let base: string;
  const seen: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(String(req.headers.accept));
      if (req.url === '/slow') return void setTimeout(() => res.end('{}'), 5000);
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'application/nostr+json' });
        res.write('{"limitation":{"payment_required":true},"pad":"');
        const chunk = 'x'.repeat(16 * 1024);
        let n = 0;
        const more = (): void => {
          if (n++ > 100 || res.destroyed) return void res.end('"}');
          if (res.write(chunk)) setImmediate(more);
          else res.once('drain', more);
        };
        return more();
      }
      if (req.url === '/html') return void res.end('<html>not json</html>');
      if (req.url === '/404') return void res.writeHead(404).end('no');
      res.writeHead(200, { 'content-type': 'application/nostr+json' });
      res.end(JSON.stringify({ limitation: { min_pow_difficulty: 16 } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('asks for application/nostr+json on the http form of the URL', async () => {
    expect(relayInfoUrl('wss://relay.example/x')).toBe('https://relay.example/x');
    expect(await fetchRelayPolicy(`${base}/ok`)).toEqual({ minPowDifficulty: 16, ignored: [] });
    expect(seen.at(-1)).toBe('application/nostr+json');
  });

  it('a slow, huge, non-JSON or missing document means no stated limits', async () => {
    const t0 = Date.now();
    expect(await fetchRelayPolicy(`${base}/slow`, { timeoutMs: 300 })).toEqual({ ignored: ['no document within 300 ms'], unreachable: true });
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await fetchRelayPolicy(`${base}/huge`, { timeoutMs: 5000 })).toEqual({ ignored: [`document over ${MAX_RELAY_INFO_BYTES} bytes`] });
    expect(await fetchRelayPolicy(`${base}/html`)).toEqual({ ignored: ['document is not JSON'] });
    expect(await fetchRelayPolicy(`${base}/404`)).toEqual({ ignored: ['no document (HTTP 404)'] });
    expect((await fetchRelayPolicy('ws://127.0.0.1:1')).ignored[0]).toMatch(/^no document/);
  });

  it('caches per relay and fetches again after the TTL', async () => {
    let fetches = 0;
    const policies = new RelayPolicies(200, {}, async () => {
      fetches++;
      return { minPowDifficulty: fetches, ignored: [] };
    });
    const [a, b] = await Promise.all([policies.get('ws://r'), policies.get('ws://r')]);
    expect([a.minPowDifficulty, b.minPowDifficulty, fetches]).toEqual([1, 1, 1]);
    expect((await policies.get('ws://r')).minPowDifficulty).toBe(1);
    const until = Date.now() + 5000;
    while (Date.now() < until && (await policies.get('ws://r')).minPowDifficulty === 1) await new Promise((r) => setTimeout(r, 50));
    expect(fetches).toBe(2);
  });

  it('asks a relay whose document could not be fetched again sooner than the TTL', async () => {
    let fetches = 0;
    const policies = new RelayPolicies(3_600_000, {}, async () => {
      fetches++;
      return fetches === 1 ? { ignored: ['no document (connect ECONNREFUSED)'], unreachable: true } : { minPowDifficulty: 8, ignored: [] };
    }, 100);
    expect((await policies.get('ws://r')).minPowDifficulty).toBeUndefined();
    const until = Date.now() + 5000;
    while (Date.now() < until && (await policies.get('ws://r')).minPowDifficulty === undefined) await new Promise((r) => setTimeout(r, 50));
    expect((await policies.get('ws://r')).minPowDifficulty).toBe(8);
    expect(fetches).toBe(2);
  });
});

describe('NIP-13 mining', () => {
  it('mines a nonce tag whose id meets the target, keeping created_at, id as nostr-tools computes it', () => {
    const ev = eventFor(3);
    const miner = new PowMiner(ev, 10);
    let mined;
    for (let i = 0; i < 1000 && !mined; i++) mined = miner.step(1000);
    expect(mined).toBeDefined();
    expect(mined!.created_at).toBe(ev.created_at);
    expect(getPow(mined!.id)).toBeGreaterThanOrEqual(10);
    expect(mined!.id).toBe(getEventHash(mined!));
    expect(mined!.tags.slice(0, -1)).toEqual(ev.tags);
    expect(mined!.tags.at(-1)).toEqual(['nonce', expect.stringMatching(/^\d+$/), '10']);
    expect(committedTarget(mined!.tags)).toBe(10);
    // deterministic: mined again, the same id
    const again = new PowMiner({ ...mined!, tags: mined!.tags }, 10);
    let second;
    for (let i = 0; i < 1000 && !second; i++) second = again.step(1000);
    expect(second!.id).toBe(mined!.id);
  });

  it('reads the difficulty a pow: answer names', () => {
    expect(powDifficultyNamed('pow: difficulty 20 required')).toBe(20);
    expect(powDifficultyNamed('pow: min difficulty is 28, yours 3')).toBe(28);
    expect(powDifficultyNamed('pow: too easy')).toBeUndefined();
    expect(powDifficultyNamed('pow: difficulty 9999')).toBeUndefined();
    expect(powDifficultyNamed('rate-limited: 20')).toBeUndefined();
  });
});

describe('PolicyPublisher: the proof-of-work cap and budget', () => {
  let redis: Redis;
  let store: AnchorStore;
  beforeAll(() => {
    redis = new Redis(SHARED_REDIS_URL);
    store = new AnchorStore(redis, uniquePrefix('pow'));
  });
  afterAll(async () => {
    await redis.quit();
  });
  // a stand-in for the relay connection (named so: the relay-side paths run against dev relays in test/daemon)
  const mockClient = (answers: string[]): { client: RelayClient; sent: string[] } => {
    const sent: string[] = [];
    const client = {
      publish: async (ev: { id: string }) => {
        sent.push(ev.id);
        const a = answers.shift() ?? 'ok';
        return a === 'ok'
          ? { status: 'accepted', message: '', retryable: false, at: new Date().toISOString() }
          : { status: 'rejected', message: a, prefix: a.slice(0, a.indexOf(':')), retryable: true, at: new Date().toISOString() };
      },
    } as unknown as RelayClient;
    return { client, sent };
  };
  const publisher = (min: number | undefined, cap: number, budget: number): PolicyPublisher =>
    new PolicyPublisher(store, TEST_KEY, { powMaxDifficulty: cap, powBudgetMs: budget, relayInfoTtlMs: 60_000, publishTimeoutMs: 1000 },
      new RelayPolicies(60_000, {}, async () => ({ ignored: [], ...(min !== undefined ? { minPowDifficulty: min } : {}) })));

  it('a relay asking more than nostr.powMaxDifficulty is final, nothing sent', async () => {
    const { client, sent } = mockClient([]);
    const out = await publisher(30, 24, 1000).publish('ws://pow', client, eventFor(4));
    expect(out).toMatchObject({ final: 'relay asks proof of work of 30 bits, above nostr.powMaxDifficulty 24' });
    expect(sent).toEqual([]);
  });

  it('a pow: answer naming more than the cap is final after that one send', async () => {
    const { client, sent } = mockClient(['pow: difficulty 30 required']);
    const out = await publisher(undefined, 24, 1000).publish('ws://pow-answer', client, eventFor(8));
    expect(out).toMatchObject({ final: 'relay asks proof of work of 30 bits, above nostr.powMaxDifficulty 24' });
    expect(sent).toEqual([eventFor(8).id]);
  });

  it('over nostr.powBudgetMs is final, naming the budget; the event loop keeps turning meanwhile', async () => {
    const { client } = mockClient([]);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const t0 = Date.now();
    const out = await publisher(40, 40, 300).publish('ws://pow', client, eventFor(5));
    clearInterval(timer);
    expect(out).toMatchObject({ final: expect.stringMatching(/^proof of work of 40 bits not found within nostr.powBudgetMs 300 ms \(\d+ hashes\)$/) });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(ticks).toBeGreaterThan(5);
  });

  it('mines one copy at a time, each with its whole budget', async () => {
    const p = publisher(40, 40, 300);
    const t0 = Date.now();
    const [a, b] = await Promise.all([p.publish('ws://pow', mockClient([]).client, eventFor(9)), p.publish('ws://pow', mockClient([]).client, eventFor(10))]);
    expect(a).toMatchObject({ final: expect.stringContaining('not found within nostr.powBudgetMs 300 ms') });
    expect(b).toMatchObject({ final: expect.stringContaining('not found within nostr.powBudgetMs 300 ms') });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
  });

  it('stop() interrupts mining at once: the publish throws, so the job goes back to its queue', async () => {
    const p = publisher(40, 40, 60_000);
    const t0 = Date.now();
    const running = p.publish('ws://pow', mockClient([]).client, eventFor(11));
    setTimeout(() => p.stop(), 100);
    await expect(running).rejects.toThrow('proof of work interrupted: the daemon is stopping');
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('mines what NIP-11 asks, and more after a pow: answer naming more, the copy kept for retries', async () => {
    const ev = eventFor(6);
    const { client, sent } = mockClient(['pow: difficulty 10 required', 'ok']);
    const p = publisher(6, 24, 10_000);
    const out = await p.publish('ws://pow', client, ev);
    expect('result' in out && out.result.status).toBe('accepted');
    expect(sent).toHaveLength(2);
    expect(getPow(sent[0]!)).toBeGreaterThanOrEqual(6);
    expect(getPow(sent[1]!)).toBeGreaterThanOrEqual(10);
    expect('pow' in out && out.pow).toBeGreaterThanOrEqual(10);
    const stored = JSON.parse((await redis.hget(store.keys.event(ev.id), 'copy:ws://pow'))!);
    expect(stored.id).toBe(sent[1]);
    // a retry sends the stored copy, not a new one
    const retry = mockClient(['ok']);
    await p.publish('ws://pow', retry.client, ev);
    expect(retry.sent).toEqual([sent[1]]);
  });

  it('an event older than the relay\'s created_at window is sent as a copy signed at now, kept for retries', async () => {
    const ev = eventFor(7);
    const p = new PolicyPublisher(store, TEST_KEY, { powMaxDifficulty: 24, powBudgetMs: 1000, relayInfoTtlMs: 60_000, publishTimeoutMs: 1000 },
      new RelayPolicies(60_000, {}, async () => ({ createdAtLowerLimit: 3600, ignored: [] })));
    const { client, sent } = mockClient(['ok', 'ok']);
    const before = Math.floor(Date.now() / 1000);
    const out = await p.publish('ws://strict', client, ev);
    expect('sent' in out && out.sent.created_at).toBeGreaterThanOrEqual(before);
    expect('sent' in out && out.sent.content).toBe(ev.content);
    expect('pow' in out && out.pow).toBe(0);
    await p.publish('ws://strict', client, ev);
    expect(sent[1]).toBe(sent[0]);
    expect(sent[0]).not.toBe(ev.id);
  });
});
