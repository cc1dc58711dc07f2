/**
 * WebhookDeliverer on a real Redis stream and real BullMQ queues: retries with backoff,
 * gives up after its attempts (recorded, the cursor past it), and delivers at least once
 * across a stop and another daemon taking over; two daemons sharing a hook deliver each
 * change once.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { enqueueChanges, WebhookDeliverer, type WebhookDelivererOptions } from '../../src/adapters/webhooks/deliverer.js';
import { fanOutKeys } from '../../src/adapters/webhooks/fan-out.js';
import { hookId, WebhookLog } from '../../src/adapters/webhooks/delivery-log.js';
import { verifySignature } from '../../src/adapters/webhooks/signature.js';
import { webhookQueueName } from '../../src/adapters/bullmq/names.js';
import { SHARED_REDIS_URL, uniquePrefix, waitFor } from '../helpers/harness.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'webhook-secret-0123456789';
let redis: Redis;

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: null });
});

// the prefixes' keys are deleted after the file (test/helpers/clean-shared-redis.ts)
afterAll(async () => {
  await redis.quit();
});

function space(): { base: string; stream: string } {
  const base = `{${uniquePrefix('wh')}}`;
  return { base, stream: `${base}:events` };
}

async function emit(stream: string, n: number, label: string): Promise<Array<{ id: string; body: string }>> {
  const out: Array<{ id: string; body: string }> = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify({ type: 'state', key: `${label}-${i}`, witness: 'ots', from: 'pending', to: 'confirmed', status: 'confirmed', at: new Date().toISOString() });
    const id = (await redis.xadd(stream, '*', 'data', body))!;
    out.push({ id, body });
  }
  return out;
}

function deliverer(sp: { base: string; stream: string }, receiver: Receiver, opts: Partial<WebhookDelivererOptions> = {}): WebhookDeliverer {
  return new WebhookDeliverer({
    redis,
    stream: sp.stream,
    base: sp.base,
    hooks: [{ url: receiver.url, secret: SECRET }],
    log: createLogger('silent'),
    backoffMs: 20,
    backoffMaxMs: 100,
    blockMs: 200,
    timeoutMs: 2000,
    ...opts,
  });
}

/** The event id every hook's queue has up to (the fan-out's cursor). */
function cursorOf(sp: { base: string }): Promise<string | null> {
  return redis.get(fanOutKeys(sp.base).cursor);
}

