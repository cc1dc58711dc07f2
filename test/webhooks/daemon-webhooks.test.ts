/**
 * Webhooks on a running daemon (real Redis, dev relay, dev calendar): a receiver that fails
 * twice and then succeeds gets every state change of a subject, each with a valid
 * signature over the exact body, and the outcomes show up in /v1/webhooks and /metrics.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhooks, verifySignature, type WebhookDeliverer } from '../../src/adapters/webhooks/webhooks.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';
import { startReceiver, type Received, type Receiver } from './receiver.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

const SECRET = 'daemon-hook-secret-0123456789';
let s: Stack;
let receiver: Receiver;
let hooks: WebhookDeliverer;

beforeAll(async () => {
  receiver = await startReceiver((_id, nth) => (nth <= 2 ? 500 : 200));
  s = await startStack({ overrides: { webhooks: [{ url: receiver.url, secret: SECRET }] } });
  hooks = await startWebhooks({ daemon: s.daemon, log: s.log, tuning: { backoffMs: 50, backoffMaxMs: 200, blockMs: 200 } });
});

afterAll(async () => {
  await hooks?.stop();
  await s?.close();
  await receiver?.close();
});

describe('a receiver that fails twice, then succeeds', () => {
  it('gets each state change of a subject, signed, after three attempts each', async () => {
    const subject = receiptFields();
    const key = subject.receipt_uuid;
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await s.confirm([key]);

    const stream = (await s.daemon.redis.xrange(s.daemon.store.keys.events, '-', '+')) as Array<[string, string[]]>;
    const changes = stream.filter(([, f]) => (JSON.parse(f[1]!) as { key: string }).key === key);
    const statuses = changes.map(([, f]) => (JSON.parse(f[1]!) as { status: string }).status);
    expect(statuses.filter((x, i) => i === 0 || statuses[i - 1] !== x)).toEqual(['pending', 'partial', 'confirmed']);

    await waitFor('every change delivered', () => changes.every(([id]) => receiver.delivered().some((r) => r.eventId === id)));
    for (const [id, fields] of changes) {
      const attempts = receiver.requests.filter((r) => r.eventId === id);
      expect(attempts.map((r) => [r.attempt, r.answered])).toEqual([[1, 500], [2, 500], [3, 200]]);
      for (const r of attempts) {
        expect(r.body).toBe(fields[1]);
        expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
        expect(verifySignature(r.body, 'some-other-secret-123', String(r.headers['x-aer1-signature']))).toBe(false);
      }
    }
    // in stream order
    const deliveredOrder = receiver.delivered().map((r) => r.eventId).filter((id) => changes.some(([c]) => c === id));
    expect(deliveredOrder).toEqual(changes.map(([id]) => id));

    const res = await s.get('/v1/webhooks?limit=50');
    expect(res.status).toBe(200);
    const { hooks: overview } = (await res.json()) as { hooks: Array<{ id: string; url: string; delivered: number; recent: Array<{ eventId: string; outcome: string; attempts: number }> }> };
    expect(overview).toHaveLength(1);
    expect(overview[0]!.url).toBe(receiver.url);
    for (const [id] of changes) expect(overview[0]!.recent.find((r) => r.eventId === id)).toMatchObject({ outcome: 'delivered', attempts: 3 });

    const metrics = await (await s.get('/metrics')).text();
    expect(metrics).toMatch(new RegExp(`aer1_webhook_deliveries_total\\{hook="${overview[0]!.id}",result="delivered"\\} [1-9]`));
  });
});

describe('a batch transition of 300 subjects (packed stream entries)', () => {
  it('reaches the hook as 300 deliveries, each once, in order, signed, with unique ids', async () => {
    const policy = receiver.policy;
    receiver.policy = () => 200;
    try {
      const keys = Array.from({ length: 300 }, (_, i) => `hooked-${randomBytes(3).toString('hex')}-${i}`);
      // no inbox: the daemon's witnesses leave these subjects alone
      await s.daemon.store.subjects.acceptMany(
        { witnesses: ['ots'], inboxes: [] },
        keys.map((key) => ({ key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) })),
      );
      const mid = (await s.daemon.redis.xrevrange(s.daemon.store.keys.events, '+', '-', 'COUNT', 1))[0]![0];
      await s.daemon.store.subjects.setWitnessMany(keys, 'ots', 'partial', 1, 'submitted to 2 calendars', `b-${keys[0]}`);
      const entries = (await s.daemon.redis.xrange(s.daemon.store.keys.events, `(${mid}`, '+')).map((e) => e[0]);
      expect(entries).toHaveLength(2);

      const ours = (): Received[] => receiver.requests.filter((r) => {
        const body = JSON.parse(r.body) as { type: string; key: string };
        return body.type === 'state' && keys.includes(body.key);
      });
      await waitFor('300 deliveries', () => ours().length >= 300, 60_000);
      const got = ours();
      expect(got).toHaveLength(300);
      expect(got.map((r) => (JSON.parse(r.body) as { key: string }).key)).toEqual(keys);
      expect(got.map((r) => r.eventId)).toEqual([...keys.slice(0, 250).map((_, i) => `${entries[0]}.${i}`), ...keys.slice(250).map((_, i) => `${entries[1]}.${i}`)]);
      for (const r of got) {
        expect(r.answered).toBe(200);
        expect(r.attempt).toBe(1);
        expect(r.headers['x-aer1-event-type']).toBe('state');
        expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
        expect(JSON.parse(r.body)).toEqual({ type: 'state', key: expect.any(String), witness: 'ots', from: 'pending', to: 'partial', status: 'partial', previous: 'pending', at: expect.any(String), detail: 'submitted to 2 calendars' });
      }
      // the accepted events of the call came first, one delivery each too
      const accepted = receiver.requests.filter((r) => (JSON.parse(r.body) as { type: string; key: string }).type === 'accepted' && keys.includes((JSON.parse(r.body) as { key: string }).key));
      expect(accepted.map((r) => (JSON.parse(r.body) as { key: string }).key)).toEqual(keys);
      expect(new Set([...accepted, ...got].map((r) => r.eventId)).size).toBe(600);
    } finally {
      receiver.policy = policy;
    }
  }, 90_000);
});
