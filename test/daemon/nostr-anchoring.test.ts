/**
 * The daemon end to end on Nostr: real Redis, three @nostr-relay dev relays on loopback.
 */
import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { verifySignedEvent } from '../../src/core/nostr/events.js';
import { BatchTree } from '../../src/core/batch/batch-tree.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

let relays: DevRelay[] = [];

beforeAll(async () => {
  relays = await startRelays(3);
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.close()));
});

function eventsWithTag(relay: DevRelay, tag: string, value: string) {
  return relay.events().filter((e) => e.tags.some((t) => t[0] === tag && t[1] === value));
}

describe('envelope mode', () => {
  let daemon: Daemon;
  let issuer: Issuer;
  const subjects = Array.from({ length: 200 }, () => receiptFields());

  beforeAll(async () => {
    // pinned: auto (the default) is test/daemon/nostr-auto-mode.test.ts
    const config = testConfig({ relays, overrides: { nostr: { mode: 'envelope' } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon.stop();
    await issuer.close();
  });

  it('confirms 200 subjects on all three relays, one signed envelope event each', async () => {
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('200 confirmed', async () => (await issuer.count('confirmed')) === 200, 60_000);
    for (const s of subjects.slice(0, 20)) {
      const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
      expect(record?.status).toBe('confirmed');
      for (const relay of relays) {
        const events = eventsWithTag(relay, 'x', record!.digest!);
        expect(events).toHaveLength(1);
        const checked = verifySignedEvent(JSON.stringify(events[0]));
        expect(checked.ok).toBe(true);
        expect(events[0]!.content).toBe(record!.envelopeCanonical);
        const envelope = JSON.parse(events[0]!.content) as Record<string, unknown>;
        expect(envelope).toMatchObject({ type: 'zambo-receipt-anchor/1', subject: 'receipt', receipt_uuid: s.receipt_uuid, output_sha256: s.output_sha256 });
      }
    }
  });

  it('anchors a subject enqueued twice once: one event per relay', async () => {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed');
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('second job processed', async () => (await issuer.queue.getJobCounts('waiting', 'active')).waiting === 0);
    const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
    // Let any stray publish land before counting.
    await new Promise((r) => setTimeout(r, 500));
    for (const relay of relays) expect(eventsWithTag(relay, 'x', record!.digest!)).toHaveLength(1);
    const history = await issuer.store.subjects.history(s.receipt_uuid);
    expect(history.filter((h) => h.event === 'accepted')).toHaveLength(1);
  });

  it('refuses the same key with another root as a conflict, keeping the first anchor', async () => {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed');
    const before = await issuer.store.subjects.getRecord(s.receipt_uuid);
    const other = { ...s, output_sha256: 'ab'.repeat(32) };
    await issuer.enqueue(other, s.receipt_uuid);
    const history = await waitFor('conflict recorded', async () => {
      const h = await issuer.store.subjects.history(s.receipt_uuid);
      return h.some((e) => e.event === 'conflict') ? h : null;
    });
    const conflict = history.find((e) => e.event === 'conflict');
    expect(conflict?.reason).toMatch(/conflict: subject .* already anchored with another root/);
    const after = await issuer.store.subjects.getRecord(s.receipt_uuid);
    expect(after?.digest).toBe(before?.digest);
    expect(after?.status).toBe('confirmed');
  });

  it('confirms the subjects of one bulk job, one signed envelope event each, the refused one reported', async () => {
    const subjects = Array.from({ length: 30 }, () => receiptFields());
    const events = new QueueEvents(issuer.queue.name, { connection: issuer.redis.duplicate(), prefix: issuer.store.keys.bullPrefix });
    try {
      await events.waitUntilReady();
      const done = new Promise<unknown>((resolve) => events.on('completed', ({ jobId, returnvalue }) => jobId === 'bulk-env' && resolve(returnvalue)));
      await issuer.queue.add(ANCHOR_JOB, { subjects: [...subjects, { subject: 'receipt', receipt_uuid: 'bad-bulk', output_sha256: 'xyz' }] }, { jobId: 'bulk-env', ...ANCHOR_JOB_OPTIONS });
      const rv = (typeof (await done) === 'string' ? JSON.parse((await done) as string) : await done) as { created: number; refused: number; results: Array<{ index: number; result: string }> };
      expect({ created: rv.created, refused: rv.refused }).toEqual({ created: 30, refused: 1 });
      // the created ones are counted, not listed
      expect(rv.results).toEqual([expect.objectContaining({ index: 30, result: 'refused' })]);
    } finally {
      await events.close();
    }
    await waitFor('30 confirmed', async () => (await Promise.all(subjects.map((s) => issuer.store.subjects.getRecord(s.receipt_uuid)))).every((r) => r?.status === 'confirmed'), 60_000);
    for (const s of subjects.slice(0, 5)) {
      const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
      for (const relay of relays) expect(eventsWithTag(relay, 'x', record!.digest!)).toHaveLength(1);
    }
    expect(await issuer.store.subjects.getRecord('bad-bulk')).toBeNull();
  });

  it('refuses a malformed job with its reason, not retried, and goes on with the others', async () => {
    const good = receiptFields();
    await issuer.enqueue({ subject: 'receipt', receipt_uuid: 'bad-1', output_sha256: 'xyz' }, 'bad-1');
    await issuer.enqueue(good, good.receipt_uuid);
    const bad = await waitFor('rejection recorded', () => issuer.store.subjects.getRecord('bad-1'));
    expect(bad.status).toBe('rejected');
    expect(bad.reason).toMatch(/output_sha256/);
    await waitFor('good one confirmed', async () => (await issuer.store.subjects.getRecord(good.receipt_uuid))?.status === 'confirmed');
  });
});

describe('batch mode', () => {
  let daemon: Daemon;
  let issuer: Issuer;

  beforeAll(async () => {
    const config = testConfig({ relays, overrides: { nostr: { mode: 'batch', batchWindowMs: 300, batchMaxSize: 1000 } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon.stop();
    await issuer.close();
  });

  it('confirms 200 subjects with a few batch events whose content carries the batch root', async () => {
    const subjects = Array.from({ length: 200 }, () => receiptFields());
    const before = relays.map((r) => r.eventCount());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('200 confirmed', async () => (await issuer.count('confirmed')) === 200, 60_000);
    const record = await issuer.store.subjects.getRecord(subjects[0]!.receipt_uuid);
    const link = record!.batches.nostr!;
    const batch = await issuer.store.batches.getBatch('nostr', link.id);
    const root = new BatchTree(batch!.digests).root.toString('hex');
    for (const [i, relay] of relays.entries()) {
      const added = relay.eventCount() - before[i]!;
      expect(added).toBeGreaterThan(0);
      expect(added).toBeLessThan(20);
      const events = eventsWithTag(relay, 'x', root);
      expect(events).toHaveLength(1);
      expect(verifySignedEvent(JSON.stringify(events[0])).ok).toBe(true);
      expect(JSON.parse(events[0]!.content)).toEqual({
        anchored_at: batch!.anchoredAt,
        batch_root: root,
        leaf_count: batch!.size,
        tree: 'rfc6962-sha256',
        type: 'aer1-anchor-batch/1',
      });
    }
  });

  it('confirms the 500 subjects of two bulk jobs in a few batch events', async () => {
    const subjects = Array.from({ length: 500 }, () => receiptFields());
    const before = relays.map((r) => r.eventCount());
    await issuer.queue.add(ANCHOR_JOB, { subjects: subjects.slice(0, 250) }, ANCHOR_JOB_OPTIONS);
    await issuer.queue.add(ANCHOR_JOB, { subjects: subjects.slice(250) }, ANCHOR_JOB_OPTIONS);
    await waitFor('500 confirmed', async () => (await Promise.all(subjects.map((s) => issuer.store.subjects.getRecord(s.receipt_uuid)))).every((r) => r?.status === 'confirmed'), 60_000);
    for (const [i, relay] of relays.entries()) expect(relay.eventCount() - before[i]!).toBeLessThan(20);
    const records = await issuer.store.subjects.getRecords(subjects.map((s) => s.receipt_uuid));
    const batches = new Set(records.map((r) => r!.batches.nostr!.id));
    expect(batches.size).toBeLessThan(20);
  });
});
