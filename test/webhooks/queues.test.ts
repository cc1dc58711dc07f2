/**
 * The per-hook queues on a real Redis stream and real HTTP receivers on loopback: a
 * receiver that hangs does not delay a healthy one; a daemon dying between adding changes
 * to the queues and moving the fan-out's cursor neither loses nor repeats a delivery, nor
 * does one dying mid-delivery.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { enqueueChanges, WebhookDeliverer, type DeliveryJob, type WebhookDelivererOptions } from '../../src/adapters/webhooks/deliverer.js';
import { fanOutKeys } from '../../src/adapters/webhooks/fan-out.js';
import { hookId, WebhookLog } from '../../src/adapters/webhooks/delivery-log.js';
import { verifySignature } from '../../src/adapters/webhooks/signature.js';
import { webhookQueueName } from '../../src/adapters/bullmq/names.js';
import { stalledJobOptions } from '../../src/adapters/bullmq/stalled.js';
import { SHARED_REDIS_URL, uniquePrefix, waitFor } from '../helpers/harness.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'webhook-queues-secret-0123456789';
let redis: Redis;

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: null });
});

// the prefixes' keys are deleted after the file (test/helpers/clean-shared-redis.ts)
afterAll(async () => {
  await redis.quit();
});

function space(): { base: string; stream: string } {
  const base = `{${uniquePrefix('whq')}}`;
  return { base, stream: `${base}:events` };
}

async function emit(stream: string, n: number, label: string): Promise<Array<{ id: string; body: string }>> {
  const out: Array<{ id: string; body: string }> = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify({ type: 'state', key: `${label}-${i}`, witness: 'ots', from: 'pending', to: 'confirmed', status: 'confirmed', at: new Date().toISOString() });
    out.push({ id: (await redis.xadd(stream, '*', 'data', body))!, body });
  }
  return out;
}

function deliverer(sp: { base: string; stream: string }, receivers: Receiver[], opts: Partial<WebhookDelivererOptions> = {}): WebhookDeliverer {
  return new WebhookDeliverer({
    redis,
    stream: sp.stream,
    base: sp.base,
    hooks: receivers.map((r) => ({ url: r.url, secret: SECRET })),
    log: createLogger('silent'),
    backoffMs: 20,
    backoffMaxMs: 100,
    blockMs: 200,
    timeoutMs: 2000,
    ...opts,
  });
}

function queueFor(sp: { base: string }, receiver: Receiver): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(webhookQueueName('aer1-anchor', hookId(receiver.url)), { connection: redis, prefix: sp.base });
}

describe('a receiver that hangs', () => {
  it('does not delay deliveries to a healthy receiver', { timeout: 30_000 }, async () => {
    const sp = space();
    const HANG_TIMEOUT_MS = 6000;
    const hanging = await startReceiver(() => 0);
    const healthy = await startReceiver(() => 200);
    const d = deliverer(sp, [hanging, healthy], { timeoutMs: HANG_TIMEOUT_MS });
    await d.start();
    try {
      const events = await emit(sp.stream, 20, 'hang');
      const t0 = Date.now();
      await waitFor('20 delivered to the healthy receiver', () => healthy.delivered().length === 20, HANG_TIMEOUT_MS - 1000, 20);
      const took = Date.now() - t0;
      expect(took).toBeLessThan(HANG_TIMEOUT_MS - 1000);
      expect(healthy.delivered().map((r) => r.eventId)).toEqual(events.map((e) => e.id));
      for (const r of healthy.delivered()) expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
      // the hanging receiver holds its first change; the rest wait behind it, in its queue only
      expect(hanging.requests.map((r) => r.eventId)).toEqual([events[0]!.id]);
      const q = queueFor(sp, hanging);
      expect(await q.getJobCounts('waiting', 'active')).toMatchObject({ waiting: 19, active: 1 });
      await q.close();
      // every key of both hooks' queues hangs on the daemon's hash tag: one Redis Cluster slot
      for (const r of [hanging, healthy]) {
        const keys: string[] = [];
        let cursor = '0';
        for (let i = 0; i < 10_000; i++) {
          const [next, page] = await redis.scan(cursor, 'MATCH', `*-wh-${hookId(r.url)}*`, 'COUNT', 10_000);
          keys.push(...page);
          cursor = next;
          if (cursor === '0') break;
        }
        expect(keys.length).toBeGreaterThan(3);
        for (const k of keys) expect(k.startsWith(`${sp.base}:`), k).toBe(true);
      }
    } finally {
      await d.stop();
      await Promise.all([hanging.close(), healthy.close()]);
    }
  });
});

/** The fan-out's lease held by a daemon that died: it ends in `ms`. */
async function deadHolder(sp: { base: string }, ms: number): Promise<void> {
  await redis.set(fanOutKeys(sp.base).lease, 'dead-daemon', 'PX', ms);
}

