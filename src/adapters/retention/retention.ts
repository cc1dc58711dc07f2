/**
 * Retention (docs/reliability.md, Retention): confirmed subjects accepted more than
 * `retention.confirmedDays` (or `retention.confirmedAfterMs`) ago are retired from Redis
 * once their proof is held elsewhere: in the archive (`archive.dir`) and/or by every
 * webhook; with both configured, both must hold it. A pass, oldest first and at most
 * `retention.limit` subjects, does per subject: export the proof from state; write it to
 * the archive (atomically, read back and compared); offer it to the webhooks (a `proof`
 * entry on the change stream) unless every hook already acknowledged it; and only once
 * every place holds it remove the subject from Redis in one script (`SubjectStore.forget`).
 * A crash anywhere leaves the subject in Redis (the next pass goes on where it stands) or
 * removed with its proof held elsewhere; never neither. Removed subjects leave the index,
 * so the next pass starts from the oldest left: no cursor to lose. One owner across
 * daemons: the pass is a BullMQ job scheduler's job. A batch goes once none of its subjects
 * is left in Redis (and no work after its confirmation is left: BatchStore.dropEmptiedBatches);
 * the archived proofs of its subjects are whole without it.
 *
 * With the anchor log on (`lean`), a subject whose witnesses attested its log checkpoint is
 * retired lean instead (lean.ts): no handover, its log:idx value keeps the few facts its proof
 * is rebuilt from, and its batches keep their hashes (drop-batch.lua). Other subjects keep
 * the rule above, or stay in Redis when there is no archive and no webhook.
 */
import type { Logger } from 'pino';
import { retentionAfterMs, type Config } from '../config/config.js';
import type { AnchorStore } from '../state/anchor-store.js';
import type { ProofArchive } from '../archive/proof-archive.js';
import type { WebhookHandover } from './handover.js';
import type { ProofExporter } from '../proof/export.js';
import { retentionQueueName } from '../bullmq/names.js';
import { PeriodicPass, shardPass, type ShardPassDeps } from '../bullmq/periodic-pass.js';
import { leanValue } from './lean.js';

export interface RetentionDeps extends ShardPassDeps {
  config: Config;
  store: AnchorStore;
  /** The proof archive; null when only webhooks take proofs. */
  archive: ProofArchive | null;
  /** Proofs handed to every webhook; null when no webhook is configured. */
  handover: WebhookHandover | null;
  exporter: ProofExporter;
  /** The anchor log is on: subjects logged and final are retired lean (lean.ts). */
  lean?: boolean;
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
  /** Subjects removed from Redis (retired lean or handed over). */
  removed: number;
  /** Of them, those retired lean (their proofs rebuilt from the anchor log). */
  lean: number;
  /** Subjects whose proof could not be archived (left in Redis, tried again next pass). */
  failed: number;
  /** Proofs offered to the webhooks by this pass (removed once every hook acknowledged). */
  offered: number;
  /** Subjects whose proof a webhook has not acknowledged yet (left in Redis). */
  waiting: number;
}

const SCHEDULER_ID = 'retention';
/** Archive writes in flight within a pass. */
const CONCURRENCY = 8;
/** Proofs read at once within a pass without an archive (Redis round trips only). */
const LEAN_CONCURRENCY = 64;
/** With lean retirement alone: pages of `retention.limit` candidates one pass looks at, past subjects that stay. */
const SCAN_ROUNDS = 10;

export class Retention {
  private readonly deps: RetentionDeps;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly periodic: PeriodicPass;

  constructor(deps: RetentionDeps) {
    this.deps = deps;
    this.log = deps.log.child({ part: 'retention' });
    this.now = deps.now ?? Date.now;
    this.periodic = shardPass(deps, { queueName: retentionQueueName, schedulerId: SCHEDULER_ID, name: 'retention', intervalMs: deps.config.retention.intervalMs, log: this.log, run: () => this.pass() });
  }

  get afterMs(): number {
    return retentionAfterMs(this.deps.config);
  }

