/**
 * Found in review: with redis.shards K > 1 the router sends a single job to the shard
 * of its document's subject key. A job whose id is not that key is refused and the refusal
 * recorded under the job id (intake.ts) — but in the subject key's shard, while every read of
 * that id (GET /v1/anchors/{id}, aer1-anchor status, ShardedStore) looks in the job id's
 * shard: the refusal cannot be found, and the id's record sits in a shard it does not belong to.
 */
import { afterAll, expect, it } from 'vitest';
import { createLogger } from '../../src/daemon/logger.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { IntakeProcessor } from '../../src/adapters/intake/intake.js';
import { ShardRouter } from '../../src/adapters/intake/shard-router.js';
import { ShardedStore } from '../../src/adapters/state/sharded-store.js';
import { shardOf } from '../../src/core/shard/shard.js';
import { SHARED_REDIS_URL, receiptFields, uniquePrefix } from '../helpers/harness.js';

const redis = connectRedis(SHARED_REDIS_URL);
afterAll(async () => {
  await redis.quit();
});

it('a job refused for an id that is not its subject key is found refused under that id', async () => {
  const K = 3;
  const state = ShardedStore.open(redis, uniquePrefix('route'), K);
  const limits = { maxJobBytes: 1 << 20, maxSteps: 100, maxEntries: 100, maxSubjectsPerJob: 1000 };
  const processors = state.shards.map((s) => new IntakeProcessor(s, limits, { witnesses: ['ots'], inboxes: ['ots'], afterAccept: async () => undefined }, createLogger('silent')));
  const router = new ShardRouter(processors, limits);
  const doc = receiptFields();
  // a job id of another shard than the document's key
  let jobId = 'someone-else';
  for (let i = 0; shardOf(jobId, K) === shardOf(doc.receipt_uuid, K) && i < 100; i++) jobId = `someone-else-${i}`;
  expect(shardOf(jobId, K)).not.toBe(shardOf(doc.receipt_uuid, K));
  await expect(router.process(jobId, doc)).rejects.toThrow(/is not the subject key/);
  const record = await state.getRecord(jobId);
  expect(record?.status).toBe('rejected');
  expect(await state.of(doc.receipt_uuid).subjects.getRecord(jobId)).toBeNull();
});
