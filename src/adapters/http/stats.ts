/**
 * `GET /v1/stats` and the scrape-time gauges of `/metrics` read the same numbers from the
 * same place (the state indexes and the queues), so the two always agree.
 */
import { isoSeconds } from '../state/subject-view.js';
import type { GaugeSource } from '../metrics/metrics.js';
import type { WitnessName } from '../state/keys.js';
import type { DaemonView } from '../view/daemon-view.js';
import type { EndpointHealth } from '../health/witness-health.js';
import { displayUrl } from '../config/display-url.js';
import { relayQueueName } from '../queue/names.js';

export interface QueueCounts {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
}

export interface WitnessStats {
  counts: Record<string, number>;
  /** Oldest subject whose witness is pending or partial. */
  oldestPending: { since: string; ageSeconds: number } | null;
  lastConfirmedAt: string | null;
}

export interface Stats {
  at: string;
  subjects: { total: number; byStatus: Record<string, number> };
  /** Oldest subject whose overall status is pending or partial. */
  oldestPending: { key: string; since: string; ageSeconds: number } | null;
  witnesses: Partial<Record<WitnessName, WitnessStats>>;
  queue: QueueCounts;
  /** Each relay's and calendar's health as this daemon process saw it, with what waits on it. */
  health: EndpointWaiting[];
}

/**
 * An endpoint's health plus `waiting`: for a relay, the events not yet answered for good by it
 * (its queue's waiting, delayed and active jobs: one per subject in envelope mode, one per batch
 * in batch mode); for a calendar, the subjects whose OTS witness is pending or partial (the
 * calendars hold the batches together, m of n). Null when it could not be counted.
 */
export type EndpointWaiting = EndpointHealth & { waiting: number | null };

/** Jobs a relay's queue still holds: events that relay has not answered for good. */
async function relayWaiting(daemon: DaemonView): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!daemon.config.nostr.enabled) return out;
  // one queue per relay in each shard: the relay's waiting is the sum over the shards
  await Promise.all(daemon.config.nostr.relays.map(async (url) => {
    const name = relayQueueName(daemon.config.queue.name, url);
    const qs = daemon.queues.filter((q) => q.name === name);
    if (qs.length === 0) return;
    const counts = await Promise.all(qs.map((q) => q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused')));
    out.set(displayUrl(url), counts.reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0));
  }));
  return out;
}


function age(sinceMs: number, nowMs: number): number {
  return Math.max(0, Math.round((nowMs - sinceMs) / 100) / 10);
}

async function oldestOverall(daemon: DaemonView): Promise<{ key: string; ms: number } | null> {
  return daemon.state.oldestWithStatus(['pending', 'partial']);
}

export async function collectStats(daemon: DaemonView, now: () => number = Date.now): Promise<Stats> {
  const store = daemon.state;
  const [byStatus, byWitness, queue, oldest, relays] = await Promise.all([
    store.countByStatus(),
    store.countByWitness(daemon.witnesses),
    daemon.queueCounts(),
    oldestOverall(daemon),
    relayWaiting(daemon),
  ]);
  const at = now();
  const witnesses: Stats['witnesses'] = {};
  for (const w of daemon.witnesses) {
    const [oldestMs, lastMs] = await Promise.all([store.oldestUnconfirmed(w), store.lastConfirmed(w)]);
    witnesses[w] = {
      counts: byWitness[w] ?? {},
      oldestPending: oldestMs === null ? null : { since: isoSeconds(oldestMs), ageSeconds: age(oldestMs, at) },
      lastConfirmedAt: lastMs === null ? null : isoSeconds(lastMs),
    };
  }
  return {
    at: isoSeconds(at),
    subjects: { total: Object.values(byStatus).reduce((a, b) => a + b, 0), byStatus },
    oldestPending: oldest === null ? null : { key: oldest.key, since: isoSeconds(oldest.ms), ageSeconds: age(oldest.ms, at) },
    witnesses,
    queue,
    health: daemon.health.snapshot().map((h) => ({
      ...h,
      waiting: h.kind === 'relay' ? (relays.get(h.url) ?? null) : byWitness.ots ? (byWitness.ots.pending ?? 0) + (byWitness.ots.partial ?? 0) : null,
    })),
  };
}

/** Where the `/metrics` gauges read their numbers at scrape time. */
export function gaugeSource(daemon: DaemonView, now: () => number = Date.now): GaugeSource {
  return {
    countByWitness: () => daemon.state.countByWitness(daemon.witnesses),
    countByStatus: () => daemon.state.countByStatus(),
    oldestUnconfirmedSeconds: async () => {
      const out: Record<string, number> = {};
      for (const w of daemon.witnesses) {
        const oldest = await daemon.state.oldestUnconfirmed(w);
        out[w] = oldest === null ? 0 : Math.max(0, (now() - oldest) / 1000);
      }
      return out;
    },
    queueCounts: () => daemon.queueCounts(),
  };
}
