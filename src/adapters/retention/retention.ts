/**
 * Retention (docs/reliability.md, Retention): confirmed subjects accepted more than
 * `retention.confirmedDays` (or `retention.confirmedAfterMs`) ago are retired from Redis
 * once their proof is in the archive. A pass, oldest first and at most `retention.limit`
 * subjects, does per subject: export the proof from state, write it to the archive
 * (atomically, read back and compared), and only then remove the subject from Redis in one
 * script (`AnchorStore.forget`). A crash anywhere leaves either the subject in Redis (the
 * next pass writes the same file again and removes it) or the file and no subject; never
 * neither. Removed subjects leave the index, so the next pass starts from the oldest left:
 * no cursor to lose. One owner across daemons: the pass is a BullMQ job scheduler's job.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import { retentionAfterMs, type Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { ProofArchive } from '../archive/proof-archive.js';
import type { ProofExporter } from '../proof/export.js';
import { redisRefusal } from '../redis/redis-refusal.js';
import { retentionQueueName } from '../queue/names.js';
import { stalledJobOptions } from '../queue/stalled.js';

export interface RetentionDeps {
  config: Config;
  store: AnchorStore;
  archive: ProofArchive;
  exporter: ProofExporter;
  connection: ConnectionOptions;
  log: Logger;
  now?: () => number;
  /** Called after a proof is archived and before its subject is removed (tests inject crashes here). */
  afterArchive?: (key: string, path: string) => Promise<void> | void;
  /** Called with the number of subjects removed by a pass (metrics). */
  onRetired?: (n: number) => void;
}

export interface RetentionPass {
  /** Proofs written to the archive. */
  archived: number;
  /** Subjects removed from Redis. */
  removed: number;
  /** Subjects whose proof could not be archived (left in Redis, tried again next pass). */
  failed: number;
}

const SCHEDULER_ID = 'retention';
/** Archive writes in flight within a pass. */
const CONCURRENCY = 8;

export class Retention {
  private readonly deps: RetentionDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly queue: Queue;
  private worker: Worker | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(deps: RetentionDeps) {
    this.deps = deps;
    this.log = deps.log.child({ part: 'retention' });
    this.now = deps.now ?? Date.now;
    this.queue = new Queue(retentionQueueName(deps.config.queue.name), { connection: deps.connection, prefix: deps.store.keys.bullPrefix });
    this.queue.on('error', (err) => this.log.warn({ err }, 'retention queue error'));
  }

  get afterMs(): number {
    return retentionAfterMs(this.deps.config);
  }

  /** Schedules the pass (every daemon upserts the same scheduler) and starts this daemon's worker. */
  async start(): Promise<void> {
    await this.schedule();
    this.worker = new Worker(retentionQueueName(this.deps.config.queue.name), () => this.pass(), {
      connection: this.deps.connection,
      prefix: this.deps.store.keys.bullPrefix,
      concurrency: 1,
      ...stalledJobOptions(this.deps.config.queue.stalledIntervalMs),
    });
    this.worker.on('error', (err) => this.log.warn({ err }, 'retention worker error'));
    this.worker.on('failed', (_job, err) => this.log.warn({ err }, 'retention pass failed; the next one retries'));
    await this.worker.waitUntilReady();
  }

  private async schedule(): Promise<void> {
    const every = this.deps.config.retention.intervalMs;
    try {
      await this.queue.upsertJobScheduler(SCHEDULER_ID, { every }, { name: SCHEDULER_ID, opts: { removeOnComplete: true, removeOnFail: 10 } });
    } catch (err) {
      if (redisRefusal(err) === null || this.closed) throw err;
      this.log.warn({ err }, 'could not schedule retention yet; trying again');
      this.retry = setTimeout(() => void this.schedule().catch((e: unknown) => this.log.error({ err: e }, 'retention not scheduled')), every);
      this.retry.unref();
    }
  }

  /** One bounded pass: the oldest confirmed subjects past the age, at most `retention.limit`. */
  async pass(): Promise<RetentionPass> {
    const { store, archive, exporter } = this.deps;
    const out: RetentionPass = { archived: 0, removed: 0, failed: 0 };
    const before = this.now() - this.afterMs;
    const keys = await store.redis.zrangebyscore(store.keys.byStatus('confirmed'), '-inf', `(${before}`, 'LIMIT', 0, this.deps.config.retention.limit);
    const archived: string[] = [];
    for (let i = 0; i < keys.length; i += CONCURRENCY) {
      await Promise.all(
        keys.slice(i, i + CONCURRENCY).map(async (key) => {
          try {
            const proof = await exporter.export(key);
            // confirmed when the index was read; anything else now is left for a later pass
            if (proof?.status !== 'confirmed') return;
            const path = await archive.write(key, proof);
            out.archived++;
            await this.deps.afterArchive?.(key, path);
            archived.push(key);
          } catch (err) {
            out.failed++;
            this.log.warn({ err, key }, 'could not archive a proof; the subject stays in Redis');
          }
        }),
      );
    }
    if (archived.length > 0) {
      const removed = await store.forget(archived);
      out.removed = removed.length;
      this.deps.onRetired?.(removed.length);
    }
    if (out.removed > 0 || out.failed > 0) this.log.info(out, 'retention pass');
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    await this.worker?.close();
    await this.queue.close();
  }
}
