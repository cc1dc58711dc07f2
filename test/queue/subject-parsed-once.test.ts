/**
 * Issue 25 item 3: each subject is read once per process, at the edge — the HTTP body (or a
 * CLI file) in the producer, the job data in the intake — and its envelope's canonical JSON is
 * built once there; nothing after the edge reads or canonicalises it again. A list page shows
 * what it read, without rebuilding envelopes.
 *
 * A probe, not a mock of behaviour: the real parse and canonical-JSON functions run, wrapped
 * in counters (vi.mock passes every call through), on a real daemon's HTTP server, intake and
 * Redis. The daemon is built but not started, so nothing else (witnesses, reconciler) runs
 * while a phase is counted; the intake is called as its worker calls it, with the job the
 * POST queued. With one shard and three (the shard router), and in Nostr envelope mode, where
 * the intake also signs each subject's event.
 */
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Job } from 'bullmq';
import type { IntakeResult, BulkIntakeResult } from '../../src/adapters/intake/intake.js';

const count = vi.hoisted(() => ({ reads: 0, claimChecks: 0, canonical: 0, envelopeReparses: 0 }));

vi.mock('../../src/core/envelope/from-document.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../../src/core/envelope/from-document.js')>();
  return { ...m, claimsFromInput: (...a: Parameters<typeof m.claimsFromInput>) => (count.reads++, m.claimsFromInput(...a)) };
});
vi.mock('../../src/core/envelope/claims.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../../src/core/envelope/claims.js')>();
  return { ...m, parseClaims: (...a: Parameters<typeof m.parseClaims>) => (count.claimChecks++, m.parseClaims(...a)) };
});
vi.mock('../../src/core/aer1/canonical-json.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../../src/core/aer1/canonical-json.js')>();
  return {
    ...m,
    canonicalJson: (v: unknown) => (count.canonical++, m.canonicalJson(v)),
    canonicalBytes: (v: unknown) => (count.canonical++, m.canonicalBytes(v)),
  };
});

const { createLogger } = await import('../../src/daemon/logger.js');
const { Daemon } = await import('../../src/daemon/daemon.js');
const { startHttpServer } = await import('../../src/adapters/http/server.js');
const { SHARED_REDIS_URL, receiptFields, testConfig, uniquePrefix } = await import('../helpers/harness.js');
const { generateSecretKey } = await import('../../src/core/nostr/keys.js');

const TOKEN = 'test-token-0123456789abcdef';
type Counts = typeof count;

function reset(): void {
  count.reads = 0;
  count.claimChecks = 0;
  count.canonical = 0;
  count.envelopeReparses = 0;
}

/** The counts per subject while `fn` runs (an envelope's text parsed back as JSON counted too). */
async function perSubject<T>(subjects: number, fn: () => Promise<T>): Promise<{ counts: Counts; value: T }> {
  const parse = JSON.parse;
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    if (typeof text === 'string' && text.startsWith('{"anchored_at":')) count.envelopeReparses++;
    return parse(text, reviver);
  });
  reset();
  try {
    const value = await fn();
    const counts = { ...count };
    for (const k of Object.keys(counts) as Array<keyof Counts>) counts[k] /= subjects;
    return { counts, value };
  } finally {
    spy.mockRestore();
  }
}

const ONCE: Counts = { reads: 1, claimChecks: 1, canonical: 1, envelopeReparses: 0 };

interface Rig {
  daemon: InstanceType<typeof Daemon>;
  post(body: unknown): Promise<Response>;
  get(path: string): Promise<Response>;
  /** The jobs waiting on every intake queue of the daemon (each shard's, and the usual one). */
  waiting(): Promise<Job[]>;
  close(): Promise<void>;
}

const rigs: Rig[] = [];
afterAll(async () => {
  for (const r of rigs) await r.close();
});

async function rig(shards: number, envelopeMode: boolean): Promise<Rig> {
  // witnesses never contacted: the daemon is not started
  const nostr = envelopeMode ? { nostr: { enabled: true, mode: 'envelope', relays: ['ws://127.0.0.1:1'] } } : {};
  const config = testConfig({
    prefix: uniquePrefix('once'),
    overrides: { redis: { shards }, ...nostr, ots: { enabled: true, calendars: ['http://127.0.0.1:1'] }, http: { enabled: true, host: '127.0.0.1', port: 0, token: TOKEN } },
  });
  const daemon = new Daemon({ config, redisUrl: SHARED_REDIS_URL, log: createLogger('silent'), signingKey: envelopeMode ? generateSecretKey() : null });
  for (const store of daemon.state.shards) await store.openSchema({ write: true });
  const http = await startHttpServer({ daemon, log: createLogger('silent') });
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
  const r: Rig = {
    daemon,
    post: (body) => fetch(`${http.url}/v1/anchors`, { method: 'POST', headers, body: JSON.stringify(body) }),
    get: (path) => fetch(`${http.url}${path}`, { headers }),
    async waiting() {
      const queues = [...new Set([daemon.intakeQueue, ...daemon.intakeTargets.map((t) => t.queue)])];
      return (await Promise.all(queues.map((q) => q.getJobs(['waiting'])))).flat();
    },
    async close() {
      await http.close();
      await daemon.stop();
    },
  };
  rigs.push(r);
  return r;
}

