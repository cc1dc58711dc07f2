/**
 * Issue 16, item 4, must-show: a receiver down for longer than the old retry budget (8
 * attempts, about 2 minutes at the default timings), then up again, gets every state
 * change of a running daemon (real Redis, dev relay, dev calendar, a real HTTP receiver on
 * loopback that refuses connections while down): each exactly once, signed, in stream
 * order, and the counts in the stream, at the receiver, in /v1/webhooks and in /metrics
 * agree. The backoff is scaled down (20 ms doubling to 200 ms) so the outage takes seconds:
 * the test waits until the first change has been tried more than 8 times, which is where
 * the old deliverer recorded it failed and moved on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhooks, verifySignature, type WebhookDeliverer } from '../../src/adapters/webhooks/webhooks.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import { nominalRetrySpan } from '../../src/core/retry/backoff.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';
import { startReceiver, type Receiver } from './receiver.js';

const SECRET = 'receiver-down-secret-0123456789';
const BACKOFF = { backoffMs: 20, backoffMaxMs: 200 };
const OLD_ATTEMPTS = 8;
const SUBJECTS = 5;

let s: Stack;
let receiver: Receiver;
let hooks: WebhookDeliverer;

beforeAll(async () => {
  receiver = await startReceiver(() => 200);
  s = await startStack({ overrides: { webhooks: [{ url: receiver.url, secret: SECRET }], webhookDelivery: BACKOFF } });
  hooks = await startWebhooks({ daemon: s.daemon, log: s.log, tuning: { blockMs: 200 } });
});

afterAll(async () => {
  await hooks?.stop();
  await s?.close();
  await receiver?.close();
});

/** The stream's subject events (a packed entry gives one per subject), as [event id, ['data', JSON]]. */
async function streamEntries(): Promise<Array<[string, string[]]>> {
  const raw = (await s.daemon.redis.xrange(s.daemon.store.keys.events, '-', '+')) as RawEntry[];
  return raw.flatMap((e) => expandEntry(e).map((x): [string, string[]] => [x.id, ['data', x.text]]));
}

describe('a receiver down for longer than the old retry budget, then up', () => {
  it('gets every state change exactly once, signed, in order, and every count agrees', { timeout: 120_000 }, async () => {
    const [hook] = hooks.hookIds;
    const queue = hooks.queueOf(hook!)!;
    await receiver.down();
    const downAt = Date.now();

    const subjects = Array.from({ length: SUBJECTS }, () => receiptFields());
    for (const subject of subjects) expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await s.confirm(subjects.map((x) => x.receipt_uuid));

    // Down until the first change has had more attempts than the old deliverer gave it.
    await waitFor(`the first change tried more than ${OLD_ATTEMPTS} times`, async () => {
      const head = (await queue.getJobs(['waiting', 'active', 'delayed'], 0, 0, true))[0];
      return (head?.attemptsStarted ?? 0) > OLD_ATTEMPTS + 2;
    }, 60_000);
    const downMs = Date.now() - downAt;
    expect(downMs).toBeGreaterThan(nominalRetrySpan(OLD_ATTEMPTS, BACKOFF.backoffMs, BACKOFF.backoffMaxMs));
    expect(receiver.requests).toHaveLength(0);
    // nothing was given up on while it was down
    const during = (await (await s.get('/v1/webhooks?limit=10')).json()) as { hooks: Array<{ delivered: number; failed: number }> };
    expect(during.hooks[0]).toMatchObject({ delivered: 0, failed: 0 });
    const backlog = Number(new RegExp(`aer1_webhook_backlog\\{hook="${hook}"\\} (\\d+)`).exec(await (await s.get('/metrics')).text())?.[1]);
    expect(backlog).toBeGreaterThanOrEqual(SUBJECTS * 3);

    await receiver.up();
    const entries = await waitFor('every stream entry delivered', async () => {
      const all = await streamEntries();
      const got = new Set(receiver.delivered().map((r) => r.eventId));
      return all.length > 0 && all.every(([id]) => got.has(id)) && (await queue.getJobCounts('waiting', 'active', 'delayed')).waiting === 0 ? all : null;
    }, 60_000);

    const keys = new Set(subjects.map((x) => x.receipt_uuid));
    const forSubjects = entries.filter(([, f]) => keys.has((JSON.parse(f[1]!) as { key: string }).key));
    // accepted and the witnesses' moves up to confirmed, for every subject
    expect(forSubjects.length).toBeGreaterThanOrEqual(SUBJECTS * 3);
    for (const key of keys) {
      const statuses = forSubjects.map(([, f]) => JSON.parse(f[1]!) as { key: string; status: string }).filter((e) => e.key === key).map((e) => e.status);
      expect(statuses.at(-1)).toBe('confirmed');
    }

    // exactly once each, in stream order, the very bytes of the stream, signed
    const delivered = receiver.delivered();
    expect(delivered.map((r) => r.eventId)).toEqual(entries.map(([id]) => id));
    expect(receiver.requests.filter((r) => r.answered !== 200)).toHaveLength(0);
    for (const [i, r] of delivered.entries()) {
      expect(r.body).toBe(entries[i]![1][1]);
      expect(verifySignature(r.body, SECRET, String(r.headers['x-aer1-signature']))).toBe(true);
    }
    // the first change came through on a retry past the old budget
    expect(delivered[0]!.attempt).toBeGreaterThan(OLD_ATTEMPTS);

    const res = await s.get('/v1/webhooks?limit=1000');
    const { hooks: overview } = (await res.json()) as { hooks: Array<{ id: string; delivered: number; failed: number; recent: Array<{ eventId: string; outcome: string; attempts: number }> }> };
    expect(overview[0]).toMatchObject({ id: hook, delivered: entries.length, failed: 0 });
    expect(overview[0]!.recent.find((r) => r.eventId === entries[0]![0])).toMatchObject({ outcome: 'delivered', attempts: delivered[0]!.attempt });
    const metrics = await (await s.get('/metrics')).text();
    expect(metrics).toContain(`aer1_webhook_deliveries_total{hook="${hook}",result="delivered"} ${entries.length}`);
    expect(metrics).not.toContain(`aer1_webhook_deliveries_total{hook="${hook}",result="failed"}`);
    expect(metrics).toContain(`aer1_webhook_backlog{hook="${hook}"} 0`);
    process.stdout.write(`receiver down ${downMs} ms (old budget at this scale: ${nominalRetrySpan(OLD_ATTEMPTS, BACKOFF.backoffMs, BACKOFF.backoffMaxMs)} ms); ${entries.length} changes, ${delivered.length} delivered, first on attempt ${delivered[0]!.attempt}\n`);
  });
});
