/**
 * Intake for K shards (redis.shards > 1) from the usual intake queue (`{prefix}`): each
 * subject goes to its own shard's IntakeProcessor (`shardOf(key, K)`), so it is accepted
 * into that shard's state, batched by that shard's batchers and checked for duplicates and
 * conflicts there, whichever queue it came by. Each subject the router must route is read
 * here, once, and handed to its shard as read. A bulk job is split by shard and its answers
 * put back in the order given. A job refused whole (unreadable, too big) is recorded in the
 * shard of its job id, where a look-up of that key finds it.
 */
import { Aer1Error } from '../../core/errors/errors.js';
import { groupByShard, shardOf } from '../../core/shard/shard.js';
import { bulkResultsListed, isGeneratedJobId, type BulkIntakeResult, type BulkSubjectResult, type IntakeHandler, type IntakeLimits, type IntakeProcessor, type IntakeResult } from './intake.js';
import { bulkSubjectsOrReason, isBulkJobData, readOutcome, type ReadOutcome } from './job-data.js';

export class ShardRouter implements IntakeHandler {
  private readonly shards: readonly IntakeProcessor[];
  private readonly limits: IntakeLimits;
  private readonly now: () => Date;

  constructor(shards: readonly IntakeProcessor[], limits: IntakeLimits, now: () => Date = () => new Date()) {
    this.shards = shards;
    this.limits = limits;
    this.now = now;
  }

  private of(key: string): IntakeProcessor {
    return this.shards[shardOf(key, this.shards.length)]!;
  }

  /** A subject of a job read here, once, to route it (readSubject): its shard takes it as read. */
  private read(data: unknown): ReadOutcome {
    return readOutcome(data, this.limits, this.now());
  }

  refuse(jobId: string | undefined, reason: string): Promise<never> {
    return this.of(jobId ?? '').refuse(jobId, reason);
  }

  async process(jobId: string | undefined, data: unknown): Promise<IntakeResult | BulkIntakeResult> {
    if (!isBulkJobData(data)) {
      // A job named by its own id goes to that id's shard, which reads it: when the id is the
      // subject key that is the subject's shard, and when it is not, the refusal is recorded
      // under the id where a look-up of it finds it (never a record of another key in the
      // subject's shard). A job BullMQ numbered goes to its subject's shard when it reads as
      // one, every check passed (its envelope's size too), else to its id's, which refuses it.
      if (jobId !== undefined && !isGeneratedJobId(jobId)) return this.of(jobId).process(jobId, data);
      const read = this.read(data);
      return this.of(read instanceof Aer1Error ? (jobId ?? '') : read.key).acceptOne(jobId, read);
    }
    const bulk = bulkSubjectsOrReason(data, this.limits);
    if ('reason' in bulk) return this.refuse(jobId, bulk.reason);
    const { list } = bulk;
    // a subject that does not read is refused in its place by any shard (nothing is written for it)
    const read = list.map((item) => this.read(item));
    const groups = groupByShard(read, this.shards.length, (r) => (r instanceof Aer1Error ? null : r.key));
    // each shard's part lists only its subjects not created (bounded); merged, counted, and bounded again
    const listed: BulkSubjectResult[] = [];
    const total = { created: 0, duplicate: 0, conflict: 0, refused: 0, omitted: 0 };
    for (const [shard, indexes] of groups) {
      const part = await this.shards[shard]!.acceptBulk(jobId, indexes.length, (i) => read[indexes[i]!]!);
      for (const r of part.results) listed.push({ ...r, index: indexes[r.index]! });
      total.created += part.created;
      total.duplicate += part.duplicate;
      total.conflict += part.conflict;
      total.refused += part.refused;
      total.omitted += part.omitted;
    }
    const { results, omitted } = bulkResultsListed(listed.sort((a, b) => a.index - b.index));
    return { bulk: true, subjects: list.length, created: total.created, duplicate: total.duplicate, conflict: total.conflict, refused: total.refused, results, omitted: total.omitted + omitted };
  }
}