/** Hands each waiting job to the intake as its worker does, then removes it. */
async function intake(r: Rig, jobs: Job[]): Promise<Array<IntakeResult | BulkIntakeResult>> {
  const out: Array<IntakeResult | BulkIntakeResult> = [];
  for (const job of jobs) {
    out.push(await r.daemon.intakeProcessor().process(job.id, job.data));
    await job.remove();
  }
  return out;
}

describe.each([
  { shards: 1, envelopeMode: false },
  { shards: 3, envelopeMode: false },
  // the intake signs each subject's event from the envelope it built
  { shards: 1, envelopeMode: true },
])('with $shards shard(s), Nostr envelope mode $envelopeMode', ({ shards, envelopeMode }) => {
  let r: Rig;
  beforeEach(async () => {
    r ??= await rig(shards, envelopeMode);
  });

  it('POST /v1/anchors reads one subject once and builds its canonical JSON once', async () => {
    const subject = receiptFields();
    const { counts, value: res } = await perSubject(1, () => r.post(subject));
    expect(res.status).toBe(202);
    expect(counts).toEqual(ONCE);
    // the queue path: the intake reads the job data once more (untrusted input across the queue) and only once
    const jobs = await r.waiting();
    expect(jobs.map((j) => j.data)).toEqual([subject]);
    const done = await perSubject(1, () => intake(r, jobs));
    expect(done.value).toEqual([expect.objectContaining({ key: subject.receipt_uuid, result: 'created' })]);
    expect(done.counts).toEqual(ONCE);
  });

  it('a bulk POST reads each subject once; a bulk job is read once per subject by the intake', async () => {
    const subjects = Array.from({ length: 6 }, () => receiptFields());
    const { counts, value: res } = await perSubject(subjects.length, () => r.post({ subjects }));
    expect(res.status).toBe(202);
    expect(counts).toEqual(ONCE);
    const jobs = await r.waiting();
    expect(jobs.flatMap((j) => (j.data as { subjects: unknown[] }).subjects)).toHaveLength(subjects.length);
    const done = await perSubject(subjects.length, () => intake(r, jobs));
    expect(done.value.reduce((n, x) => n + ('bulk' in x ? x.created : 0), 0)).toBe(subjects.length);
    expect(done.counts).toEqual(ONCE);
  });

  it('a job put on the usual intake queue is read once by the intake (routed by the router with K > 1)', async () => {
    const subject = receiptFields();
    const bulk = Array.from({ length: 5 }, () => receiptFields());
    const single = await perSubject(1, () => r.daemon.intakeProcessor().process(subject.receipt_uuid, subject));
    expect(single.value).toMatchObject({ key: subject.receipt_uuid, result: 'created' });
    expect(single.counts).toEqual(ONCE);
    // added without an id (BullMQ numbers it): the router takes the key from the document
    const unnamed = receiptFields();
    const generated = await perSubject(1, () => r.daemon.intakeProcessor().process('17', unnamed));
    expect(generated.value).toMatchObject({ key: unnamed.receipt_uuid, result: 'created' });
    expect(generated.counts).toEqual(ONCE);
    const many = await perSubject(bulk.length, () => r.daemon.intakeProcessor().process('bulk-job', { subjects: bulk }));
    expect(many.value).toMatchObject({ bulk: true, created: bulk.length });
    expect(many.counts).toEqual(ONCE);
  });

  it('GET /v1/anchors lists what it read, without rebuilding or hashing an envelope', async () => {
    const subjects = Array.from({ length: 4 }, () => receiptFields());
    const accepted = (await r.daemon.intakeProcessor().process(undefined, { subjects })) as BulkIntakeResult;
    expect(accepted.created).toBe(subjects.length);
    const res = await perSubject(1, () => r.get('/v1/anchors?limit=1000'));
    expect(res.value.status).toBe(200);
    const page = (await res.value.json()) as { items: Array<{ key: string; digest: string; status: string }> };
    const listed = page.items.filter((i) => subjects.some((s) => s.receipt_uuid === i.key));
    expect(listed).toHaveLength(subjects.length);
    expect(listed.every((i) => /^[0-9a-f]{64}$/.test(i.digest) && i.status === 'pending')).toBe(true);
    expect(res.counts).toEqual({ reads: 0, claimChecks: 0, canonical: 0, envelopeReparses: 0 });
  });
});
