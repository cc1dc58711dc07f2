/**
 * `/metrics` and `/v1/stats` read the same numbers: after 100 subjects (and two refused
 * jobs) they agree in a mixed state (Nostr confirmed, OTS waiting for a block) and again
 * once everything is confirmed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack();
});

afterAll(async () => {
  await s?.close();
});

type Samples = Map<string, number>;

/** `name{a="x",b="y"} 3` lines → map keyed by name and sorted labels. */
function parseProm(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}=${v}`).sort();
    out.set(`${m[1]}{${labels.join(',')}}`, Number(m[3]));
  }
  return out;
}

async function readStats(): Promise<Stats> {
  return (await (await s.get('/v1/stats')).json()) as Stats;
}

/** Numbers without the clock: what must not move between two reads. */
function still(x: Stats): string {
  return JSON.stringify({ subjects: x.subjects, queue: x.queue, witnesses: Object.values(x.witnesses).map((w) => [w!.counts, w!.oldestPending === null]) });
}

/**
 * Metrics read between two equal stats (upgrade polls move jobs between queue states now
 * and then, so a read that straddles one is taken again). While polls run, a job can leave
 * a state and come back between two reads, so queue depths are compared only once the
 * witnesses are done.
 */
async function both(): Promise<{ metrics: Samples; stats: Stats }> {
  for (let i = 0; i < 50; i++) {
    const before = await readStats();
    const metrics = parseProm(await (await s.get('/metrics')).text());
    const after = await readStats();
    if (still(before) === still(after)) return { metrics, stats: after };
  }
  throw new Error('stats kept changing across 50 reads');
}

function expectAgreement(metrics: Samples, stats: Stats, { queue }: { queue: boolean }): void {
  for (const [status, n] of Object.entries(stats.subjects.byStatus)) {
    expect(metrics.get(`aer1_anchor_subjects{status=${status},witness=all}`), `all/${status}`).toBe(n);
  }
  for (const [witness, w] of Object.entries(stats.witnesses)) {
    for (const [status, n] of Object.entries(w!.counts)) {
      expect(metrics.get(`aer1_anchor_subjects{status=${status},witness=${witness}}`), `${witness}/${status}`).toBe(n);
    }
    const oldest = metrics.get(`aer1_anchor_oldest_pending_seconds{witness=${witness}}`);
    if (w!.oldestPending === null) expect(oldest, `${witness} oldest`).toBe(0);
    else expect(oldest, `${witness} oldest`).toBeGreaterThan(0);
  }
  if (queue) for (const [state, n] of Object.entries(stats.queue)) expect(metrics.get(`aer1_queue_jobs{state=${state}}`), `queue ${state}`).toBe(n);
}

describe('after 100 subjects', () => {
  const subjects = Array.from({ length: 100 }, () => receiptFields());
  const keys = subjects.map((x) => x.receipt_uuid);

  beforeAll(async () => {
    const res = await s.post('/v1/anchors', { subjects }, { auth: true });
    expect(res.status).toBe(202);
    for (let i = 0; i < 2; i++) {
      const key = `refused-${randomBytes(4).toString('hex')}`;
      await s.daemon.intakeQueue.add(ANCHOR_JOB, { subject: 'receipt', receipt_uuid: key }, { jobId: key, removeOnFail: true });
    }
  });

  it('agree while Nostr is confirmed and OTS waits for a block', async () => {
    await waitFor('Nostr confirmed, OTS pending, two refused', async () => {
      const x = await readStats();
      return x.witnesses.nostr!.counts.confirmed === 100 && x.subjects.byStatus.rejected === 2 && x.witnesses.ots!.counts.pending === 100;
    });
    // calendars hold the batch but no block is mined, so the subjects stay put
    const { metrics, stats } = await both();
    expect(stats.subjects).toEqual({ total: 102, byStatus: { pending: 0, partial: 100, confirmed: 0, failed: 0, rejected: 2 } });
    expectAgreement(metrics, stats, { queue: false });
  });

  it('agree once every subject is confirmed', async () => {
    await s.confirm(keys);
    const { metrics, stats } = await both();
    expect(stats.subjects.byStatus).toEqual({ pending: 0, partial: 0, confirmed: 100, failed: 0, rejected: 2 });
    expect(stats.oldestPending).toBeNull();
    await waitFor('witness queues idle', async () => {
      const q = (await readStats()).queue;
      return q.waiting + q.active + q.delayed === 0;
    });
    const done = await both();
    expectAgreement(done.metrics, done.stats, { queue: true });
    expectAgreement(metrics, stats, { queue: false });
    expect(metrics.get('aer1_anchor_time_to_confirm_seconds_count{witness=ots}')).toBe(100);
    expect(metrics.get('aer1_anchor_time_to_confirm_seconds_count{witness=nostr}')).toBe(100);
    // every accepted publish: the anchor events (auto mode: one per subject or per batch, as
    // the budget decided), then (nostr.nip03, on by default) one kind-1040 attestation per
    // subject event that its OTS batch committed to, once Bitcoin confirmed
    const events = s.relays[0]!.events();
    const attestations = events.filter((e) => e.kind === 1040).length;
    const anchors = events.length - attestations;
    const ownEvents = (await s.daemon.store.subjects.getRecords(keys)).filter((r) => r!.nostrEventId).length;
    expect(anchors).toBeGreaterThan(0);
    expect(attestations).toBeLessThanOrEqual(ownEvents);
    expect(done.metrics.get(`aer1_relay_publish_total{result=accepted,url=${new URL(s.relays[0]!.url).href}}`)).toBe(anchors + attestations);
  });
});
