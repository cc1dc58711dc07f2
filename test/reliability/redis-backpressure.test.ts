/**
 * Honest back-pressure on a private redis-server (issue 18, reproduction 4): while Redis is
 * frozen (SIGSTOP), gone (SIGTERM), full (`maxmemory`, `noeviction`) or a read-only replica,
 * `POST /v1/anchors`, `/v1/stats` and look-ups answer 503 with `Retry-After` within the
 * configured bound (`http.redisTimeoutMs`), `/readyz` is red with the reason, and a POST
 * the client was told 503 for is not applied once Redis answers again.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis, receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';

const BOUND_MS = 2500;
/** Generous: the bound plus scheduling noise on a shared machine; the point is "not the whole outage". */
const ANSWERED_WITHIN_MS = 8000;
/** Longer than any outage below: a hanging request shows up as a failure, not a stuck test. */
const CLIENT_GIVES_UP_MS = 20_000;

let redis: EmbeddedRedis;
let s: Stack;
let admin: Redis;
const figures: Record<string, number> = {};

beforeAll(async () => {
  redis = await privateRedis(true);
  s = await startStack({ redisUrl: redis.url, http: { redisTimeoutMs: BOUND_MS } });
  admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => undefined);
}, 60_000);

afterAll(async () => {
  redis?.child.kill('SIGCONT');
  await s?.close();
  admin?.disconnect();
  await redis?.stop();
}, 60_000);

interface Timed {
  res: Response;
  ms: number;
  body: { error?: { code: string; message: string }; keys?: string[] };
}

async function timed(send: (signal: AbortSignal) => Promise<Response>): Promise<Timed> {
  const started = Date.now();
  const res = await send(AbortSignal.timeout(CLIENT_GIVES_UP_MS));
  const body = (await res.json()) as Timed['body'];
  return { res, ms: Date.now() - started, body };
}

const post = (body: unknown): Promise<Timed> => timed((signal) => s.post('/v1/anchors', body, { auth: true, signal }));
const get = (path: string): Promise<Timed> => timed((signal) => s.get(path, { signal }));

/** A 503 that tells the client when to come back and why, answered within the bound. */
function expectRefused(t: Timed, code: string | RegExp, what: string): void {
  expect(t.res.status, what).toBe(503);
  expect(t.res.headers.get('retry-after'), what).toMatch(/^[1-9]\d*$/);
  expect(t.body.error?.code, what).toMatch(code);
  expect(t.ms, what).toBeLessThan(ANSWERED_WITHIN_MS);
}

async function ready(): Promise<boolean> {
  const res = await s.get('/readyz');
  await res.arrayBuffer();
  return res.status === 200;
}

async function accepted(key: string): Promise<boolean> {
  return (await s.daemon.store.subjects.getRecord(key)) !== null;
}

/** The subject reached Redis: as a job or as a record. */
async function applied(key: string): Promise<boolean> {
  return (await accepted(key)) || (await s.daemon.intakeQueue.getJob(key)) !== undefined;
}

/** A POST after the outage, accepted: every command sent before it has been applied by now. */
async function settle(): Promise<void> {
  await waitFor('/readyz green again', ready, 60_000, 200);
  const marker = receiptFields();
  expect((await post(marker)).res.status).toBe(202);
  await waitFor('the marker accepted', () => accepted(marker.receipt_uuid), 30_000, 50);
}