describe('a daemon that dies between adding changes to the queues and moving the cursor', () => {
  it('leaves nothing lost or repeated: the next fan-out adds them again, ignored where they were added already', { timeout: 30_000 }, async () => {
    const sp = space();
    const a = await startReceiver(() => 200);
    const b = await startReceiver(() => 200);
    // sets the fan-out's cursor at the end of the stream
    const first = deliverer(sp, [a, b]);
    await first.start();
    await first.stop();

    const events = await emit(sp.stream, 3, 'crash');
    // The dead daemon held the lease and added the changes to hook a's queue, not yet to b's, nor moved the cursor.
    await deadHolder(sp, 300);
    const qa = queueFor(sp, a);
    await enqueueChanges(qa, events.map((e) => ({ eventId: e.id, body: e.body })));

    const d = deliverer(sp, [a, b], { leaseMs: 300 });
    await d.start();
    try {
      await waitFor('b got all three', () => b.delivered().length === 3);
      await waitFor('the cursor past them', async () => (await redis.get(fanOutKeys(sp.base).cursor)) === events.at(-1)!.id);
      await waitFor('hook a idle', async () => {
        const c = await qa.getJobCounts('waiting', 'active', 'delayed');
        return (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) === 0;
      });
      expect(a.requests.map((r) => r.eventId)).toEqual(events.map((e) => e.id));
      expect(b.requests.map((r) => r.eventId)).toEqual(events.map((e) => e.id));
      const [oa, ob] = await new WebhookLog(redis, sp.base).overview([a.url, b.url]);
      expect([oa!.delivered, ob!.delivered]).toEqual([3, 3]);
    } finally {
      await d.stop();
      await qa.close();
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('a daemon that dies while adding a packed entry\'s changes to the queues', () => {
  it('leaves no subject event lost or repeated: the survivor expands the entry into the same event ids', { timeout: 90_000 }, async () => {
    const sp = space();
    const a = await startReceiver(() => 200);
    const b = await startReceiver(() => 200);
    const first = deliverer(sp, [a, b]);
    await first.start();
    await first.stop();

    const at = new Date().toISOString();
    const keys = Array.from({ length: 300 }, (_, i) => `packed-crash-${i}`);
    const id = (await redis.xadd(sp.stream, '*', 'data', JSON.stringify({ type: 'state', witness: 'ots', to: 'partial', at, detail: '', runs: [['pending', 'pending', 'partial', ...keys]] })))!;
    const ids = keys.map((_, i) => `${id}.${i}`);
    // the dead daemon held the lease and added the entry's first 120 events to hook a's queue only
    await deadHolder(sp, 300);
    const qa = queueFor(sp, a);
    await enqueueChanges(qa, keys.slice(0, 120).map((key, i) => ({ eventId: ids[i]!, body: JSON.stringify({ type: 'state', key, witness: 'ots', from: 'pending', to: 'partial', status: 'partial', previous: 'pending', at, detail: '' }) })));

    const d = deliverer(sp, [a, b], { leaseMs: 300 });
    await d.start();
    try {
      await waitFor('both got all 300', () => a.delivered().length === 300 && b.delivered().length === 300, 60_000);
      await waitFor('the cursor past the entry', async () => (await redis.get(fanOutKeys(sp.base).cursor)) === ids.at(-1));
      for (const r of [a, b]) {
        expect(r.requests.map((q) => q.eventId)).toEqual(ids);
        expect(r.requests.map((q) => (JSON.parse(q.body) as { key: string }).key)).toEqual(keys);
        for (const q of r.requests) expect(verifySignature(q.body, SECRET, String(q.headers['x-aer1-signature']))).toBe(true);
      }
    } finally {
      await d.stop();
      await qa.close();
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('a daemon that dies while a delivery is in flight', () => {
  it('has the change handed back by the stalled check (queue.stalledIntervalMs) and delivered by another daemon', { timeout: 30_000 }, async () => {
    const sp = space();
    const receiver = await startReceiver(() => 200);
    const queue = queueFor(sp, receiver);
    const [change] = await emit(sp.stream, 1, 'stalled');
    await enqueueChanges(queue, [{ eventId: change!.id, body: change!.body }]);
    // the dying daemon's worker takes the job and never finishes it; force-closing it stops its lock renewals
    const dyingConnection = redis.duplicate();
    const dying = new Worker<DeliveryJob>(queue.name, () => new Promise<never>(() => undefined), { connection: dyingConnection, prefix: sp.base, ...stalledJobOptions(1000) });
    await waitFor('the job taken', async () => (await queue.getJobState(change!.id)) === 'active');
    await dying.close(true);
    dyingConnection.disconnect();

    const d = deliverer(sp, [receiver], { stalledIntervalMs: 1000 });
    await d.start();
    try {
      await waitFor('delivered', () => receiver.delivered().length === 1, 20_000);
      expect(receiver.requests.map((r) => [r.eventId, r.attempt])).toEqual([[change!.id, 2]]);
      expect(verifySignature(receiver.requests[0]!.body, SECRET, String(receiver.requests[0]!.headers['x-aer1-signature']))).toBe(true);
    } finally {
      await d.stop();
      await queue.close();
      await receiver.close();
    }
  });
});
