/**
 * The producer for K shards (redis.shards, docs/architecture.md "Shards"): each subject goes
 * straight to its shard's intake queue (`{prefix:i}`, i = shardOf(key, K)) after the same
 * checks as `enqueueAnchor` against that shard's state. With one shard it is `enqueueAnchor`
 * on `{prefix}` exactly. Putting jobs on the usual queue (`{prefix}`) works as well: the
 * daemon routes them; either way a subject lands in its one shard, so a duplicate or a
 * conflicting root is found whichever way it came.
 */
import { Queue, type ConnectionOptions } from 'bullmq';
import { Aer1Error } from '../../core/errors/errors.js';
import { groupByShard, shardOf, shardPrefix } from '../../core/shard/shard.js';
import { AnchorStore } from '../state/anchor-store.js';
import type { KnownSubjects } from '../state/subjects.js';
import type { RedisClient as Redis } from '../redis/connection.js';
import { readSubject, readSubjects, type JobLimits, type ReadOutcome, type SubjectInput } from '../intake/job-data.js';
import { enqueueSubject, enqueueSubjects, type BulkEnqueueOptions, type BulkEnqueueOutcome, type EnqueueOutcome } from './producer.js';

/** Shard i's intake queue and what its producer checks of a key (its subjects), at index i. */
export interface ShardTarget {
  queue: Queue;
  subjects: KnownSubjects;
}

/**
 * The K shards' intake queues and stores on one connection (ioredis, or an ioredis Cluster):
 * what an issuer passes to `enqueueAnchorRouted` / `enqueueAnchorsRouted`. Close the queues when done.
 */
export function shardTargets(redis: Redis, opts: { prefix: string; queueName: string; shards: number }): ShardTarget[] {
  return Array.from({ length: opts.shards }, (_, i) => {
    const store = new AnchorStore(redis, shardPrefix(opts.prefix, i, opts.shards));
    return { subjects: store.subjects, queue: new Queue(opts.queueName, { connection: redis as ConnectionOptions, prefix: store.keys.bullPrefix }) };
  });
}

/** `enqueueAnchor` on the subject's own shard (a document that does not read is refused as there). */
export async function enqueueAnchorRouted(shards: readonly ShardTarget[], data: unknown, limits: JobLimits): Promise<EnqueueOutcome> {
  return enqueueSubjectRouted(shards, readSubject(data, limits), limits);
}

/** `enqueueAnchorRouted` for a subject read already (readSubject). */
export function enqueueSubjectRouted(shards: readonly ShardTarget[], subject: SubjectInput, limits: JobLimits): Promise<EnqueueOutcome> {
  const t = shards[shardOf(subject.key, shards.length)]!;
  return enqueueSubject(t.queue, t.subjects, subject, limits);
}

/** `enqueueAnchors` with the list split by shard: each shard's subjects in bulk jobs on its queue; outcomes in the order given. */
export function enqueueAnchorsRouted(shards: readonly ShardTarget[], subjects: readonly unknown[], limits: JobLimits, opts: BulkEnqueueOptions = {}): Promise<BulkEnqueueOutcome[]> {
  return enqueueSubjectsRouted(shards, readSubjects(subjects, limits), limits, opts);
}

/** `enqueueAnchorsRouted` for subjects read already (readSubjects). */
export async function enqueueSubjectsRouted(shards: readonly ShardTarget[], subjects: readonly ReadOutcome[], limits: JobLimits, opts: BulkEnqueueOptions = {}): Promise<BulkEnqueueOutcome[]> {
  if (shards.length === 1) return enqueueSubjects(shards[0]!.queue, shards[0]!.subjects, subjects, limits, opts);
  const groups = groupByShard(subjects, shards.length, (s) => (s instanceof Aer1Error ? null : s.key));
  const out: BulkEnqueueOutcome[] = new Array(subjects.length);
  for (const [shard, indexes] of groups) {
    const t = shards[shard]!;
    const back = (o: BulkEnqueueOutcome): BulkEnqueueOutcome => ({ ...o, index: indexes[o.index]! });
    const part = await enqueueSubjects(t.queue, t.subjects, indexes.map((i) => subjects[i]!), limits, {
      ...(opts.maxSubjectsPerJob !== undefined ? { maxSubjectsPerJob: opts.maxSubjectsPerJob } : {}),
      ...(opts.onJobAdded ? { onJobAdded: (outcomes: BulkEnqueueOutcome[]) => opts.onJobAdded!(outcomes.map(back)) } : {}),
    });
    part.forEach((o) => (out[indexes[o.index]!] = back(o)));
  }
  return out;
}
