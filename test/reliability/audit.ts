/**
 * The reliability suite's bookkeeping: what each dev relay received (every EVENT that
 * reached its handler, by id) and stored (by `x` tag), and the audit run after each fault:
 * every subject enqueued is accounted for, none is stored twice on one relay, and its
 * history begins with `accepted` and ends where it should. One summary line per fault.
 */
import { NIP03_KIND } from '../../src/core/nostr/nip03.js';
import { appendFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { HistoryEntry, SubjectRecord } from '../../src/adapters/state/subject-hash.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { waitFor, type Issuer } from '../helpers/harness.js';

/** Counts the EVENT messages a relay processed (after its fault switches), per event id. */
export interface RelayTap {
  relay: DevRelay;
  /** Event id → times the relay processed it (the first stores it; later ones answer duplicate). */
  deliveries: Map<string, number>;
}

export function tapRelay(relay: DevRelay): RelayTap {
  const tap: RelayTap = { relay, deliveries: new Map() };
  const inner = relay.beforeEvent;
  relay.beforeEvent = (event) => {
    const verdict = inner?.(event);
    // a refusal is not a delivery: nothing was stored
    if (!verdict) tap.deliveries.set(event.id, (tap.deliveries.get(event.id) ?? 0) + 1);
    return verdict;
  };
  return tap;
}

export interface AuditExpectation {
  /** Overall status every accepted subject must end in (default confirmed). */
  status?: string;
  /** Keys expected to be refused (status `rejected`) rather than accepted. */
  refused?: ReadonlySet<string>;
  /** Checked against each accepted subject's history (after the generic checks). */
  history?: (key: string, history: HistoryEntry[], record: SubjectRecord) => void;
  /** Subjects whose history is read in full (default: every one; large runs sample). */
  historySample?: number;
}

export interface AuditResult {
  fault: string;
  enqueued: number;
  accepted: number;
  confirmed: number;
  refused: number;
  /** Events stored more than once for one subject on one relay (by `x` tag). */
  duplicates: number;
  /** Enqueued subjects with no record, or accepted ones not in the expected state, or missing on a relay. */
  lost: number;
  /** EVENT messages a relay processed again after storing the event (answered duplicate). */
  resent: number;
  extra: Record<string, number | string>;
}

/**
 * The anchor events a relay stores (NIP-03 attestations, kind 1040, left out), after
 * checking that no event is attested twice on it (one attestation per event, however many
 * daemons, kills and restarts).
 */
export function anchorEventCount(relay: DevRelay): number {
  const events = relay.events();
  const targets = events.filter((e) => e.kind === NIP03_KIND).map((e) => e.tags.find((t) => t[0] === 'e')?.[1]);
  if (new Set(targets).size !== targets.length) throw new Error(`${relay.url}: an event is attested twice (${targets.length} attestations of ${new Set(targets).size} events)`);
  return events.length - targets.length;
}

/** Stored events per `x` tag value on one relay. */
function storedByDigest(relay: DevRelay): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const e of relay.events()) {
    for (const t of e.tags) {
      if (t[0] !== 'x' || typeof t[1] !== 'string') continue;
      let ids = out.get(t[1]);
      if (!ids) out.set(t[1], (ids = new Set()));
      ids.add(e.id);
    }
  }
  return out;
}

/**
 * Audits the subjects `keys` after a fault: returns the figures and asserts the promises
 * (nothing lost, nothing stored twice on a relay, histories consistent).
 */
