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
import { RelayOutbox } from '../nostr/relay-outbox.js';
import { readRelayUpkeep, type RelayUpkeepSummary } from '../nostr/upkeep-state.js';

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
 * (its outbox: one per subject in envelope mode, one per batch
 * in batch mode); for a calendar, the subjects whose OTS witness is pending or partial (the
 * calendars hold the batches together, m of n). Null when it could not be counted.
 */
export type EndpointWaiting = EndpointHealth & { waiting: number | null; upkeep: RelayUpkeepView | null };

/**
 * Relay upkeep on one relay (docs/evidence.md), every shard's: the round under way (events
 * checked, missing and handed back, unknown), the last round finished, and how far back the
 * relay still holds anchor events (the oldest it held on its own when checked).
 */
export interface RelayUpkeepView {
  checked: number;
  missing: number;
  unknown: number;
  /** Events sent again that the relay accepted, ever. */
  republished: number;
  oldestHeldAt: string | null;
  oldestHeldAgeSeconds: number | null;
  lastRound: { checked: number; missing: number; unknown: number; at: string } | null;
  at: string | null;
  error: string | null;
}

function upkeepOn(daemon: DaemonView): boolean {
  return daemon.config.nostr.enabled && daemon.config.relayUpkeep.enabled;
}

async function relayUpkeep(daemon: DaemonView): Promise<RelayUpkeepSummary[]> {
  return upkeepOn(daemon) ? readRelayUpkeep(daemon.state.shards, daemon.config.nostr.relays) : [];
}

function upkeepView(s: RelayUpkeepSummary, nowMs: number): RelayUpkeepView {
  return {
    checked: s.checked,
    missing: s.missing,
    unknown: s.unknown,
    republished: s.republished,
    oldestHeldAt: s.oldestHeld === null ? null : isoSeconds(s.oldestHeld * 1000),
    oldestHeldAgeSeconds: s.oldestHeld === null ? null : age(s.oldestHeld * 1000, nowMs),
    lastRound: s.lastRound,
    at: s.at,
    error: s.error,
  };
}

/** Events a relay's outbox still holds (every shard's): events that relay has not answered for good. */
async function relayWaiting(daemon: DaemonView): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!daemon.config.nostr.enabled) return out;
  const relays = daemon.config.nostr.relays;
  const sizes = await Promise.all(daemon.state.shards.map((store) => new RelayOutbox(store.events, relays).sizes()));
  for (const url of relays) out.set(displayUrl(url), sizes.reduce((n, m) => n + (m.get(url) ?? 0), 0));
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
  const [byStatus, byWitness, queue, oldest, relays, upkeep] = await Promise.all([
    store.countByStatus(),
    store.countByWitness(daemon.witnesses),
    daemon.queueCounts(),
    oldestOverall(daemon),
    relayWaiting(daemon),
    relayUpkeep(daemon),
  ]);
  const upkeepByUrl = new Map(upkeep.map((u) => [displayUrl(u.url), u]));
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
      waiting: h.kind === 'relay' ? (relays.get(h.url) ?? null) : h.kind === 'calendar' && byWitness.ots ? (byWitness.ots.pending ?? 0) + (byWitness.ots.partial ?? 0) : null,
      upkeep: h.kind === 'relay' && upkeepByUrl.has(h.url) ? upkeepView(upkeepByUrl.get(h.url)!, at) : null,
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
    ...(upkeepOn(daemon) ? { relayUpkeep: async () => (await relayUpkeep(daemon)).map((u) => ({ url: u.url, oldestHeld: u.oldestHeld })) } : {}),
  };
}
