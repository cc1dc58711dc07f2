/**
 * The status API against a running daemon (real Redis, a dev relay, a dev calendar):
 * every endpoint's answers, including the refusals (401, 403, 400, 404, 405, 409, 413, 415).
 */
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { checkedFetch, expectUndocumented } from '../helpers/openapi.js';
import { TOKEN, startStack, withHttp, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack({ http: { maxBodyBytes: 4096 } });
});

afterAll(async () => {
  await s?.close();
});

async function errorOf(res: Response): Promise<{ code: string; message: string; field?: string }> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: { code: string; message: string; field?: string } };
  expect(typeof body.error.code).toBe('string');
  expect(typeof body.error.message).toBe('string');
  return body.error;
}

describe('health', () => {
  it('/livez answers 200 and /readyz 200 while Redis answers and the worker runs', async () => {
    expect(await (await s.get('/livez')).json()).toEqual({ status: 'ok' });
    const ready = await s.get('/readyz');
    expect(ready.status).toBe(200);
    // witnesses named, none failing here (the failing case: test/daemon/witness-health.test.ts)
    const body = (await ready.json()) as { status: string; failing: string[]; witnesses: Array<{ kind: string; state: string }> };
    expect(body).toMatchObject({ status: 'ready', failing: [] });
    expect(body.witnesses.length).toBeGreaterThan(0);
    for (const w of body.witnesses) expect(['ok', 'unknown']).toContain(w.state);
  });

  // Redis frozen, gone, full or read-only: test/reliability/redis-backpressure.test.ts, on a private redis-server
  it('/readyz answers 503 with the reason when the worker is not running', async () => {
    const view = withHttp(s.daemon, { port: 0 }, { running: false });
    const other = await startHttpServer({ daemon: view, log: s.log });
    try {
      const res = await checkedFetch(`${other.url}/readyz`);
      expect(res.status).toBe(503);
      const e = await errorOf(res);
      expect(e.code).toBe('not_ready');
      expect(e.message).toMatch(/worker/);
    } finally {
      await other.close();
    }
  });
});

