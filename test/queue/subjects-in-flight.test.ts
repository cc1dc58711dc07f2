/**
 * queue.maxSubjectsInFlight: the intake worker works on at most that many subjects at once,
 * counting a bulk job as its subjects, whatever queue.concurrency allows; a job carrying more
 * than the bound runs alone and still completes. Real Redis, the real intake worker and processor.
 */
import { Queue, type Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { IntakeProcessor, startIntakeWorker, type BulkIntakeResult, type IntakeHandler } from '../../src/adapters/intake/intake.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { SHARED_REDIS_URL, receiptFields, uniquePrefix, waitFor } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A worker with the given bounds over a processor that counts the subjects inside it at once. */
async function rig(concurrency: number, maxSubjectsInFlight: number, jobs: number[]): Promise<{ store: AnchorStore; most: () => number; keys: string[]; done: Map<string, BulkIntakeResult> }> {
  const redis = connectRedis(SHARED_REDIS_URL);
  cleanups.push(() => redis.quit());
  const store = new AnchorStore(redis, uniquePrefix('inflight'));
  const processor = new IntakeProcessor(store, { maxJobBytes: 1 << 22, maxSteps: 100, maxEntries: 100, maxSubjectsPerJob: 10_000 }, { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined }, createLogger('silent'));
  let inFlight = 0;
  let most = 0;
  const counting: IntakeHandler = {
    refuse: (jobId, reason) => processor.refuse(jobId, reason),
    process: async (jobId, data) => {
      const n = (data as { subjects?: unknown[] }).subjects?.length ?? 1;
      inFlight += n;
      most = Math.max(most, inFlight);
      try {
        return await processor.process(jobId, data);
      } finally {
        inFlight -= n;
      }
    },
  };
  // every job is waiting before the worker starts, so it could take `concurrency` of them at once
  const queue = new Queue('aer1-anchor', { connection: redis, prefix: store.keys.bullPrefix });
  cleanups.push(() => queue.close());
  const keys: string[] = [];
  for (const [i, size] of jobs.entries()) {
    const subjects = Array.from({ length: size }, receiptFields);
    keys.push(...subjects.map((s) => s.receipt_uuid));
    await queue.add(ANCHOR_JOB, size === 1 ? subjects[0] : { subjects }, { ...ANCHOR_JOB_OPTIONS, jobId: size === 1 ? subjects[0]!.receipt_uuid : `bulk-${i}` });
  }
  const worker = startIntakeWorker({ queueName: 'aer1-anchor', bullPrefix: store.keys.bullPrefix, connection: redis, concurrency, maxSubjectsInFlight, stalledIntervalMs: 30_000 }, counting, createLogger('silent'));
  cleanups.push(() => worker.close());
  const done = new Map<string, BulkIntakeResult>();
  worker.on('completed', (job: Job, rv: BulkIntakeResult) => done.set(job.id!, rv));
  return { store, most: () => most, keys, done };
}

describe('queue.maxSubjectsInFlight', () => {
  it('bounds the subjects the intake works on at once, bulk jobs counted by their subjects, below what queue.concurrency allows', { timeout: 60_000 }, async () => {
    const r = await rig(8, 1000, [400, 400, 400, 400, 400, 400, 1, 1, 1, 1]);
    await waitFor('every job done', () => r.done.size === 10 || null, 50_000);
    // 8 jobs of 400 at once would be 3,200 subjects
    expect(r.most()).toBeLessThanOrEqual(1000);
    for (const key of r.keys) expect((await r.store.subjects.getRecord(key))?.status).toBe('pending');
  });

  it('runs a bulk job bigger than the bound alone, to its end', { timeout: 60_000 }, async () => {
    const r = await rig(4, 1000, [1500, 300, 300]);
    await waitFor('every job done', () => r.done.size === 3 || null, 50_000);
    expect(r.done.get('bulk-0')).toMatchObject({ subjects: 1500, created: 1500 });
    // the 1,500 with nothing beside it: never 1,800
    expect(r.most()).toBe(1500);
    for (const key of r.keys) expect((await r.store.subjects.getRecord(key))?.status).toBe('pending');
  });
});