export async function audit(
  fault: string,
  issuer: Issuer,
  keys: readonly string[],
  taps: readonly RelayTap[],
  expectation: AuditExpectation = {},
): Promise<AuditResult> {
  const want = expectation.status ?? 'confirmed';
  const refusedKeys = expectation.refused ?? new Set<string>();
  const records: Array<SubjectRecord | null> = [];
  for (let i = 0; i < keys.length; i += 1000) records.push(...(await issuer.state.getRecords(keys.slice(i, i + 1000))));
  const stored = taps.map((t) => storedByDigest(t.relay));
  const storedIds = taps.map((t) => new Set(t.relay.events().map((e) => e.id)));

  let accepted = 0;
  let confirmed = 0;
  let refused = 0;
  let duplicates = 0;
  const lostKeys: string[] = [];
  const problems: string[] = [];
  for (const [i, key] of keys.entries()) {
    const r = records[i] ?? null;
    if (refusedKeys.has(key)) {
      if (r?.status === 'rejected' && (r.reason ?? '') !== '') refused++;
      else problems.push(`${key}: expected refused with a reason, found ${r ? r.status : 'no record'}`);
      continue;
    }
    if (!r || r.status === 'rejected') {
      lostKeys.push(key);
      continue;
    }
    accepted++;
    if (r.status === 'confirmed') confirmed++;
    if (r.status !== want) lostKeys.push(key);
    for (const [j, byDigest] of stored.entries()) {
      const n = byDigest.get(r.digest ?? '')?.size ?? 0;
      if (n > 1) duplicates += n - 1;
      // envelope mode: a confirmed subject's own event is on every relay that counted toward it
      if (want === 'confirmed' && r.witnesses.nostr && r.nostrEventId && !storedIds[j]!.has(r.nostrEventId)) {
        problems.push(`${key}: its event ${r.nostrEventId} is not stored on ${taps[j]!.relay.url}`);
      }
    }
  }
  let resent = 0;
  for (const t of taps) for (const n of t.deliveries.values()) resent += Math.max(0, n - 1);

  // Histories: every accepted subject's begins with one `accepted` entry and its last
  // status change lands on the status it is in now.
  const sampleEvery = Math.max(1, Math.floor(accepted / (expectation.historySample ?? accepted)));
  let checked = 0;
  for (const [i, key] of keys.entries()) {
    const r = records[i];
    if (!r || r.status === 'rejected' || refusedKeys.has(key)) continue;
    if (checked++ % sampleEvery !== 0) continue;
    const h = await issuer.state.history(key);
    if (h[0]?.event !== 'accepted') problems.push(`${key}: history does not begin with accepted: ${JSON.stringify(h[0])}`);
    if (h.filter((e) => e.event === 'accepted').length !== 1) problems.push(`${key}: history has ${h.filter((e) => e.event === 'accepted').length} accepted entries`);
    const changes = h.filter((e) => e.event === 'witness' && e.from !== e.to);
    const last = changes.at(-1);
    if (r.status !== 'pending' && last?.status !== r.status) problems.push(`${key}: last change says ${last?.status}, record says ${r.status}`);
    for (const [w, ws] of Object.entries(r.witnesses)) {
      const lastW = changes.filter((e) => e.witness === w).at(-1);
      if (ws.status !== 'pending' && lastW?.to !== ws.status) problems.push(`${key}: ${w} history ends at ${lastW?.to}, record says ${ws.status}`);
    }
    if (expectation.history) expectation.history(key, h, r);
  }

  const result: AuditResult = { fault, enqueued: keys.length, accepted, confirmed, refused, duplicates, lost: lostKeys.length, resent, extra: {} };
  expect(problems.slice(0, 10), `${fault}: ${problems.length} problems`).toEqual([]);
  expect(lostKeys.slice(0, 10), `${fault}: subjects not in state ${want}`).toEqual([]);
  expect(duplicates, `${fault}: events stored twice for one subject on one relay`).toBe(0);
  return result;
}

/** `fault: <name> accepted=N confirmed=N duplicates=N lost=N` plus extra figures; printed and, with AER1_RELIABILITY_OUT, appended to that file. */
export function report(r: AuditResult, extra: Record<string, number | string> = {}): string {
  const more = Object.entries({ enqueued: r.enqueued, refused: r.refused, resent: r.resent, ...r.extra, ...extra })
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const line = `fault: ${r.fault} accepted=${r.accepted} confirmed=${r.confirmed} duplicates=${r.duplicates} lost=${r.lost} ${more}`;
  console.log(line);
  const out = process.env.AER1_RELIABILITY_OUT;
  if (out) appendFileSync(out, `${line}\n`);
  return line;
}

/** Overall status counts for a set of keys. */
export async function statusCounts(issuer: Issuer, keys: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (let i = 0; i < keys.length; i += 1000) {
    for (const r of await issuer.state.getRecords(keys.slice(i, i + 1000))) {
      const s = r?.status ?? 'none';
      out[s] = (out[s] ?? 0) + 1;
    }
  }
  return out;
}

/** What the subjects that are not confirmed look like: counts by witness status, and one of them in full. */
export async function diagnose(issuer: Issuer, keys: readonly string[]): Promise<string> {
  const stuck: SubjectRecord[] = [];
  const missing: string[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const slice = keys.slice(i, i + 1000);
    (await issuer.state.getRecords(slice)).forEach((r, j) => {
      if (!r) missing.push(slice[j]!);
      else if (r.status !== 'confirmed') stuck.push(r);
    });
  }
  const byWitness: Record<string, number> = {};
  for (const r of stuck) for (const [w, s] of Object.entries(r.witnesses)) byWitness[`${w}:${s.status}`] = (byWitness[`${w}:${s.status}`] ?? 0) + 1;
  const one = stuck[0];
  const detail = one
    ? { key: one.key, status: one.status, witnesses: one.witnesses, batches: one.batches, relays: one.nostrEventId ? await issuer.store.events.relayReports(one.nostrEventId) : [], history: await issuer.state.history(one.key) }
    : null;
  return JSON.stringify({ missing: missing.length, stuck: stuck.length, byWitness, example: detail });
}

/**
 * Waits until every subject is confirmed, mining on every calendar whenever it holds
 * commitments (a batch submitted after a mine needs the next one).
 */
export async function confirmAll(issuer: Issuer, keys: readonly string[], calendars: readonly DevCalendar[], timeoutMs: number): Promise<void> {
  await waitFor(`${keys.length} confirmed`, async () => {
    for (const c of calendars) if (c.pendingCount() > 0) await c.mine();
    return (await statusCounts(issuer, keys)).confirmed === keys.length;
  }, timeoutMs, 500).catch(async (err: unknown) => {
    throw new Error(`${(err as Error).message}; ${await diagnose(issuer, keys)}`);
  });
}