describe('POST /v1/anchors', () => {
  it('queues one subject: 202 with its key and result', async () => {
    const subject = receiptFields();
    const res = await s.post('/v1/anchors', subject, { auth: true });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ keys: [subject.receipt_uuid], results: [{ key: subject.receipt_uuid, result: 'queued', status: null }] });
    await waitFor('accepted', async () => (await s.daemon.store.subjects.getRecord(subject.receipt_uuid)) !== null);
    const again = await s.post('/v1/anchors', subject, { auth: true });
    expect(again.status).toBe(202);
    expect(((await again.json()) as { results: Array<{ result: string }> }).results[0]!.result).toBe('known');
  });

  it('queues many subjects given as {"subjects": [...]}', async () => {
    const [a, b] = [receiptFields(), receiptFields()];
    const head = { subject: 'chain-head', job_id: `job-${randomBytes(4).toString('hex')}`, final_entry_digest: 'ab'.repeat(32), entry_count: 3 };
    const res = await s.post('/v1/anchors', { subjects: [a, b, head] }, { auth: true });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { keys: string[]; results: Array<{ key: string; result: string; job?: string }>; jobs: string[] };
    expect(body.keys).toEqual([a.receipt_uuid, b.receipt_uuid, head.job_id]);
    expect(body.results.map((r) => r.result)).toEqual(['queued', 'queued', 'queued']);
    // several subjects ride in one bulk job, named in each result
    expect(body.jobs).toHaveLength(1);
    expect(body.jobs[0]).toMatch(/^bulk-[0-9a-f]{40}$/);
    expect(body.results.map((r) => r.job)).toEqual([body.jobs[0], body.jobs[0], body.jobs[0]]);
    for (const key of body.keys) await waitFor(`${key} accepted`, async () => (await s.daemon.store.subjects.getRecord(key))?.status === 'pending' || (await s.daemon.store.subjects.getRecord(key))?.status === 'partial');
    // the same body again: all known now, no job added
    const again = (await (await s.post('/v1/anchors', { subjects: [a, b, head] }, { auth: true })).json()) as { results: Array<{ result: string }>; jobs: string[] };
    expect(again.results.map((r) => r.result)).toEqual(['known', 'known', 'known']);
    expect(again.jobs).toEqual([]);
  });

  it('answers 401 without the token or with a wrong one, naming the Bearer scheme', async () => {
    const none = await s.post('/v1/anchors', receiptFields());
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="aer1-anchor"');
    expect((await errorOf(none)).code).toBe('unauthorized');
    const wrong = await s.post('/v1/anchors', receiptFields(), { headers: { Authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const inQuery = await s.post(`/v1/anchors?access_token=${TOKEN}`, receiptFields());
    expect(inQuery.status).toBe(401);
  });

  it('answers 403 when no token is configured', async () => {
    const other = await startHttpServer({ daemon: withHttp(s.daemon, { port: 0, token: null }), log: s.log });
    try {
      const res = await checkedFetch(`${other.url}/v1/anchors`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer x' }, body: '{}' });
      expect(res.status).toBe(403);
      const e = await errorOf(res);
      expect(e.code).toBe('writes_disabled');
      expect(e.message).toMatch(/disabled/);
    } finally {
      await other.close();
    }
  });

  it('answers 400 with the reason and the field for bad input, and queues nothing', async () => {
    const notJson = await s.post('/v1/anchors', '{"subject": ', { auth: true });
    expect(notJson.status).toBe(400);
    expect(await errorOf(notJson)).toMatchObject({ code: 'bad_json', field: '$' });

    const empty = await s.post('/v1/anchors', '', { auth: true });
    expect(empty.status).toBe(400);

    // nested 200 deep (the test server's body limit is small; the check runs on any size): refused before anything walks it (issue 13)
    const deep = await s.post('/v1/anchors', `{"subject":${'['.repeat(200)}${']'.repeat(200)}}`, { auth: true });
    expect(deep.status).toBe(400);
    expect(await errorOf(deep)).toMatchObject({ code: 'too_deep', field: '$', message: expect.stringContaining('nested deeper than 64 levels') });

    const missing = await s.post('/v1/anchors', { subject: 'receipt', receipt_uuid: 'x-missing' }, { auth: true });
    expect(missing.status).toBe(400);
    const e = await errorOf(missing);
    expect(e.field).toBe('output_sha256');
    expect(e.message).toContain('output_sha256');

    const good = receiptFields();
    const inList = await s.post('/v1/anchors', { subjects: [good, { subject: 'receipt', receipt_uuid: 'y', output_sha256: 'zz' }] }, { auth: true });
    expect(inList.status).toBe(400);
    const e2 = await errorOf(inList);
    expect(e2.field).toBe('subjects[1].output_sha256');
    expect(e2.message).toMatch(/^subjects\[1\]: /);
    expect(await s.daemon.intakeQueue.getJob(good.receipt_uuid)).toBeUndefined();
    expect(await s.daemon.store.subjects.getRecord(good.receipt_uuid)).toBeNull();

    const unknown = await s.post('/v1/anchors', { nothing: 1 }, { auth: true });
    expect(unknown.status).toBe(400);
  });

  it('answers 415 for a body not declared as JSON', async () => {
    const res = await s.post('/v1/anchors', JSON.stringify(receiptFields()), { auth: true, headers: { 'Content-Type': 'text/plain' } });
    expect(res.status).toBe(415);
    expect((await errorOf(res)).code).toBe('unsupported_media_type');
  });

  it('answers 413 for a body over http.maxBodyBytes, declared or streamed', async () => {
    const big = JSON.stringify({ ...receiptFields(), pad: 'x'.repeat(5000) });
    const declared = await s.post('/v1/anchors', big, { auth: true });
    expect(declared.status).toBe(413);
    expect((await errorOf(declared)).code).toBe('body_too_large');

    const chunks = Array.from({ length: 10 }, () => Buffer.from('x'.repeat(1000)));
    const streamed = await checkedFetch(`${s.http.url}/v1/anchors`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
      body: Readable.toWeb(Readable.from(chunks)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    // the server still answers afterwards
    expect((await s.get('/livez')).status).toBe(200);
  });

  it('answers 409 for a key already anchored with another root', async () => {
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await waitFor('accepted', async () => (await s.daemon.store.subjects.getRecord(subject.receipt_uuid))?.status);
    const other = { ...subject, output_sha256: randomBytes(32).toString('hex') };
    const res = await s.post('/v1/anchors', other, { auth: true });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { error: { code: string; message: string }; keys: string[]; results: unknown[] };
    expect(body.error.code).toBe('conflict');
    expect(body.error.message).toContain(subject.receipt_uuid);

    const fresh = receiptFields();
    const many = await s.post('/v1/anchors', { subjects: [fresh, other] }, { auth: true });
    expect(many.status).toBe(409);
    const mb = (await many.json()) as { error: { field: string }; keys: string[]; results: Array<Record<string, unknown>> };
    expect(mb.error.field).toBe('subjects[1]');
    expect(mb.keys).toEqual([fresh.receipt_uuid]);
    expect(mb.results[0]).toMatchObject({ key: fresh.receipt_uuid, result: 'queued' });
    expect(mb.results[1]).toMatchObject({ key: subject.receipt_uuid, error: { code: 'conflict' } });
  });
});

describe('GET /v1/anchors/{key} and its proof', () => {
  const subject = receiptFields();

  beforeAll(async () => {
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await s.confirm([subject.receipt_uuid]);
  });

  it('shows the record, each relay and calendar, the Bitcoin block and the history', async () => {
    const res = await s.get(`/v1/anchors/${encodeURIComponent(subject.receipt_uuid)}`);
    expect(res.status).toBe(200);
    const a = (await res.json()) as Record<string, any>;
    expect(a).toMatchObject({ key: subject.receipt_uuid, kind: 'receipt', status: 'confirmed', reason: null });
    expect(a.envelope).toMatchObject({ type: 'zambo-receipt-anchor/1', receipt_uuid: subject.receipt_uuid, output_sha256: subject.output_sha256 });
    expect(a.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(a.witnesses.nostr).toMatchObject({ status: 'confirmed', mode: 'envelope', batch: null });
    expect(a.witnesses.nostr.eventId).toMatch(/^[0-9a-f]{64}$/);
    expect(a.witnesses.nostr.relays).toEqual([expect.objectContaining({ url: s.relays[0]!.url, status: 'accepted' })]);
    expect(a.witnesses.ots).toMatchObject({ status: 'confirmed', batch: { index: expect.any(Number), size: expect.any(Number), submitted: true } });
    expect(a.witnesses.ots.calendars).toEqual([expect.objectContaining({ url: s.calendars[0]!.url, status: 'confirmed' })]);
    expect(a.witnesses.ots.bitcoin).toMatchObject({ height: expect.any(Number), block_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(a.history[0]).toMatchObject({ event: 'accepted', status: 'pending', digest: a.digest });
    expect(a.history).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: 'witness', witness: 'nostr', to: 'confirmed' }),
        expect.objectContaining({ event: 'witness', witness: 'ots', to: 'confirmed' }),
      ]),
    );
    expect(a.history.at(-1)).toMatchObject({ status: 'confirmed' });
  });

  it('exports the aer1-anchor-proof-v1', async () => {
    const res = await s.get(`/v1/anchors/${subject.receipt_uuid}/proof`);
    expect(res.status).toBe(200);
    const proof = (await res.json()) as Record<string, any>;
    expect(proof).toMatchObject({ version: 'aer1-anchor-proof-v1', status: 'confirmed' });
    expect(proof.nostr.event.id).toMatch(/^[0-9a-f]{64}$/);
    expect(typeof proof.ots.proof).toBe('string');
    expect(proof.ots.bitcoin).toBeDefined();
  });

  it('answers 404 for an unknown key, and for the proof of a refused subject with its reason', async () => {
    const res = await s.get('/v1/anchors/no-such-key%2Fat-all');
    expect(res.status).toBe(404);
    const e = await errorOf(res);
    expect(e).toMatchObject({ code: 'not_found', field: 'key' });
    expect(e.message).toContain('no-such-key/at-all');
    expect((await s.get('/v1/anchors/no-such-key/proof')).status).toBe(404);

    const key = `refused-${randomBytes(4).toString('hex')}`;
    await s.daemon.intakeQueue.add(ANCHOR_JOB, { subject: 'receipt', receipt_uuid: key }, { jobId: key, removeOnFail: true });
    await waitFor('refused', async () => (await s.daemon.store.subjects.getRecord(key))?.status === 'rejected');
    const rec = await s.get(`/v1/anchors/${key}`);
    expect(rec.status).toBe(200);
    expect(await rec.json()).toMatchObject({ status: 'rejected', reason: expect.stringContaining('output_sha256') });
    const proof = await s.get(`/v1/anchors/${key}/proof`);
    expect(proof.status).toBe(404);
    expect(await errorOf(proof)).toMatchObject({ code: 'no_proof', message: expect.stringContaining('output_sha256') });
  });
});

describe('GET /v1/anchors (list)', () => {
  const keys: string[] = [];

  beforeAll(async () => {
    const subjects = Array.from({ length: 7 }, () => receiptFields());
    // one at a time, so acceptance times (the list order) follow the array
    for (const x of subjects) {
      expect((await s.post('/v1/anchors', x, { auth: true })).status).toBe(202);
      await waitFor('accepted', async () => (await s.daemon.store.subjects.getRecord(x.receipt_uuid)) !== null);
      keys.push(x.receipt_uuid);
      await new Promise((r) => setTimeout(r, 5));
    }
  });

  it('pages newest first with an opaque cursor until next is null', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 100; i++) {
      const res = await s.get(`/v1/anchors?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as { items: Array<{ key: string; status: string; witnesses: Record<string, string> }>; next: string | null };
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((x) => x.key));
      cursor = page.next;
      if (!cursor) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    const ours = seen.filter((k) => keys.includes(k));
    expect(ours).toEqual([...keys].reverse());
  });

  it('filters by status and by witness (backend is an alias)', async () => {
    const res = await s.get('/v1/anchors?status=rejected&limit=1000');
    const page = (await res.json()) as { items: Array<{ status: string }> };
    expect(page.items.length).toBeGreaterThan(0);
    expect(page.items.every((x) => x.status === 'rejected')).toBe(true);
    const byWitness = (await (await s.get('/v1/anchors?witness=ots&status=pending&limit=1000')).json()) as { items: Array<{ key: string; witnesses: Record<string, string> }> };
    expect(byWitness.items.every((x) => x.witnesses.ots === 'pending')).toBe(true);
    expect(byWitness.items.map((x) => x.key)).toEqual(expect.arrayContaining(keys));
    const alias = (await (await s.get('/v1/anchors?backend=ots&status=pending&limit=1000')).json()) as { items: Array<{ key: string; witnesses: Record<string, string> }> };
    // the same subjects (their Nostr witness may move on between the two reads; OTS waits here)
    expect(alias.items.every((x) => x.witnesses.ots === 'pending')).toBe(true);
    expect(alias.items.map((x) => x.key)).toEqual(byWitness.items.map((x) => x.key));
  });

  it('answers 400 naming the parameter for bad values', async () => {
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=abc', 'limit'],
      ['status=nope', 'status'],
      ['witness=carrier-pigeon', 'witness'],
      ['witness=ots&status=rejected', 'status'],
      ['cursor=%21%21', 'cursor'],
      ['sort=asc', 'sort'],
      ['witness=ots&backend=ots', 'backend'],
    ] as const) {
      const res = await s.get(`/v1/anchors?${q}`);
      expect(res.status, q).toBe(400);
      expect((await errorOf(res)).field, q).toBe(field);
    }
  });
});

describe('GET /v1/stats and the rest', () => {
  it('gives counts by status and witness, queue depth, oldest pending and last confirmation', async () => {
    const stats = (await (await s.get('/v1/stats')).json()) as Record<string, any>;
    expect(stats.subjects.total).toBe(Object.values(stats.subjects.byStatus as Record<string, number>).reduce((a, b) => a + b, 0));
    expect(Object.keys(stats.subjects.byStatus).sort()).toEqual(['confirmed', 'failed', 'partial', 'pending', 'rejected']);
    expect(stats.subjects.byStatus.confirmed).toBeGreaterThan(0);
    expect(Object.keys(stats.witnesses).sort()).toEqual(['nostr', 'ots']);
    expect(stats.witnesses.ots.lastConfirmedAt).toMatch(/Z$/);
    expect(stats.witnesses.ots.oldestPending).toMatchObject({ since: expect.stringMatching(/Z$/), ageSeconds: expect.any(Number) });
    expect(stats.oldestPending).toMatchObject({ key: expect.any(String) });
    expect(stats.queue).toEqual({ waiting: expect.any(Number), active: expect.any(Number), delayed: expect.any(Number), failed: expect.any(Number) });
  });

  it('serves the OpenAPI 3.1 document, and every path in it answers', async () => {
    const res = await s.get('/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(
      ['/', '/app.js', '/style.css', '/verify', '/verify.js', '/verify.bundle.js', '/livez', '/metrics', '/openapi.json', '/readyz', '/v1/anchors', '/v1/anchors/{key}', '/v1/anchors/{key}/proof', '/v1/events', '/v1/stats', '/v1/info', '/v1/timeline', '/v1/webhooks', '/v1/ws', '/v1/log/checkpoint', '/v1/log/vkey', '/v1/log/tile/{tile+}', '/v1/log/{shard}/checkpoint', '/v1/log/{shard}/vkey', '/v1/log/{shard}/tile/{tile+}'].sort(),
    );
    const refs = JSON.stringify(doc).match(/#\/components\/[a-zA-Z]+\/[A-Za-z]+/g) ?? [];
    for (const ref of new Set(refs)) {
      const [, , group, name] = ref.split('/');
      expect((doc as any).components[group!][name!], ref).toBeDefined();
    }
    for (const path of Object.keys(doc.paths)) {
      if (path === '/v1/events' || path === '/v1/ws') continue;
      const r = await s.get(path.replace('{key}', 'no-such-key'));
      expect([200, 404], path).toContain(r.status);
      if (r.status === 404) expect((await errorOf(r)).code, path).toBe('not_found');
      else await r.arrayBuffer();
    }
    expect((await s.get('/v1/ws')).status).toBe(426);
  });

  it('answers 404 for an unknown endpoint and 405 with Allow for a wrong method', async () => {
    const res = await s.get('/v2/anything', { undocumented: true });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe('not_found');
    const del = await fetch(`${s.http.url}/v1/anchors`, { method: 'DELETE' });
    expectUndocumented('DELETE', '/v1/anchors', del.status);
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET, POST');
  });

  it('serves /metrics in the Prometheus text format', async () => {
    const res = await s.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const name of ['aer1_anchor_subjects', 'aer1_anchor_oldest_pending_seconds', 'aer1_anchor_time_to_confirm_seconds_bucket', 'aer1_relay_publish_total', 'aer1_calendar_requests_total', 'aer1_queue_jobs', 'process_cpu_user_seconds_total']) {
      expect(text, name).toContain(name);
    }
  });
});

describe('reads when http.readsRequireToken', () => {
  let strict: HttpServer;
  const logged: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logged.push(chunk.toString('utf8'));
        done();
      },
    });
    strict = await startHttpServer({ daemon: withHttp(s.daemon, { port: 0, readsRequireToken: true }), log: createLogger('trace', sink) });
  });

  afterAll(async () => {
    await strict?.close();
  });

  it('answers 401 to every read without the token, keeps health probes and page files public', async () => {
    for (const path of ['/v1/stats', '/v1/anchors', '/v1/anchors/x', '/v1/anchors/x/proof', '/metrics', '/v1/events', '/v1/webhooks']) {
      const res = await checkedFetch(`${strict.url}${path}`);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate'), path).toMatch(/^Bearer /);
    }
    for (const path of ['/livez', '/readyz', '/', '/app.js', '/style.css', '/openapi.json', '/verify', '/verify.js', '/verify.bundle.js']) {
      expect((await checkedFetch(`${strict.url}${path}`)).status, path).toBe(200);
    }
  });

  it('lets reads through with the header or the access_token parameter', async () => {
    expect((await checkedFetch(`${strict.url}/v1/stats`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await checkedFetch(`${strict.url}/v1/stats?access_token=${TOKEN}`)).status).toBe(200);
    expect((await checkedFetch(`${strict.url}/v1/stats?access_token=wrong`)).status).toBe(401);
  });

  it('never writes the token to the log', async () => {
    await checkedFetch(`${strict.url}/v1/anchors/x?access_token=${TOKEN}`);
    await checkedFetch(`${strict.url}/v1/anchors`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: '{' });
    await checkedFetch(`${strict.url}/v1/anchors`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}x`, 'Content-Type': 'application/json' }, body: '{}' });
    const text = logged.join('');
    expect(text).toContain('"path":"/v1/anchors/x"');
    expect(text).not.toContain(TOKEN);
  });

  it('refuses to start when reads require a token but none is set', async () => {
    await expect(startHttpServer({ daemon: withHttp(s.daemon, { port: 0, readsRequireToken: true, token: null }), log: s.log })).rejects.toThrow(/http\.readsRequireToken/);
  });
});

describe('the status page files', () => {
  it('serves index.html, app.js and style.css with their types and a strict CSP on the page', async () => {
    const page = await s.get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script src="app.js"');
    const js = await s.get('/app.js');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).toContain('EventSource');
    expect((await s.get('/style.css')).headers.get('content-type')).toMatch(/^text\/css/);
    const etag = page.headers.get('etag')!;
    expect((await s.get('/', { headers: { 'If-None-Match': etag } })).status).toBe(304);
  });
});
