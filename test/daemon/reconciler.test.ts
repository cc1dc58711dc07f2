/**
 * The reconciler: state is the truth, jobs are derived from it. Each case kills the job a
 * subject's next step depends on (the way a full Redis, a crash or a bug would) and sees the
 * subject finish anyway, with the repair counted in `aer1_reconciler_repairs_total`.
 * The relay cases pin nostr.mode envelope: they kill the publish job of a subject's own
 * event, signed at intake (auto mode's repairs: test/daemon/nostr-auto-mode.test.ts).
 */
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { createLogger } from '../../src/daemon/logger.js';
import { Reconciler } from '../../src/daemon/reconciler.js';
import { otsQueueName } from '../../src/adapters/bullmq/names.js';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { Issuer, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/**
 * Loses the first job `lose` picks (it is never written): what a daemon killed between a
 * state change and the enqueue that follows it, or a Redis flushed of that job, leaves.
 */
function loseOneJob(lose: (name: string, data: { batchId?: string }) => Promise<boolean> | boolean): { lost: () => string | null } {
  let lost: string | null = null;
  const add = Queue.prototype.add;
  vi.spyOn(Queue.prototype, 'add').mockImplementation(async function (this: Queue, name: string, data: unknown, opts?: unknown) {
    if (lost === null && (await lose(name, data as { batchId?: string }))) {
      lost = `${name} ${(data as { batchId?: string }).batchId ?? ''}`;
      return undefined as never;
    }
    return add.call(this, name, data, opts as never);
  } as never);
  return { lost: () => lost };
}

async function repairs(daemon: Daemon, kind: string): Promise<number> {
  const metric = await daemon.metrics.registry.getSingleMetric('aer1_reconciler_repairs_total')?.get();
  return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

const FAST = { reconcile: { intervalMs: 500 } };

describe('reconciler', () => {
  it('an event lost from a relay\'s outbox: the subject, signed and accepted, is queued to the relay again and confirms', { timeout: 60_000 }, async () => {
    const [relay] = await startRelays(1);
    cleanups.push(() => relay!.close());
    relay!.faults.silent = true;
    const config = testConfig({ relays: [relay!], overrides: { ...FAST, nostr: { mode: 'envelope', publishTimeoutMs: 1500, backoffMs: 60_000, backoffMaxMs: 60_000 } } });
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());
    const outbox = new RelayOutbox(issuer.store.events, [relay!.url]);

    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const record = await waitFor('accepted', () => issuer.store.subjects.getRecord(s.receipt_uuid));
    const eventId = record.nostrEventId!;
    await waitFor('a first attempt timed out', async () => (await issuer.store.events.relayReports(eventId)).length > 0, 30_000);
    // The retry waits a minute; take the event out of the relay's outbox: the subject now has a signed event and nothing to publish it.
    await waitFor('the retry scheduled', async () => Number(await issuer.redis.zscore(outbox.key(relay!.url), eventId)) > Date.now() + 10_000, 10_000);
    expect(await issuer.redis.zrem(outbox.key(relay!.url), eventId)).toBe(1);
    relay!.faults.silent = false;

    await waitFor('confirmed after the reconciler queued the publish again', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    expect(relay!.events().filter((e) => e.id === eventId)).toHaveLength(1);
    expect(await repairs(daemon, 'relay-publish')).toBeGreaterThanOrEqual(1);
  });

  it('a relay given up on while the quorum needs it: a new round of attempts once reconcile.reopenAfterMs has passed', { timeout: 60_000 }, async () => {
    const relays = await startRelays(2);
    cleanups.push(() => Promise.all(relays.map((r) => r.close())));
    const [good, busy] = [relays[0]!, relays[1]!];
    // error: is retried with attempts (rate-limited: pauses the queue without spending any)
    busy.beforeEvent = () => ({ accept: false, message: 'error: try again later' });
    const config = testConfig({ relays, overrides: { reconcile: { intervalMs: 500, reopenAfterMs: 1500 }, nostr: { mode: 'envelope', maxAttempts: 2, backoffMs: 50, backoffMaxMs: 50 } } });
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());

    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const record = await waitFor('accepted', () => issuer.store.subjects.getRecord(s.receipt_uuid));
    await waitFor('the busy relay given up on', async () => (await issuer.store.events.relayReports(record.nostrEventId!)).find((r) => r.url === busy.url && r.final && r.status === 'failed'), 30_000);
    // The quorum (2 of 2) is out of reach for now: failed, with the reason; the reconciler still reopens a relay given up on.
    await waitFor('the witness failed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'failed');
    const failed = (await issuer.store.subjects.history(s.receipt_uuid)).find((h) => h.event === 'witness' && h.to === 'failed');
    expect(failed?.detail).toContain(`quorum 2 unreachable: 1 of 2 relays accepted`);
    expect(failed?.detail).toContain(busy.url);
    busy.beforeEvent = undefined;

    await waitFor('confirmed once the busy relay was tried again', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'confirmed', 30_000);
    expect(busy.events().filter((e) => e.id === record.nostrEventId)).toHaveLength(1);
    expect(good.events().filter((e) => e.id === record.nostrEventId)).toHaveLength(1);
    expect(await repairs(daemon, 'relay-reopen')).toBeGreaterThanOrEqual(1);
  });

  it('an upgrade poll that threw more times than its attempts: the batch is polled again and confirms', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    cleanups.push(() => calendar!.close());
    const config = testConfig({ calendars: [calendar!], headersFile, overrides: { ...FAST, ots: { upgradeInitialMs: 200, upgradeMaxMs: 200, submitBackoffMs: 20 } } });
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());
    const otsQueue = new Queue(otsQueueName(config.queue.name), { connection: issuer.redis, prefix: issuer.store.keys.bullPrefix });
    cleanups.push(() => otsQueue.close());

    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const batchId = await waitFor('submitted', async () => {
      const id = (await issuer.store.subjects.getRecord(s.receipt_uuid))?.batches.ots?.id;
      return id && (await issuer.store.batches.batchField('ots', id, 'submitted')) === '1' ? id : null;
    }, 30_000);
    // A field every poll reads, unreadable: each poll throws until its attempts are spent.
    await issuer.store.batches.setBatchFields('ots', batchId, { bitcoin: '{' });
    await waitFor('an upgrade job failed after its attempts', async () => ((await otsQueue.getJobCounts('failed')).failed ?? 0) > 0, 30_000);
    const [dead] = await otsQueue.getFailed(0, 0);
    expect(dead!.name).toBe('upgrade');
    expect(dead!.attemptsMade).toBe(dead!.opts.attempts);
    expect(dead!.attemptsMade).toBeGreaterThan(1);
    await issuer.redis.hdel(issuer.store.keys.batch('ots', batchId), 'bitcoin');

    await calendar!.mine();
    await waitFor('confirmed after the reconciler scheduled a poll', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    expect(await repairs(daemon, 'ots-poll')).toBeGreaterThanOrEqual(1);
  });

  it('a NIP-03 attestation job lost between the confirmation and its enqueue: the reconciler finds it from the batch and the attestation is published', { timeout: 60_000 }, async () => {
    const [relay] = await startRelays(1);
    cleanups.push(() => relay!.close());
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    cleanups.push(() => calendar!.close());
    const config = testConfig({ relays: [relay!], calendars: [calendar!], headersFile, overrides: { ...FAST, nostr: { mode: 'envelope', nip03: true } } });
    const lost = loseOneJob((name) => name === 'nip03');
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());

    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const record = await waitFor('signed and pending on the calendar', async () => {
      const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
      return r?.nostrEventId && r.witnesses.ots?.status === 'pending' && calendar!.pendingCount() > 0 ? r : null;
    }, 30_000);
    await calendar!.mine();
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    const batchId = (await issuer.store.subjects.getRecord(s.receipt_uuid))!.batches.ots!.id;
    await waitFor('the attestation job lost', () => lost.lost() === `nip03 ${batchId}`, 10_000);
    const attestation = await waitFor('the NIP-03 attestation on the relay', () => relay!.events().find((e) => e.kind === 1040 && e.tags.some((t) => t[0] === 'e' && t[1] === record.nostrEventId)), 30_000);
    expect(attestation.content.length).toBeGreaterThan(0);
    expect(await issuer.store.batches.batchField('ots', batchId, 'nip03')).toBe('done');
    expect(await repairs(daemon, 'nip03')).toBeGreaterThanOrEqual(1);
    // nothing left to do for the batch: it leaves the reconciler's set
    await waitFor('the batch has no work left', async () => !(await issuer.redis.sismember(issuer.store.keys.batchesWithWork('ots'), batchId)), 10_000);
  });

  it("the upgrade poll of a confirmed batch's other calendar lost: the reconciler polls it again and that calendar's attestation is taken", { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
    const config = testConfig({ calendars, headersFile, overrides: { ...FAST, ots: { minCalendars: 2, upgradeInitialMs: 200, upgradeMaxMs: 200 } } });
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());
    // the poll scheduled by the run that confirmed the batch (its bitcoin recorded) is lost
    const lost = loseOneJob(async (name, data) => name === 'upgrade' && !!data.batchId && (await issuer.store.batches.batchField('ots', data.batchId, 'bitcoin')) !== null);
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());

    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('pending on both calendars', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'pending' && calendars.every((c) => c.pendingCount() > 0), 30_000);
    await calendars[0]!.mine();
    await waitFor('confirmed by the first calendar', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    const batchId = (await issuer.store.subjects.getRecord(s.receipt_uuid))!.batches.ots!.id;
    await waitFor('the next poll lost', () => lost.lost() === `upgrade ${batchId}`, 10_000);
    await calendars[1]!.mine();
    const second = await waitFor("the second calendar's attestation taken", async () => {
      const cal = (await issuer.store.batches.batchCalendars(batchId)).find((c) => c.url === calendars[1]!.url);
      const state = cal ? (JSON.parse(cal.state) as { status: string; message: string }) : null;
      return state?.status === 'confirmed' ? state : null;
    }, 30_000);
    expect(second.message).toMatch(/^Bitcoin block \d+$/);
    expect(await repairs(daemon, 'ots-poll')).toBeGreaterThanOrEqual(1);
    await waitFor('the batch has no work left', async () => !(await issuer.redis.sismember(issuer.store.keys.batchesWithWork('ots'), batchId)), 10_000);
  });

  it('a subject accepted but neither batched nor in the inbox is put back and confirms', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    cleanups.push(() => calendar!.close());
    const slow = testConfig({ calendars: [calendar!], headersFile, overrides: { ...FAST, ots: { batchWindowMs: 600_000 } } });
    let daemon = await startDaemon(slow);
    const issuer = new Issuer(slow);
    cleanups.push(() => issuer.close());
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('accepted', () => issuer.store.subjects.getRecord(s.receipt_uuid));
    await daemon.stop();
    await issuer.redis.lrem(issuer.store.keys.inbox('ots'), 0, s.receipt_uuid);

    daemon = await startDaemon({ ...slow, ots: { ...slow.ots, batchWindowMs: 200 } });
    cleanups.push(() => daemon.stop());
    await waitFor('batched again', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.batches.ots, 30_000);
    await waitFor('pending on the calendar', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'pending' && calendar!.pendingCount() > 0, 30_000);
    await calendar!.mine();
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    expect(await repairs(daemon, 'inbox')).toBe(1);
  });

  it('repairs nothing where every job is alive: a pass over 1,000 subjects with queued publishes and a scheduled poll', { timeout: 150_000 }, async () => {
    const N = 1000;
    const [relay] = await startRelays(1);
    cleanups.push(() => relay!.close());
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    cleanups.push(() => calendar!.close());
    // A slow relay (publishes wait their turn) and a long poll interval: every next step has a live job.
    const config = testConfig({ relays: [relay!], calendars: [calendar!], headersFile, overrides: { nostr: { mode: 'envelope', ratePerMinute: 60 }, ots: { upgradeInitialMs: 600_000, upgradeMaxMs: 600_000 } } });
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());
    const subjects = Array.from({ length: N }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    let seen = '';
    await waitFor(`${N} accepted and batched, the batches submitted`, async () => {
      const records = await issuer.store.subjects.getRecords(subjects.map((s) => s.receipt_uuid));
      const ids = new Set(records.map((r) => r?.batches.ots?.id));
      const polled = await Promise.all([...ids].map(async (id) => (id ? issuer.store.batches.batchField('ots', id, 'poll') : null)));
      seen = `${records.filter(Boolean).length} accepted, batches ${[...ids].join(',')}, polls ${polled.join(',')}`;
      return !ids.has(undefined) && polled.every((p) => p !== null);
    }, 120_000, 250).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; ${seen}`);
    });
    // As if an interval had passed, so no subject is too young to look at.
    const reconciler = new Reconciler({ config, store: daemon.store, nostr: daemon.nostr, ots: daemon.ots, connection: daemon.redis, log: createLogger('silent'), now: () => Date.now() + config.reconcile.intervalMs + 1000 });
    cleanups.push(() => reconciler.close());
    const started = performance.now();
    const found = await reconciler.pass();
    const ms = performance.now() - started;
    expect(found).toEqual({ inbox: 0, 'relay-publish': 0, 'relay-reopen': 0, 'nostr-witness': 0, 'nostr-batch': 0, 'ots-submit': 0, 'ots-poll': 0, nip03: 0 });
    console.log(`reconciler pass over ${N} subjects (nostr ${await issuer.witnessCount('nostr', 'pending')} pending, ots ${await issuer.witnessCount('ots', 'pending')} pending): ${Math.round(ms)} ms, no repairs`);
  });
});