  /** Schedules the pass (every daemon upserts the same scheduler) and starts this daemon's worker. */
  start(): Promise<void> {
    return this.periodic.start();
  }

  /**
   * One bounded pass: the oldest confirmed subjects past the age, at most `retention.limit`
   * (with lean retirement alone, up to SCAN_ROUNDS pages of them, past those that stay).
   */
  async pass(): Promise<RetentionPass> {
    const { store, archive, handover } = this.deps;
    const out: RetentionPass = { archived: 0, removed: 0, lean: 0, failed: 0, offered: 0, waiting: 0 };
    const now = this.now();
    const before = now - this.afterMs;
    const limit = this.deps.config.retention.limit;
    const ready: string[] = [];
    const lean = new Map<string, Buffer>();
    for (let scanned = 0, round = 0; round < SCAN_ROUNDS; round++) {
      const keys = await store.indexes.confirmedBefore(before, limit, scanned);
      scanned += keys.length;
      const step = archive ? CONCURRENCY : LEAN_CONCURRENCY;
      for (let i = 0; i < keys.length; i += step) await this.consider(keys.slice(i, i + step), now, { ready, lean, out });
      // lean only: subjects that stay (not logged and final) do not hold back those after them
      if (archive || handover || keys.length < limit || lean.size >= limit) break;
    }
    if (ready.length > 0 || lean.size > 0) {
      const removed = await store.subjects.forget([...lean.keys(), ...ready], lean);
      out.removed = removed.length;
      out.lean = removed.filter((key) => lean.has(key)).length;
      await handover?.clear(removed);
      this.deps.onRetired?.(removed.length);
    } else {
      // batches emptied by an earlier pass that crashed before dropping them, or that had work left then
      await store.batches.dropEmptiedBatches();
    }
    if (out.removed > 0 || out.failed > 0 || out.offered > 0) this.log.info(out, 'retention pass');
    return out;
  }

  /** A page of candidates: each one retired lean, handed over (then ready), or left for a later pass. */
  private async consider(page: readonly string[], now: number, acc: { ready: string[]; lean: Map<string, Buffer>; out: RetentionPass }): Promise<void> {
    const { store, archive, handover, exporter } = this.deps;
    const { ready, lean, out } = acc;
    // an offer not acknowledged by every hook within the delivery horizon is made again
    const reofferMs = Math.max(this.deps.config.webhookDelivery.retryHorizonMs, 60_000) + this.deps.config.retention.intervalMs;
    const records = await store.subjects.getRecords(page);
    const proofs = await Promise.all(records.map((r) => (r ? exporter.exportOf(r) : null)));
    // confirmed when the index was read; anything else now is left for a later pass
    const confirmed = page.flatMap((key, j) => (proofs[j]?.status === 'confirmed' ? [{ key, record: records[j]!, proof: proofs[j]!, digest: proofs[j]!.digest }] : []));
    const values = this.deps.lean ? await Promise.all(confirmed.map(({ record, proof }) => leanValue(store, record, proof))) : [];
    confirmed.forEach(({ key }, j) => {
      if (values[j]) lean.set(key, values[j]!);
    });
    const items = archive || handover ? confirmed.filter(({ key }) => !lean.has(key)) : [];
    const states = handover ? await handover.states(items) : null;
    await Promise.all(
      items.map(async ({ key, proof }, j) => {
        try {
          if (archive) {
            const path = await archive.write(key, proof);
            out.archived++;
            await this.deps.afterArchive?.(key, path);
          }
          if (handover) {
            const st = states![j]!;
            if (!st.acknowledged) {
              if (st.offeredMs === null || now - st.offeredMs > reofferMs) {
                await handover.offer(store.keys.events, store.keys.eventTally, key, proof, now);
                out.offered++;
              } else out.waiting++;
              return;
            }
          }
          ready.push(key);
        } catch (err) {
          out.failed++;
          this.log.warn({ err, key }, 'could not hand a proof over; the subject stays in Redis');
        }
      }),
    );
  }

  close(): Promise<void> {
    return this.periodic.close();
  }
}
