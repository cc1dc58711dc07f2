/**
 * Intake under a Redis that refuses writes: a job whose accept meets OOM (or READONLY, or a
 * dropped connection) does not spend its attempts and is never deleted without a record; it
 * waits and is accepted once Redis takes writes. A refusal of the document itself is still
 * recorded `rejected` at once. The refusals are injected into the state store so BullMQ's
 * own moves succeed: what a full Redis does when memory frees up now and then.
 */
import { Queue } from 'bullmq';
import { ReplyError } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { IntakeProcessor, startIntakeWorker } from '../../src/adapters/intake/intake.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { SHARED_REDIS_URL, receiptFields, uniquePrefix, waitFor } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const REFUSALS: Array<[string, () => Error]> = [
  ['OOM', () => new ReplyError("OOM command not allowed when used memory > 'maxmemory'.")],
  ['READONLY', () => new ReplyError("READONLY You can't write against a read only replica.")],
  ['a dropped connection', () => new Error('Connection is closed.')],
];

describe('intake while Redis refuses writes', () => {
  for (const [name, refusal] of REFUSALS) {
    it(`${name} on every try for longer than the job's attempts: the job waits, keeps its attempts, and the subject is accepted afterwards`, { timeout: 60_000 }, async () => {
      const prefix = uniquePrefix('refuse');
      const redis = connectRedis(SHARED_REDIS_URL);
      cleanups.push(() => redis.quit());
      const store = new AnchorStore(redis, prefix);
      let refusals = 3;
      const acceptMany = store.subjects.acceptMany.bind(store.subjects);
      store.subjects.acceptMany = async (targets, subjects) => {
        if (refusals > 0) {
          refusals--;
          throw refusal();
        }
        return acceptMany(targets, subjects);
      };
      const processor = new IntakeProcessor(store, { maxJobBytes: 1 << 20, maxSteps: 100, maxEntries: 100, maxSubjectsPerJob: 1000 }, { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined }, createLogger('silent'));
      const queueName = 'aer1-anchor';
      const worker = startIntakeWorker({ queueName, bullPrefix: store.keys.bullPrefix, connection: redis, concurrency: 4, stalledIntervalMs: 1000 }, processor, createLogger('silent'));
      cleanups.push(() => worker.close());
      const queue = new Queue(queueName, { connection: redis, prefix: store.keys.bullPrefix });
      cleanups.push(() => queue.close());

      const s = receiptFields();
      // The issuer's own budget: 2 attempts, retried at once; three refusals would spend it.
      await queue.add(ANCHOR_JOB, s, { ...ANCHOR_JOB_OPTIONS, jobId: s.receipt_uuid, attempts: 2, backoff: { type: 'fixed', delay: 10 } });
      await waitFor('accepted after the refusals', async () => (await store.subjects.getRecord(s.receipt_uuid))?.status === 'pending', 45_000, 50);
      expect(refusals).toBe(0);
      await waitFor('the job done and freed', async () => (await queue.getJob(s.receipt_uuid)) === undefined, 10_000);
      expect((await queue.getJobCounts('failed')).failed ?? 0).toBe(0);
    });
  }

  it('a document refused while Redis is well is recorded rejected with its reason at once', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix('refuse');
    const redis = connectRedis(SHARED_REDIS_URL);
    cleanups.push(() => redis.quit());
    const store = new AnchorStore(redis, prefix);
    const processor = new IntakeProcessor(store, { maxJobBytes: 1 << 20, maxSteps: 100, maxEntries: 100, maxSubjectsPerJob: 1000 }, { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined }, createLogger('silent'));
    const worker = startIntakeWorker({ queueName: 'aer1-anchor', bullPrefix: store.keys.bullPrefix, connection: redis, concurrency: 1, stalledIntervalMs: 1000 }, processor, createLogger('silent'));
    cleanups.push(() => worker.close());
    const queue = new Queue('aer1-anchor', { connection: redis, prefix: store.keys.bullPrefix });
    cleanups.push(() => queue.close());
    const bad = { ...receiptFields(), output_sha256: 'not hex' };
    await queue.add(ANCHOR_JOB, bad, { ...ANCHOR_JOB_OPTIONS, jobId: bad.receipt_uuid });
    const record = await waitFor('rejected', async () => {
      const r = await store.subjects.getRecord(bad.receipt_uuid);
      return r?.status === 'rejected' ? r : null;
    }, 20_000);
    expect(record.reason).toMatch(/output_sha256/);
  });
});
