/**
 * Bulk intake: one job `{"subjects": [...]}` carries many subjects. Each is validated on
 * its own, the refused ones are reported per subject in the job's return value without
 * failing the rest, a job over queue.maxSubjectsPerJob is refused whole (recorded, not
 * retried), and a retried job (after a crash between two accept calls) accepts nothing
 * twice. Also `enqueueAnchors`, the producer side. Real Redis, the real intake worker.
 */
import { Queue, type Job, type Worker } from 'bullmq';
import { ReplyError } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { BULK_RESULTS_MAX, INTAKE_PAGE, IntakeProcessor, startIntakeWorker, type BulkIntakeResult } from '../../src/adapters/intake/intake.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ShardRouter } from '../../src/adapters/intake/shard-router.js';
import { ANCHOR_JOB_OPTIONS, enqueueAnchors } from '../../src/adapters/queue/producer.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { readSubject } from '../../src/adapters/intake/job-data.js';
import type { LoggedStamp } from '../../src/adapters/log/logged-stamps.js';
import { SHARED_REDIS_URL, receiptFields, uniquePrefix, waitFor } from '../helpers/harness.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const LIMITS = { maxJobBytes: 1 << 20, maxSteps: 100, maxEntries: 100 };

interface Rig {
  store: AnchorStore;
  queue: Queue;
  worker: Worker;
  /** Return values and failures of finished jobs, by job id. */
  done: Map<string, { rv?: BulkIntakeResult; failed?: string; attemptsMade: number }>;
  accepted: string[][];
}

function rig(maxSubjectsPerJob = 1000): Rig {
  const prefix = uniquePrefix('bulk');
  const redis = connectRedis(SHARED_REDIS_URL);
  cleanups.push(() => redis.quit());
  const store = new AnchorStore(redis, prefix);
  const accepted: string[][] = [];
  const processor = new IntakeProcessor(
    store,
    { ...LIMITS, maxSubjectsPerJob },
    { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async (a) => void accepted.push(a.subjects.map((s) => s.key)) },
    createLogger('silent'),
  );
  const worker = startIntakeWorker({ queueName: 'aer1-anchor', bullPrefix: store.keys.bullPrefix, connection: redis, concurrency: 2, stalledIntervalMs: 1000 }, processor, createLogger('silent'));
  cleanups.push(() => worker.close());
  const queue = new Queue('aer1-anchor', { connection: redis, prefix: store.keys.bullPrefix });
  cleanups.push(() => queue.close());
  const done: Rig['done'] = new Map();
  worker.on('completed', (job: Job, rv: BulkIntakeResult) => done.set(job.id!, { rv, attemptsMade: job.attemptsMade }));
  worker.on('failed', (job: Job | undefined, err: Error) => {
    if (job) done.set(job.id!, { failed: err.message, attemptsMade: job.attemptsMade });
  });
  return { store, queue, worker, done, accepted };
}