describe('WebhookDeliverer', () => {
  it('retries a failing receiver and delivers each change, signed, in order', async () => {
    const sp = space();
    const receiver = await startReceiver((_id, nth) => (nth <= 2 ? 503 : 200));
    const d = deliverer(sp, receiver);
    await d.start();
    try {
      const events = await emit(sp.stream, 3, 'retry');
      await waitFor('three deliveries', () => receiver.delivered().length === 3);
      expect(receiver.delivered().map((r) => r.eventId)).toEqual(events.map((e) => e.id));
      await waitFor('the cursor past them', async () => (await cursorOf(sp)) === events.at(-1)!.id);
      for (const r of receiver.delivered()) {
        const e = events.find((x) => x.id === r.eventId)!;
        expect(r.body).toBe(e.body);
        expect(r.attempt).toBe(3);
        expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
        expect(r.headers['x-aer1-event-type']).toBe('state');
        expect(r.headers['content-type']).toBe('application/json');
      }
      expect(receiver.requests.map((r) => r.attempt)).toEqual([1, 2, 3, 1, 2, 3, 1, 2, 3]);
      const id = hookId(receiver.url);
      const recent = await new WebhookLog(redis, sp.base).recent(id, 10);
      expect(recent.map((r) => [r.eventId, r.outcome, r.attempts, r.httpStatus])).toEqual(events.map((e) => [e.id, 'delivered', 3, 200]).reverse());
    } finally {
      await d.stop();
      await receiver.close();
    }
  });

  it('gives up after its attempts, records the failure with the last answer, and goes on', async () => {
    const sp = space();
    // the first change the receiver sees always fails
    let firstSeen: string | null = null;
    const receiver = await startReceiver((id) => {
      firstSeen ??= id;
      return id === firstSeen ? 500 : 200;
    });
    const outcomes: string[] = [];
    const d = deliverer(sp, receiver, { maxAttempts: 3, onOutcome: (_h, o) => outcomes.push(o) });
    await d.start();
    try {
      const events = await emit(sp.stream, 2, 'giveup');
      const first = events[0]!.id;
      await waitFor('both settled', () => outcomes.length === 2);
      expect(receiver.requests.filter((r) => r.eventId === first)).toHaveLength(3);
      expect(receiver.delivered()[0]!.eventId).toBe(events[1]!.id);
      expect(outcomes).toEqual(['failed', 'delivered']);
      const log = new WebhookLog(redis, sp.base);
      const [overview] = await log.overview([receiver.url]);
      expect(overview).toMatchObject({ delivered: 1, failed: 1, url: receiver.url, lastFailedAt: expect.any(String) });
      expect(overview!.recent[1]).toMatchObject({ eventId: first, outcome: 'failed', attempts: 3, httpStatus: 500, error: 'HTTP 500: receiver says no' });
      await waitFor('the cursor past them', async () => (await cursorOf(sp)) === events.at(-1)!.id);
    } finally {
      await d.stop();
      await receiver.close();
    }
  });

  it('retries a change until its horizon after it was made, then records it failed', async () => {
    const sp = space();
    const receiver = await startReceiver(() => 503);
    const HORIZON = 600;
    const d = deliverer(sp, receiver, { retryHorizonMs: HORIZON });
    expect(d.maxAttempts).toBeGreaterThan(5);
    await d.start();
    try {
      const t0 = Date.now();
      const [change] = await emit(sp.stream, 1, 'horizon');
      const log = new WebhookLog(redis, sp.base);
      const rec = await waitFor('settled', async () => (await log.recent(hookId(receiver.url), 1))[0], 10_000, 20);
      // it gave up when the next wait (at most 100 ms + 20%) would have passed the horizon
      expect(Date.now() - t0).toBeGreaterThanOrEqual(HORIZON - 120);
      const tries = receiver.requests.filter((r) => r.eventId === change!.id).length;
      expect(tries).toBeGreaterThanOrEqual(3);
      expect(tries).toBeLessThan(d.maxAttempts);
      expect(rec).toMatchObject({ eventId: change!.id, outcome: 'failed', attempts: tries, httpStatus: 503 });
    } finally {
      await d.stop();
      await receiver.close();
    }
  });

  it('records changes already past their horizon behind a failing receiver without trying them', async () => {
    const sp = space();
    const receiver = await startReceiver(() => 200);
    const HORIZON = 300;
    const id = hookId(receiver.url);
    const log = new WebhookLog(redis, sp.base);
    // the hook's last delivery failed; two changes waited in its queue since
    await log.record(id, { eventId: '1-0', key: 'k', type: 'state', outcome: 'failed', attempts: 5, httpStatus: 503, error: 'HTTP 503', at: new Date().toISOString() });
    const old = await emit(sp.stream, 2, 'expired');
    const queue = new Queue(webhookQueueName('aer1-anchor', id), { connection: redis, prefix: sp.base });
    await enqueueChanges(queue, old.map((e) => ({ eventId: e.id, body: e.body })));
    const enqueuedAt = Date.now();
    await waitFor('both past their horizon', () => Date.now() - enqueuedAt > HORIZON + 50, 5000, 20);
    const d = deliverer(sp, receiver, { retryHorizonMs: HORIZON });
    await d.start();
    try {
      const recs = await waitFor('both recorded', async () => {
        const r = await log.recent(id, 10);
        return r.length === 3 ? r : null;
      });
      for (const e of old) {
        expect(recs.find((r) => r.eventId === e.id)).toMatchObject({ outcome: 'failed', attempts: 0, httpStatus: null, error: expect.stringMatching(/^not sent: older than the retry horizon/) });
      }
      expect(receiver.requests).toHaveLength(0);
      // a new change is tried and delivered
      const [fresh] = await emit(sp.stream, 1, 'fresh');
      await waitFor('the new change delivered', () => receiver.delivered().length === 1);
      expect(receiver.delivered()[0]!.eventId).toBe(fresh!.id);
    } finally {
      await d.stop();
      await queue.close();
      await receiver.close();
    }
  });

  it('records an unreachable receiver as failed with the network error', async () => {
    const sp = space();
    const gone = await startReceiver();
    await gone.close();
    const d = deliverer(sp, gone, { maxAttempts: 2 });
    await d.start();
    try {
      const [e] = await emit(sp.stream, 1, 'unreachable');
      const log = new WebhookLog(redis, sp.base);
      const rec = await waitFor('failure recorded', async () => (await log.recent(hookId(gone.url), 1))[0]);
      expect(rec).toMatchObject({ eventId: e!.id, outcome: 'failed', attempts: 2, httpStatus: null, error: 'ECONNREFUSED' });
    } finally {
      await d.stop();
    }
  });

  it('delivers at least once across a stop: another daemon takes over the change left in flight, then what came meanwhile', async () => {
    const sp = space();
    const receiver = await startReceiver(() => 500);
    const a = deliverer(sp, receiver, { maxAttempts: 1000, backoffMs: 50, backoffMaxMs: 50 });
    await a.start();
    const [stuck] = await emit(sp.stream, 1, 'restart');
    await waitFor('a tried', () => receiver.requests.length >= 2);
    await a.stop();
    // fanned out, the cursor past it; the change waits in the hook's queue, first in line
    expect(await cursorOf(sp)).toBe(stuck!.id);
    const queue = new Queue(webhookQueueName('aer1-anchor', hookId(receiver.url)), { connection: redis, prefix: sp.base });
    expect(await queue.getJobState(stuck!.id)).toBe('waiting');
    expect(await queue.getWaitingCount()).toBe(1);
    await queue.close();

    const meanwhile = await emit(sp.stream, 2, 'meanwhile');
    receiver.policy = () => 200;
    const b = deliverer(sp, receiver);
    await b.start();
    try {
      await waitFor('all three delivered', () => receiver.delivered().length === 3);
      expect(receiver.delivered().map((r) => r.eventId)).toEqual([stuck!.id, ...meanwhile.map((m) => m.id)]);
      // the attempt count goes on where daemon a stopped
      expect(receiver.delivered()[0]!.attempt).toBeGreaterThan(2);
      await waitFor('the cursor past them', async () => (await cursorOf(sp)) === meanwhile.at(-1)!.id);
    } finally {
      await b.stop();
      await receiver.close();
    }
  });

  it('shares one hook between two daemons without delivering a change twice', async () => {
    const sp = space();
    const receiver = await startReceiver(() => 200);
    const a = deliverer(sp, receiver);
    const b = deliverer(sp, receiver);
    await Promise.all([a.start(), b.start()]);
    try {
      const events = await emit(sp.stream, 40, 'shared');
      await waitFor('40 delivered', () => receiver.delivered().length === 40);
      const ids = receiver.requests.map((r) => r.eventId);
      expect(new Set(ids).size).toBe(40);
      expect([...ids].sort()).toEqual(events.map((e) => e.id).sort());
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await receiver.close();
    }
  });

  it('adds a live burst larger than it holds to the queue whole, once each, in order, by replaying from its cursor', { timeout: 60_000 }, async () => {
    const sp = space();
    const receiver = await startReceiver(() => 503);
    // one try, then a long pause: the changes stay in the hook's queue to be counted; it holds 500 live changes at most
    const d = deliverer(sp, receiver, { backoffMs: 60_000, backoffMaxMs: 60_000, maxPending: 500 });
    await d.start();
    const queue = d.queueOf(hookId(receiver.url))!;
    try {
      // one change first: once it is tried the fan-out follows live
      const [first] = await emit(sp.stream, 1, 'before-burst');
      await waitFor('the first change tried', () => receiver.requests.length === 1);
      const at = new Date().toISOString();
      const perEntry = 300;
      const entries = 20;
      // one transaction: the live reader gets the whole burst in one read
      const pipeline = redis.multi();
      for (let e = 0; e < entries; e++) {
        const keys = Array.from({ length: perEntry }, (_, i) => `burst-${e}-${i}`);
        pipeline.xadd(sp.stream, '*', 'data', JSON.stringify({ type: 'state', witness: 'ots', to: 'partial', at, detail: '', runs: [['pending', 'pending', 'partial', ...keys]] }));
      }
      const ids = ((await pipeline.exec()) ?? []).map(([, id]) => id as string);
      const eventIds = [first!.id, ...ids.flatMap((id) => Array.from({ length: perEntry }, (_, i) => `${id}.${i}`))];
      await waitFor('the cursor past the burst', async () => (await cursorOf(sp)) === eventIds.at(-1), 45_000);
      const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed'], 0, -1, true);
      expect(jobs.map((j) => j.id).sort()).toEqual([...eventIds].sort());
      // in the order of the stream: each job's timestamp is not before the one of the change before it
      const byId = new Map(jobs.map((j) => [j.id!, j.timestamp]));
      for (let i = 1; i < eventIds.length; i++) expect(byId.get(eventIds[i]!)!).toBeGreaterThanOrEqual(byId.get(eventIds[i - 1]!)!);
    } finally {
      await d.stop();
      await receiver.close();
    }
  });

  it('starts a new hook at the end of the stream and resumes an existing one where it stopped', async () => {
    const sp = space();
    await emit(sp.stream, 2, 'before-first-start');
    const receiver = await startReceiver(() => 200);
    const a = deliverer(sp, receiver);
    await a.start();
    const [one] = await emit(sp.stream, 1, 'first');
    await waitFor('one delivered', () => receiver.delivered().length === 1);
    await a.stop();
    const later = await emit(sp.stream, 2, 'while-stopped');
    const b = deliverer(sp, receiver);
    await b.start();
    try {
      await waitFor('three delivered', () => receiver.delivered().length === 3);
      expect(receiver.delivered().map((r) => r.eventId)).toEqual([one!.id, ...later.map((x) => x.id)]);
    } finally {
      await b.stop();
      await receiver.close();
    }
  });
});
