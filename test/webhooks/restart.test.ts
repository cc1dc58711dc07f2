/**
 * Webhooks across a daemon restart (real Redis, dev relay, dev calendar): changes the first
 * daemon fanned out but could not deliver (the receiver down), and changes made after its
 * fan-out stopped, all reach the receiver from the next daemon on the same Redis, each once
 * and in order, under the same event ids, with the same events, as SSE gives for the stream.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startWebhooks, verifySignature, type WebhookDeliverer } from '../../src/adapters/webhooks/webhooks.js';
import { receiptFields, uniquePrefix, waitFor } from '../helpers/harness.js';
import { fanOutKeys } from '../../src/adapters/webhooks/fan-out.js';
import { compareEventIds } from '../../src/adapters/state/stream-entries.js';
import { openSse, type SseClient } from '../http/clients.js';
import { startStack, type Stack } from '../http/fixture.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'restart-hook-secret-0123456789';
const TUNING = { backoffMs: 50, backoffMaxMs: 200, blockMs: 200 };
let receiver: Receiver;
let stack: Stack | null = null;
let hooks: WebhookDeliverer | null = null;
let sse: SseClient | null = null;

afterAll(async () => {
  sse?.close();
  await hooks?.stop();
  await stack?.close();
  await receiver?.close();
});

async function post(s: Stack, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    keys.push(subject.receipt_uuid);
  }
  return keys;
}

describe('a daemon restart', () => {
  it('loses no webhook delivery and repeats none: the next daemon sends every change under the ids SSE gives', { timeout: 120_000 }, async () => {
    receiver = await startReceiver(() => 503);
    const prefix = uniquePrefix('whrestart');
    const overrides = { webhooks: [{ url: receiver.url, secret: SECRET }] };

    // the first daemon: its changes are fanned out and retried against a receiver that is down
    stack = await startStack({ prefix, overrides });
    hooks = await startWebhooks({ daemon: stack.daemon, log: stack.log, tuning: TUNING });
    const first = await post(stack, 2);
    // both accepted, the fan-out past them (in the hook's queue), the first tried and refused
    await waitFor('the first subjects accepted', async () => (await stack!.daemon.state.getRecords(first)).every((r) => r !== null));
    const keys1 = stack.daemon.store.keys;
    const end = ((await stack.daemon.redis.xrevrange(keys1.events, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>)[0]![0];
    await waitFor('fanned out', async () => {
      const cursor = await stack!.daemon.redis.get(fanOutKeys(keys1.base).cursor);
      return cursor !== null && compareEventIds(cursor, end) >= 0;
    });
    await waitFor('the first change tried', () => receiver.requests.length > 0);
    // its fan-out stops; then more changes, which no fan-out has seen, and the daemon stops
    await hooks.stop();
    hooks = null;
    const second = await post(stack, 2);
    await stack.close();
    stack = null;
    expect(receiver.delivered()).toHaveLength(0);

    // the next daemon on the same Redis, the receiver back
    receiver.policy = () => 200;
    stack = await startStack({ prefix, overrides });
    hooks = await startWebhooks({ daemon: stack.daemon, log: stack.log, tuning: TUNING });
    sse = await openSse(`${stack.http.url}/v1/events`, { 'Last-Event-ID': '0-0' });
    expect(sse.status).toBe(200);

    const keys = [...first, ...second];
    const ids = (): { viaHook: string[]; viaSse: string[] } => ({ viaHook: receiver.delivered().map((r) => r.eventId), viaSse: sse!.messages.map((m) => m.id!) });
    await waitFor('every accepted subject delivered, and the hook caught up with SSE', () => {
      const { viaHook, viaSse } = ids();
      const accepted = receiver.delivered().filter((r) => (JSON.parse(r.body) as { type: string }).type === 'accepted').map((r) => (JSON.parse(r.body) as { key: string }).key);
      return keys.every((k) => accepted.includes(k)) && viaHook.length === viaSse.length && viaHook.every((id, i) => id === viaSse[i]);
    }, 60_000);

    const { viaHook, viaSse } = ids();
    expect(viaHook).toEqual(viaSse);
    expect(new Set(viaHook).size).toBe(viaHook.length);
    // the accepted changes in the order they were made, across the restart
    const accepted = receiver.delivered().map((r) => JSON.parse(r.body) as { type: string; key: string }).filter((e) => e.type === 'accepted').map((e) => e.key);
    expect(accepted).toEqual(keys);
    for (const [i, r] of receiver.delivered().entries()) {
      const { id, ...event } = JSON.parse(sse.messages[i]!.data) as { id: string };
      expect(id).toBe(r.eventId);
      expect(JSON.parse(r.body)).toEqual(event);
      expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
    }
  });
});
