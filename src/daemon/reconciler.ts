/**
 * Reconciler: the anchor state is the truth and jobs are derived from it. A periodic,
 * bounded pass walks the subjects whose witnesses are not finished (the per-witness status
 * indexes, oldest first, resuming where the last pass stopped) and re-creates, idempotently,
 * every job their next step needs and no longer has:
 *   - accepted, batched witness, neither batched nor in the inbox (nor, with the anchor log
 *     on, still ahead of the witness's checkpoint cuts) → back into the inbox;
 *   - a Nostr batch without its batch event, or decided `envelope` with subjects not yet
 *     signed, whose batch job died → the job again (the decision recorded on the batch stands);
 *   - signed, a relay without a final answer and without a publish job → the job again;
 *   - a relay given up on while the quorum cannot be met without it → a new round for it
 *     (also when that made the witness `failed`; a relay's final refusal is never reopened);
 *   - relays' reports recorded but the witness not moved (the move failed) → moved;
 *   - a batch not yet held by m calendars whose submit job died → submitted again;
 *   - a submitted batch whose scheduled poll died → polled again;
 *   - a confirmed OTS batch with work left (BatchStore.setBatchWork: its subjects are
 *     confirmed and out of the indexes above) → its NIP-03 attestation job again when that
 *     was lost before the attestations were published, and the next upgrade poll of its
 *     calendars still pending when their poll died.
 * One owner across daemons: the pass is a BullMQ job scheduler's job (one job per tick,
 * taken by one worker), so two daemons never reconcile at once.
 */
import type { Logger } from 'pino';
import type { Config } from '../adapters/config/config.js';
import type { AnchorStore } from '../adapters/state/anchor-store.js';
import type { WitnessName } from '../adapters/state/keys.js';
import type { WitnessStatus } from '../core/proof/format.js';
import { reconcileQueueName } from '../adapters/bullmq/names.js';
import { PeriodicPass, shardPass, type ShardPassDeps } from '../adapters/bullmq/periodic-pass.js';
import type { NostrWitness } from '../adapters/nostr/nostr-witness.js';
import type { OtsWitness } from '../adapters/ots/ots-witness.js';

export const REPAIR_KINDS = ['inbox', 'relay-publish', 'relay-reopen', 'nostr-witness', 'nostr-batch', 'ots-submit', 'ots-poll', 'nip03'] as const;
export type RepairKind = (typeof REPAIR_KINDS)[number];
export type Repairs = Record<RepairKind, number>;

export interface ReconcilerDeps extends ShardPassDeps {
  config: Config;
  store: AnchorStore;
  nostr: NostrWitness | null;
  ots: OtsWitness | null;
  log: Logger;
  onRepair?: (kind: RepairKind, n: number) => void;
  now?: () => number;
  /** With the anchor log on: true when a checkpoint cut of the witness is still to take the subject (it stays out of the inbox). */
  onTheirWay?: (witness: WitnessName, key: string) => Promise<boolean>;
}

const SCHEDULER_ID = 'reconcile';
/** Subjects checked at once within a page (the state connection pipelines them). */
const CONCURRENCY = 50;

