/**
 * What the status page shows beside the counts: the daemon's identity (`GET /v1/info`) and
 * the last hour minute by minute (`GET /v1/timeline`): subjects received and refused (counted
 * in the acceptance-time indexes) and confirmations with their time to confirm (per-minute
 * hashes the state script keeps for two hours, see keys.timeline). One pipelined round trip
 * of O(log n) commands, whatever the number of subjects.
 */
import { nostrQuorum } from '../config/config.js';
import { displayUrl } from '../config/display-url.js';
import { npub } from '../../core/nostr/keys.js';
import { isoSeconds } from '../state/subject-view.js';
import type { DaemonView } from '../view/daemon-view.js';
import { VERSION } from '../../version.js';
import { HttpError } from './respond.js';

export interface DaemonInfo {
  version: string;
  witnesses: string[];
  nostr: { mode: 'auto' | 'envelope' | 'batch'; pubkey: string | null; npub: string | null; relays: string[]; quorum: number } | null;
  ots: { network: 'mainnet' | 'regtest'; calendars: string[]; minCalendars: number } | null;
  readsRequireToken: boolean;
  /** redis.shards: /v1/events carries them all, /v1/events?shard=i one. */
  shards: number;
}

export function daemonInfo(daemon: DaemonView): DaemonInfo {
  const c = daemon.config;
  const pubkey = daemon.signerPubkey ?? null;
  return {
    version: VERSION,
    witnesses: [...daemon.witnesses],
    nostr: c.nostr.enabled
      ? { mode: c.nostr.mode, pubkey, npub: pubkey ? npub(pubkey) : null, relays: c.nostr.relays.map(displayUrl), quorum: nostrQuorum(c) }
      : null,
    ots: c.ots.enabled ? { network: c.ots.network, calendars: c.ots.calendars.map(displayUrl), minCalendars: c.ots.minCalendars } : null,
    readsRequireToken: c.http.readsRequireToken,
    shards: c.redis.shards,
  };
}

/** Time to confirm of the confirmations in one minute; null when there were none. */
export type TimeToConfirm = { count: number; meanSeconds: number; maxSeconds: number } | null;

export interface TimelineBucket {
  /** Start of the minute (UTC). */
  start: string;
  /** Subjects accepted or refused whose acceptance falls in the minute. */
  received: number;
  /** Of those, refused (status `rejected`). */
  rejected: number;
  /** Confirmations in the minute: `subject` (the subject's overall status) and per witness. */
  confirmed: Record<string, number>;
  timeToConfirm: Record<string, TimeToConfirm>;
}

export interface Timeline {
  at: string;
  bucketSeconds: 60;
  /** Oldest first; the last is the minute now running. */
  buckets: TimelineBucket[];
}

export const DEFAULT_MINUTES = 60;
/** The per-minute hashes live two hours. */
export const MAX_MINUTES = 120;

export function parseMinutes(text: string | null): number {
  if (text === null) return DEFAULT_MINUTES;
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1 || Number(text) > MAX_MINUTES) {
    throw new HttpError(400, 'bad_parameter', `minutes must be an integer from 1 to ${MAX_MINUTES}, got ${JSON.stringify(text.slice(0, 32))}`, 'minutes');
  }
  return Number(text);
}

export async function collectTimeline(daemon: DaemonView, minutes: number, now: () => number = Date.now): Promise<Timeline> {
  const at = now();
  const current = Math.floor(at / 60_000);
  const first = current - minutes + 1;
  const series = ['subject', ...daemon.witnesses];
  const minutesRead = await daemon.state.timelineMinutes(first, current, series);
  const buckets: TimelineBucket[] = minutesRead.map((t) => {
    const confirmed: Record<string, number> = {};
    const timeToConfirm: Record<string, TimeToConfirm> = {};
    for (const s of series) {
      const c = t.confirmed[s]!;
      confirmed[s] = c.count;
      timeToConfirm[s] = c.count > 0 ? { count: c.count, meanSeconds: round1(c.sumMs / c.count / 1000), maxSeconds: round1(c.maxMs / 1000) } : null;
    }
    return { start: isoSeconds(t.minute * 60_000), received: t.received, rejected: t.rejected, confirmed, timeToConfirm };
  });
  return { at: isoSeconds(at), bucketSeconds: 60, buckets };
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