describe('a bulk job', () => {
  it('accepts its valid subjects and reports each refused one in its place, failing none of the rest', { timeout: 30_000 }, async () => {
    const r = rig();
    const known = receiptFields();
    await r.queue.add(ANCHOR_JOB, known, { ...ANCHOR_JOB_OPTIONS, jobId: known.receipt_uuid });
    await waitFor('the single-subject job accepted', async () => (await r.store.subjects.getRecord(known.receipt_uuid))?.status);
    const good = [receiptFields(), receiptFields()];
    const bad = { ...receiptFields(), output_sha256: 'not hex' };
    const conflicting = { ...known, output_sha256: 'ab'.repeat(32) };
    await r.queue.add(ANCHOR_JOB, { subjects: [good[0], bad, known, conflicting, good[1], 42] }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-one' });
    const out = await waitFor('the bulk job done', () => r.done.get('bulk-one'));
    expect(out.failed).toBeUndefined();
    const rv = out.rv!;
    expect({ subjects: rv.subjects, created: rv.created, duplicate: rv.duplicate, conflict: rv.conflict, refused: rv.refused }).toEqual({ subjects: 6, created: 2, duplicate: 1, conflict: 1, refused: 2 });
    // the subjects created are counted, not listed; the others are listed in the job's order
    expect(rv.results.map((x) => [x.index, x.result])).toEqual([[1, 'refused'], [2, 'duplicate'], [3, 'conflict'], [5, 'refused']]);
    expect(rv.omitted).toBe(0);
    expect(rv.results[0]).toMatchObject({ field: 'output_sha256', reason: expect.stringMatching(/output_sha256/) });
    expect(rv.results[2]).toMatchObject({ key: known.receipt_uuid, reason: expect.stringMatching(/^conflict: subject .* another root/) });
    for (const g of good) expect((await r.store.subjects.getRecord(g.receipt_uuid))?.status).toBe('pending');
    // the conflict is in the known subject's history; its root is untouched
    expect((await r.store.subjects.history(known.receipt_uuid)).map((h) => h.event)).toEqual(['accepted', 'conflict']);
    expect(await r.store.batches.inboxLength('ots')).toBe(3);
    expect(r.accepted.at(-1)).toEqual([good[0]!.receipt_uuid, known.receipt_uuid, good[1]!.receipt_uuid]);
  });

  it('over queue.maxSubjectsPerJob is refused whole, with the reason recorded, and not retried', { timeout: 30_000 }, async () => {
    const r = rig(3);
    const subjects = [receiptFields(), receiptFields(), receiptFields(), receiptFields()];
    await r.queue.add(ANCHOR_JOB, { subjects }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-big' });
    const out = await waitFor('the bulk job failed', () => r.done.get('bulk-big'));
    expect(out.failed).toBe('refused: subjects: a bulk job holds 4 subjects, over the limit queue.maxSubjectsPerJob = 3');
    expect(out.attemptsMade).toBe(1);
    const record = await r.store.subjects.getRecord('bulk-big');
    expect(record).toMatchObject({ status: 'rejected', reason: 'subjects: a bulk job holds 4 subjects, over the limit queue.maxSubjectsPerJob = 3' });
    for (const s of subjects) expect(await r.store.subjects.getRecord(s.receipt_uuid)).toBeNull();
  });

  it.each([
    ['"subjects" that is not an array', { subjects: { a: 1 } }, /"subjects" must be an array/],
    ['an empty "subjects"', { subjects: [] }, /"subjects" is empty/],
    ['a member next to "subjects"', { subjects: [1], extra: true }, /unknown member next to "subjects"/],
  ])('with %s is refused whole', { timeout: 30_000 }, async (_name, data, reason) => {
    const r = rig();
    await r.queue.add(ANCHOR_JOB, data, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-bad' });
    const out = await waitFor('the bulk job failed', () => r.done.get('bulk-bad'));
    expect(out.failed).toMatch(reason);
    expect(out.attemptsMade).toBe(1);
    expect((await r.store.subjects.getRecord('bulk-bad'))?.reason).toMatch(reason);
  });

  it('is prepared and accepted a page at a time, every subject accepted once and in order', { timeout: 30_000 }, async () => {
    const r = rig();
    const subjects = Array.from({ length: 1000 }, () => receiptFields());
    const acceptMany = r.store.subjects.acceptMany.bind(r.store.subjects);
    const calls: number[] = [];
    r.store.subjects.acceptMany = async (targets, list) => {
      calls.push(list.length);
      return acceptMany(targets, list);
    };
    await r.queue.add(ANCHOR_JOB, { subjects }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-paged' });
    const out = await waitFor('the bulk job done', () => r.done.get('bulk-paged'));
    expect(out.rv).toMatchObject({ subjects: 1000, created: 1000, duplicate: 0 });
    // the job's envelopes are built a page at a time, never all 1,000 at once
    expect(calls).toEqual([250, 250, 250, 250]);
    expect(INTAKE_PAGE).toBe(250);
    expect(await r.store.redis.lrange(r.store.keys.inbox('ots'), 0, -1)).toEqual(subjects.map((x) => x.receipt_uuid));
    expect(r.accepted).toEqual([subjects.map((x) => x.receipt_uuid)]);
  });

  it('that dies between two accept calls is retried and accepts nothing twice', { timeout: 45_000 }, async () => {
    const r = rig();
    const subjects = Array.from({ length: 600 }, () => receiptFields());
    // the first try gets its first page in (INTAKE_PAGE subjects), then the connection drops (as a crash would leave it)
    const acceptMany = r.store.subjects.acceptMany.bind(r.store.subjects);
    let crashed = false;
    r.store.subjects.acceptMany = async (targets, list) => {
      if (!crashed) {
        crashed = true;
        await acceptMany(targets, list);
        throw new Error('Connection is closed.');
      }
      return acceptMany(targets, list);
    };
    await r.queue.add(ANCHOR_JOB, { subjects }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-crash' });
    const out = await waitFor('the bulk job done after its retry', () => r.done.get('bulk-crash'), 30_000);
    expect(crashed).toBe(true);
    expect(out.rv).toMatchObject({ subjects: 600, created: 600 - INTAKE_PAGE, duplicate: INTAKE_PAGE, conflict: 0, refused: 0 });
    expect(out.rv!.results).toHaveLength(BULK_RESULTS_MAX);
    expect(await r.store.batches.inboxLength('ots')).toBe(600);
    expect(await r.store.redis.zcard(r.store.keys.byStatus('pending'))).toBe(600);
    const histories = await Promise.all(subjects.slice(INTAKE_PAGE - 5, INTAKE_PAGE + 5).map((s) => r.store.subjects.history(s.receipt_uuid)));
    for (const h of histories) expect(h.map((e) => e.event)).toEqual(['accepted']);
    // the same list once more, as a second job: all duplicates
    await r.queue.add(ANCHOR_JOB, { subjects }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-again' });
    const again = (await waitFor('the second job done', () => r.done.get('bulk-again'))).rv!;
    expect(again).toMatchObject({ created: 0, duplicate: 600, omitted: 600 - BULK_RESULTS_MAX });
    // the return value (which BullMQ copies into the queue's events stream) stays small: at most BULK_RESULTS_MAX entries
    expect(again.results.map((x) => x.index)).toEqual(Array.from({ length: BULK_RESULTS_MAX }, (_, i) => i));
    expect(JSON.stringify(again).length).toBeLessThan(BULK_RESULTS_MAX * 160);
    // a refused subject after the cap of duplicates is still listed: refusals and conflicts come first
    await r.queue.add(ANCHOR_JOB, { subjects: [...subjects, 42] }, { ...ANCHOR_JOB_OPTIONS, jobId: 'bulk-third' });
    const third = (await waitFor('the third job done', () => r.done.get('bulk-third'))).rv!;
    expect(third).toMatchObject({ duplicate: 600, refused: 1, omitted: 601 - BULK_RESULTS_MAX });
    expect(third.results).toHaveLength(BULK_RESULTS_MAX);
    expect(third.results.at(-1)).toMatchObject({ index: 600, result: 'refused' });
    expect(await r.store.batches.inboxLength('ots')).toBe(600);
  });
});

describe('a bulk job over shards (redis.shards > 1)', () => {
  it('reports the subjects not created at their place in the job, counted over every shard', { timeout: 30_000 }, async () => {
    const redis = connectRedis(SHARED_REDIS_URL);
    cleanups.push(() => redis.quit());
    const shards = [0, 1].map(() => new IntakeProcessor(new AnchorStore(redis, uniquePrefix('bulkshard')), { ...LIMITS, maxSubjectsPerJob: 1000 }, { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined }, createLogger('silent')));
    const router = new ShardRouter(shards, { ...LIMITS, maxSubjectsPerJob: 1000 });
    const subjects: unknown[] = Array.from({ length: 40 }, () => receiptFields());
    await router.process('first', { subjects: subjects.slice(0, 20) });
    subjects[25] = { ...receiptFields(), output_sha256: 'not hex' };
    const rv = (await router.process('second', { subjects })) as BulkIntakeResult;
    expect(rv).toMatchObject({ subjects: 40, created: 19, duplicate: 20, refused: 1, conflict: 0, omitted: 0 });
    expect(rv.results.map((x) => [x.index, x.result])).toEqual([...Array.from({ length: 20 }, (_, i) => [i, 'duplicate']), [25, 'refused']]);
    expect(rv.results[3]).toMatchObject({ key: (subjects[3] as { receipt_uuid: string }).receipt_uuid });
  });
});

describe('subjects the anchor log holds while Redis lost their acceptance', () => {
  it('are accepted with the anchored_at their entry holds; one no stamp fits is a conflict, reported at its place or refusing its job', { timeout: 30_000 }, async () => {
    const redis = connectRedis(SHARED_REDIS_URL);
    cleanups.push(() => redis.quit());
    const store = new AnchorStore(redis, uniquePrefix('relogged'));
    const [again, other, fresh] = [receiptFields(), receiptFields(), receiptFields()];
    const loggedAt = '2026-01-02T03:04:05Z';
    const logged = readSubject(again, LIMITS, loggedAt);
    const stamps = new Map<string, LoggedStamp>([
      [again.receipt_uuid, { index: 7, digest: logged.digest, anchoredAt: loggedAt }],
      [other.receipt_uuid, { index: 8, digest: 'cd'.repeat(32), anchoredAt: null }],
    ]);
    const processor = new IntakeProcessor(
      store,
      { ...LIMITS, maxSubjectsPerJob: 1000 },
      { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined, logged: async (subjects) => subjects.map((s) => stamps.get(s.key) ?? null) },
      createLogger('silent'),
    );
    const rv = (await processor.process('job', { subjects: [again, other, fresh] })) as BulkIntakeResult;
    expect(rv).toMatchObject({ subjects: 3, created: 2, conflict: 1, refused: 0 });
    expect(rv.results).toEqual([{ index: 1, key: other.receipt_uuid, result: 'conflict', digest: 'cd'.repeat(32), reason: expect.stringContaining('already in the anchor log with another root (entry 8') }]);
    const [record, otherRecord, freshRecord] = await store.subjects.getRecords([again.receipt_uuid, other.receipt_uuid, fresh.receipt_uuid]);
    expect(record?.digest).toBe(logged.digest);
    expect(JSON.parse(record!.envelopeCanonical!)).toMatchObject({ anchored_at: loggedAt });
    expect(otherRecord).toBeNull();
    expect(freshRecord?.digest).toMatch(/^[0-9a-f]{64}$/);
    await expect(processor.process(other.receipt_uuid, other)).rejects.toThrow(/already in the anchor log with another root/);
  });
});

describe('enqueueAnchors', () => {
  it('splits a list into bulk jobs of maxSubjectsPerJob, reports each subject, and adds the same list once', { timeout: 30_000 }, async () => {
    const r = rig();
    await r.worker.pause();
    const known = receiptFields();
    await r.store.subjects.acceptMany({ witnesses: ['ots'], inboxes: [] }, [{ key: known.receipt_uuid, kind: 'receipt', envelopeCanonical: '{}', digest: 'd'.repeat(64), fingerprint: sha256Hex('not this root') }]);
    const fresh = Array.from({ length: 5 }, () => receiptFields());
    const list = [fresh[0], { subject: 'receipt' }, fresh[1], known, fresh[2], fresh[0], fresh[3], fresh[4]];
    const out = await enqueueAnchors(r.queue, r.store.subjects, list, LIMITS, { maxSubjectsPerJob: 2 });
    expect(out.map((o) => ('error' in o ? `${o.index}:${o.error.code}` : `${o.index}:${o.result}`))).toEqual(['0:queued', `1:${(out[1] as { error: { code: string } }).error.code}`, '2:queued', '3:conflict', '4:queued', '5:queued', '6:queued', '7:queued']);
    const jobs = out.flatMap((o) => ('job' in o && o.job ? [o.job] : []));
    expect(new Set(jobs).size).toBe(3); // 5 distinct fresh subjects, 2 per job
    expect(jobs[0]).toBe(jobs[3]); // fresh[0] twice rides once
    const waiting = await r.queue.getJobs(['waiting', 'paused']);
    expect(waiting.map((j) => (j.data as { subjects: unknown[] }).subjects.length).sort()).toEqual([1, 2, 2]);
    const again = await enqueueAnchors(r.queue, r.store.subjects, list, LIMITS, { maxSubjectsPerJob: 2 });
    expect(again.map((o) => ('job' in o ? o.job : null))).toEqual(out.map((o) => ('job' in o ? o.job : null)));
    expect(await r.queue.count()).toBe(3);
    r.worker.resume();
    await waitFor('all accepted', async () => (await r.store.redis.zcard(r.store.keys.byStatus('pending'))) === 6);
  });

  it('stops at a Redis refusal, having said which jobs were added before it', { timeout: 30_000 }, async () => {
    const r = rig();
    await r.worker.pause();
    // the refusal is injected into the queue's add (what a Redis at maxmemory answers), after one job went in
    const add = r.queue.add.bind(r.queue);
    let adds = 0;
    r.queue.add = (async (...args: Parameters<Queue['add']>) => {
      if (adds++ === 1) throw new ReplyError("OOM command not allowed when used memory > 'maxmemory'.");
      return add(...args);
    }) as Queue['add'];
    const subjects = Array.from({ length: 5 }, () => receiptFields());
    const added: string[] = [];
    const err = await enqueueAnchors(r.queue, r.store.subjects, subjects, LIMITS, { maxSubjectsPerJob: 2, onJobAdded: (o) => added.push(...o.map((x) => ('key' in x ? x.key! : ''))) }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^OOM/);
    expect(added).toEqual([subjects[0]!.receipt_uuid, subjects[1]!.receipt_uuid]);
    expect(await r.queue.count()).toBe(1);
  });
});

