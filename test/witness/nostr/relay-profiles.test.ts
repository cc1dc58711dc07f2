/**
 * The dev relay's profiles (public relay behaviour, truthful NIP-11) and the RelayClient's
 * answers to them: NIP-42 AUTH once per connection, NIP-13 copies accepted.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startDevRelay, type DevRelay, type RelayProfileName, type RelayProfileOptions } from '../../../src/dev/relay/dev-relay.js';
import { RelayClient } from '../../../src/adapters/nostr/relay-client.js';
import { fetchRelayPolicy } from '../../../src/adapters/nostr/relay-policy.js';
import { PowMiner } from '../../../src/core/nostr/pow.js';
import type { SignedEvent } from '../../../src/core/nostr/events.js';
import { TEST_KEY, eventFor } from './fixtures.js';

const relays: DevRelay[] = [];
const clients: RelayClient[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(relays.map((r) => r.close()));
});

async function relay(profile: RelayProfileName, profileOptions: RelayProfileOptions = {}): Promise<DevRelay> {
  const r = await startDevRelay({ profile, profileOptions });
  relays.push(r);
  return r;
}

function client(url: string, sign = true, key = TEST_KEY): RelayClient {
  const c = new RelayClient(url, sign ? { signAuth: (t) => key.sign(t) } : {});
  clients.push(c);
  return c;
}

function mined(ev: SignedEvent, bits: number): SignedEvent {
  const miner = new PowMiner(ev, bits);
  for (let i = 0; i < 10_000; i++) {
    const m = miner.step(1000);
    if (m) return TEST_KEY.sign({ kind: m.kind, created_at: m.created_at, tags: m.tags, content: m.content });
  }
  throw new Error('not mined');
}

describe('dev relay profiles', () => {
  it('each serves a NIP-11 document stating what it enforces', async () => {
    const expected: Record<RelayProfileName, object> = {
      open: { ignored: [] },
      damus: { ignored: [] },
      pow: { minPowDifficulty: 8, ignored: [] },
      auth: { authRequired: true, ignored: [] },
      strict: { maxMessageLength: 65536, createdAtLowerLimit: 94608000, createdAtUpperLimit: 900, ignored: [] },
      paid: { paymentRequired: true, ignored: [] },
      restricted: { restrictedWrites: true, ignored: [] },
    };
    for (const [name, policy] of Object.entries(expected)) {
      const r = await relay(name as RelayProfileName);
      expect(await fetchRelayPolicy(r.url), name).toEqual(policy);
    }
  });

  it('damus: rate-limited past its rate per key, duplicates not counted', async () => {
    const r = await relay('damus', { ratePerMinute: 3 });
    const c = client(r.url);
    for (let n = 1; n <= 3; n++) expect((await c.publish(eventFor(n))).status).toBe('accepted');
    expect((await c.publish(eventFor(1))).message).toMatch(/^duplicate:/);
    expect(await c.publish(eventFor(4))).toMatchObject({ status: 'rejected', prefix: 'rate-limited', retryable: true });
    expect(r.eventCount()).toBe(3);
    expect(r.counters().refused).toEqual({ 'rate-limited': 1 });
  });

  it('pow: refuses below its difficulty naming it, takes a mined copy', async () => {
    const r = await relay('pow', { powDifficulty: 8 });
    const c = client(r.url);
    expect(await c.publish(eventFor(5))).toMatchObject({ status: 'rejected', prefix: 'pow', message: expect.stringMatching(/^pow: difficulty 8 required/) });
    const copy = mined(eventFor(5), 8);
    expect((await c.publish(copy)).status).toBe('accepted');
    expect(r.events().map((e) => e.id)).toEqual([copy.id]);
  });

  it('strict: message size, created_at window and unknown kinds', async () => {
    const r = await relay('strict', { maxMessageLength: 2000, createdAtLowerLimit: 3600, allowedKinds: [1] });
    const c = client(r.url);
    const now = Math.floor(Date.now() / 1000);
    const big = TEST_KEY.sign({ kind: 1, created_at: now, tags: [], content: 'x'.repeat(3000) });
    expect(await c.publish(big)).toMatchObject({ status: 'rejected', prefix: 'invalid', message: 'invalid: message over 2000 bytes' });
    const old = TEST_KEY.sign({ kind: 1, created_at: now - 7200, tags: [], content: 'old' });
    expect(await c.publish(old)).toMatchObject({ status: 'rejected', prefix: 'invalid', message: expect.stringContaining('too old') });
    const kind = TEST_KEY.sign({ kind: 3099, created_at: now, tags: [], content: 'k' });
    expect(await c.publish(kind)).toMatchObject({ status: 'rejected', prefix: 'restricted', retryable: false });
    expect((await c.publish(TEST_KEY.sign({ kind: 1, created_at: now, tags: [], content: 'fine' }))).status).toBe('accepted');
  });

  it('paid and restricted refuse every event with restricted:', async () => {
    for (const name of ['paid', 'restricted'] as const) {
      const r = await relay(name);
      expect(await client(r.url).publish(eventFor(6))).toMatchObject({ status: 'rejected', prefix: 'restricted', retryable: false });
      expect(r.eventCount()).toBe(0);
    }
  });
});

describe('NIP-42 AUTH', () => {
  it('without a signer: auth-required, nothing stored', async () => {
    const r = await relay('auth');
    expect(await client(r.url, false).publish(eventFor(7))).toMatchObject({ status: 'rejected', prefix: 'auth-required', retryable: true });
    expect(r.eventCount()).toBe(0);
    expect(r.counters().authPerConnection).toEqual([]);
  });

  it('challenge on connect: authenticates once per connection, again on a new connection', async () => {
    const r = await relay('auth');
    const c = client(r.url);
    for (let n = 10; n < 15; n++) expect((await c.publish(eventFor(n))).status).toBe('accepted');
    expect(r.counters().authPerConnection).toEqual([1]);
    c.close();
    expect((await c.publish(eventFor(15))).status).toBe('accepted');
    expect(r.counters()).toMatchObject({ connections: 2, authPerConnection: [1, 1] });
    expect(r.eventCount()).toBe(6);
  });

  it('challenge on demand: auth-required, AUTH, sent again, in one publish', async () => {
    const r = await relay('auth', { authChallenge: 'demand' });
    const c = client(r.url);
    expect(await c.publish(eventFor(20))).toMatchObject({ status: 'accepted' });
    expect((await c.publish(eventFor(21))).status).toBe('accepted');
    expect(r.counters()).toMatchObject({ refused: { 'auth-required': 1 }, connections: 1, authPerConnection: [1] });
    expect(r.eventCount()).toBe(2);
  });

  it('an AUTH the relay refuses is a retryable auth-required answer, on a fresh connection next time', async () => {
    const r = await relay('auth', { authChallenge: 'demand' });
    let wrong = true;
    const c = new RelayClient(r.url, {
      signAuth: (t) => TEST_KEY.sign(wrong ? { ...t, tags: t.tags.map((x) => (x[0] === 'challenge' ? ['challenge', 'not-it'] : x)) } : t),
    });
    clients.push(c);
    const first = await c.publish(eventFor(30));
    expect(first).toMatchObject({ status: 'rejected', prefix: 'auth-required', retryable: true, message: expect.stringContaining('challenge') });
    wrong = false;
    expect((await c.publish(eventFor(30))).status).toBe('accepted');
    expect(r.counters().authPerConnection).toEqual([1]);
    expect(r.counters().connections).toBe(2);
  });
});