function noRepairs(): Repairs {
  return Object.fromEntries(REPAIR_KINDS.map((k) => [k, 0])) as Repairs;
}

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly cfg: Config['reconcile'];
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly periodic: PeriodicPass;

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.cfg = deps.config.reconcile;
    this.log = deps.log.child({ part: 'reconciler' });
    this.now = deps.now ?? Date.now;
    this.periodic = shardPass(deps, { queueName: reconcileQueueName, schedulerId: SCHEDULER_ID, name: 'reconciler', intervalMs: this.cfg.intervalMs, log: this.log, run: () => this.pass() });
  }

  /** Schedules the pass (every daemon upserts the same scheduler) and starts this daemon's worker. */
  start(): Promise<void> {
    return this.periodic.start();
  }

  /** One bounded pass: at most `reconcile.limit` subjects per witness and status. */
  async pass(): Promise<Repairs> {
    const repairs = noRepairs();
    // A subject younger than one interval may still be on its way through intake.
    const before = this.now() - this.cfg.intervalMs;
    const seenBatches = new Set<string>();
    for (const witness of ['nostr', 'ots'] as const) {
      if (!(witness === 'nostr' ? this.deps.nostr : this.deps.ots)) continue;
      // nostr `failed` too: a witness failed through relays given up on gets them reopened.
      for (const status of witness === 'nostr' ? ['pending', 'partial', 'failed'] : ['pending', 'partial']) {
        await this.walk(witness, status, before, seenBatches, repairs);
      }
    }
    if (this.deps.ots) await this.walkBatchWork(repairs);
    const total = REPAIR_KINDS.reduce((n, k) => n + repairs[k], 0);
    for (const k of REPAIR_KINDS) if (repairs[k] > 0) this.deps.onRepair?.(k, repairs[k]);
    if (total > 0) this.log.warn({ repairs }, 'reconciler re-created jobs that had died');
    return repairs;
  }

  private async walk(witness: WitnessName, status: string, before: number, seenBatches: Set<string>, repairs: Repairs): Promise<void> {
    const { store } = this.deps;
    const cursorName = `${witness}:${status}`;
    const cursor = await store.changes.reconcileCursor(cursorName);
    const page = await store.indexes.scanWitness(witness, status, cursor, this.cfg.limit, before);
    await store.changes.setReconcileCursor(cursorName, page.next);
    const reopenBefore = this.now() - this.cfg.reopenAfterMs;
    for (let i = 0; i < page.items.length; i += CONCURRENCY) {
      await Promise.all(
        page.items.slice(i, i + CONCURRENCY).map(async ({ key, batchId, eventId }) => {
          if (witness === 'nostr') {
            const nostr = this.deps.nostr!;
            let event = eventId ?? null;
            if (!event && batchId) {
              if (seenBatches.has(`nostr:${batchId}`)) return;
              seenBatches.add(`nostr:${batchId}`);
              if (await nostr.repairBatch(batchId)) repairs['nostr-batch']++;
              event = await nostr.batchEventId(batchId);
            }
            if (!event) {
              // Accepted into the inbox (auto or batch mode, perhaps before a switch to envelope) and never cut.
              if (!batchId) await this.reinbox('nostr', key, repairs);
              return;
            }
            const r = await nostr.repairPublishing(event, status as WitnessStatus, reopenBefore);
            repairs['relay-publish'] += r.missing;
            repairs['relay-reopen'] += r.reopened;
            repairs['nostr-witness'] += r.moved;
            return;
          }
          if (!batchId) return this.reinbox('ots', key, repairs);
          if (seenBatches.has(`ots:${batchId}`)) return;
          seenBatches.add(`ots:${batchId}`);
          const r = await this.deps.ots!.repairBatch(batchId);
          if (r === 'submit') repairs['ots-submit']++;
          if (r === 'poll') repairs['ots-poll']++;
        }),
      );
    }
  }

  /** The confirmed OTS batches with work left, `reconcile.limit` per pass, resuming where the last pass stopped. */
  private async walkBatchWork(repairs: Repairs): Promise<void> {
    const { store } = this.deps;
    const name = 'ots:work';
    let cursor = (await store.changes.reconcileCursor(name)) ?? '0';
    let seen = 0;
    // SSCAN's COUNT is a hint: bounded in rounds as well as in batches looked at
    for (let round = 0; round < 100 && seen < this.cfg.limit; round++) {
      const page = await store.batches.scanBatchesWithWork('ots', cursor, Math.min(100, this.cfg.limit));
      seen += page.ids.length;
      for (let i = 0; i < page.ids.length; i += CONCURRENCY) {
        await Promise.all(page.ids.slice(i, i + CONCURRENCY).map(async (id) => {
          for (const r of await this.deps.ots!.repairWork(id)) repairs[r === 'poll' ? 'ots-poll' : 'nip03']++;
        }));
      }
      cursor = page.next;
      if (cursor === '0') break;
    }
    await store.changes.setReconcileCursor(name, cursor === '0' ? null : cursor);
  }

  private async reinbox(witness: WitnessName, key: string, repairs: Repairs): Promise<void> {
    const { store } = this.deps;
    if (await store.batches.inInbox(witness, key)) return;
    if (await this.deps.onTheirWay?.(witness, key)) return;
    // Batched since the scan read it: nothing to do.
    if ((await store.subjects.batchOf(key, witness)) !== null) return;
    await store.batches.addToInbox(witness, key);
    repairs.inbox++;
  }

  close(): Promise<void> {
    return this.periodic.close();
  }
}