describe('a Redis that does not answer', () => {
  it('frozen (SIGSTOP): POST, stats and look-ups answer 503 within the bound; the POST is not applied when Redis resumes', { timeout: 120_000 }, async () => {
    const before = receiptFields();
    expect((await post(before)).res.status).toBe(202);
    await waitFor('a subject accepted before the freeze', () => accepted(before.receipt_uuid), 30_000, 50);
    const frozen = receiptFields();
    redis.child.kill('SIGSTOP');
    try {
      const p = await post(frozen);
      expectRefused(p, 'redis_timeout', 'POST');
      expect(p.body.error?.message).toMatch(new RegExp(`${BOUND_MS} ms`));
      const stats = await get('/v1/stats');
      expectRefused(stats, 'redis_timeout', 'stats');
      figures.frozenStatsMs = stats.ms;
      expectRefused(await get(`/v1/anchors/${before.receipt_uuid}`), 'redis_timeout', 'look-up');
      expectRefused(await get('/v1/anchors?limit=5'), 'redis_timeout', 'list');
      const r = await get('/readyz');
      expect(r.res.status).toBe(503);
      expect(r.ms).toBeLessThan(ANSWERED_WITHIN_MS);
      figures.frozenPostMs = p.ms;
    } finally {
      redis.child.kill('SIGCONT');
    }
    await settle();
    expect(await applied(frozen.receipt_uuid)).toBe(false);
    expect((await get(`/v1/anchors/${before.receipt_uuid}`)).res.status).toBe(200);
  });

  it('gone (SIGTERM): POST and stats answer 503 at once; the POST is not applied after Redis is back', { timeout: 120_000 }, async () => {
    const { dir, port } = redis;
    await redis.stop();
    const gone = receiptFields();
    try {
      const p = await post(gone);
      expectRefused(p, 'redis_unavailable', 'POST');
      expectRefused(await get('/v1/stats'), 'redis_unavailable', 'stats');
      expectRefused(await get('/metrics'), 'redis_unavailable', 'metrics');
      for (const path of [`/v1/anchors/${gone.receipt_uuid}`, `/v1/anchors/${gone.receipt_uuid}/proof`, '/v1/anchors']) {
        expectRefused(await get(path), 'redis_unavailable', path);
      }
      expect((await get('/readyz')).res.status).toBe(503);
      figures.gonePostMs = p.ms;
    } finally {
      redis = await startEmbeddedRedis({ dir, port });
    }
    await settle();
    expect(await applied(gone.receipt_uuid)).toBe(false);
  });
});

describe('a Redis that refuses writes', () => {
  it('full (maxmemory, noeviction): POST answers 503 naming OOM, /readyz is red; green again and POST works once the limit is raised', { timeout: 180_000 }, async () => {
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory', String(used + 2_000_000));
    let refused: Timed | null = null;
    let queuedBefore = 0;
    try {
      // small POSTs, so the time one takes is the wait on Redis, not the work of many subjects
      for (let i = 0; i < 1000 && refused === null; i++) {
        const t = await post({ subjects: Array.from({ length: 20 }, () => receiptFields()) });
        if (t.res.status === 503) refused = t;
        else {
          expect(t.res.status).toBe(202);
          queuedBefore += t.body.keys?.length ?? 0;
        }
      }
      expect(refused, 'Redis filled up').not.toBeNull();
      expectRefused(refused!, 'redis_out_of_memory', 'POST');
      expect(refused!.body.error?.message).toMatch(/OOM/);
      // what was queued before the refusal is listed, so the client knows what to send again
      expect(Array.isArray(refused!.body.keys)).toBe(true);
      const r = await get('/readyz');
      expect(r.res.status).toBe(503);
      expect(r.body.error?.message).toMatch(/refuses writes.*OOM/);
      figures.fullPostMs = refused!.ms;
      figures.queuedBeforeFull = queuedBefore;
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    const raised = Date.now();
    await waitFor('/readyz green once the limit is raised', ready, 60_000, 200);
    figures.fullGreenAfterRaiseMs = Date.now() - raised;
    expect((await post(receiptFields())).res.status).toBe(202);
  });

  it('a read-only replica: POST answers 503 naming READONLY, /readyz is red; green again once it is a primary', { timeout: 120_000 }, async () => {
    // a primary that does not exist: the replica keeps its data and refuses writes
    await admin.call('REPLICAOF', '127.0.0.1', '1');
    try {
      const p = await post(receiptFields());
      expectRefused(p, 'redis_read_only', 'POST');
      expect(p.body.error?.message).toMatch(/READONLY/);
      const r = await get('/readyz');
      expect(r.res.status).toBe(503);
      expect(r.body.error?.message).toMatch(/refuses writes.*READONLY/);
    } finally {
      await admin.call('REPLICAOF', 'NO', 'ONE');
    }
    await settle();
    console.log(`back-pressure figures: ${JSON.stringify(figures)}`);
  });
});
