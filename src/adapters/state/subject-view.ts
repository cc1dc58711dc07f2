/**
 * The full state of one subject as people and dashboards read it (`GET /v1/anchors/{key}`,
 * the list, `aer1-anchor status`, the demo): its record, each witness's state down to every
 * relay and calendar, and its history. Reads only the batch fields it shows, never a
 * batch's digests.
 */
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import type { AnchorStore } from './anchor-store.js';
import type { RelayReportRecord } from './events.js';
import type { HistoryEntry, SubjectRecord } from './subject-hash.js';

/** RFC 3339 UTC, seconds. */
export function isoSeconds(ms: number): string {
  return formatAnchoredAt(new Date(ms));
}

export interface RelayView {
  url: string;
  status: string;
  message: string;
  at: string | null;
  attempts?: number;
  prefix?: string;
  final?: boolean;
  /** The id of the copy this relay was sent instead of the event (NIP-13 proof of work, re-dated). */
  copyId?: string;
  /** NIP-13 leading zero bits mined for this relay. */
  pow?: number;
}

export interface CalendarView {
  url: string;
  status: string;
  message: string;
  at: string | null;
  polls?: number;
}

export interface NostrView {
  status: string;
  confirmedAt: string | null;
  /** The kind of event the subject got (auto mode decides per cut); null while not decided. */
  mode: 'envelope' | 'batch' | null;
  eventId: string | null;
  batch: { id: string; index: number; size: number | null } | null;
  relays: RelayView[];
}

export interface OtsView {
  status: string;
  confirmedAt: string | null;
  batch: { id: string; index: number; size: number | null; anchoredAt: string | null; submitted: boolean } | null;
  calendars: CalendarView[];
  bitcoin: { height: number; block_hash: string; time: number } | null;
}

export interface AnchorSummary {
  key: string;
  kind: string | null;
  status: string;
  digest: string | null;
  createdAt: string;
  updatedAt: string;
  witnesses: Record<string, string>;
  reason?: string;
}

export interface AnchorDetail extends Omit<AnchorSummary, 'witnesses' | 'reason'> {
  envelope: Record<string, unknown> | null;
  reason: string | null;
  witnesses: { nostr?: NostrView; ots?: OtsView };
  history: HistoryEntry[];
}

export function summarize(record: SubjectRecord): AnchorSummary {
  const witnesses: Record<string, string> = {};
  for (const [w, v] of Object.entries(record.witnesses)) if (v) witnesses[w] = v.status;
  return {
    key: record.key,
    kind: record.kind,
    status: record.status,
    digest: record.digest,
    createdAt: isoSeconds(record.createdMs),
    updatedAt: isoSeconds(record.updatedMs),
    witnesses,
    ...(record.reason ? { reason: record.reason } : {}),
  };
}

/** What the view takes of the config in force: each witness on or off, its relays and calendars (a Config is one). */
export interface SourcesConfig {
  nostr: { enabled: boolean; relays: readonly string[] };
  ots: { enabled: boolean; calendars: readonly string[] };
}

/**
 * The relays and calendars of the config in force that a subject still waits for, when it
 * has been sent nowhere yet (sentTo): those of an enabled witness, none of a disabled one.
 */
export function configuredSources(config: SourcesConfig): { relays: readonly string[]; calendars: readonly string[] } {
  return { relays: config.nostr.enabled ? config.nostr.relays : [], calendars: config.ots.enabled ? config.ots.calendars : [] };
}

/**
 * Where a subject's witness was sent: the one rule for the subject view (`GET
 * /v1/anchors/{key}`, `aer1-anchor status`) and the proof (`ProofExporter`, `GET
 * /v1/anchors/{key}/proof`, `aer1-anchor proof`), for the relays of its Nostr event and the
 * calendars of its OTS batch alike. `recorded`: where the state says it went (the relays
 * the event was handed to, then any other that reported on it; the calendars the batch
 * holds a state for); `settled`: the sending is over (the event was handed to its relays;
 * the batch is submitted). Settled, exactly the recorded ones, whatever the config says
 * now; not yet, the recorded ones and the configured ones it is still to go to (listed
 * `pending` / `unsubmitted`). Ordered as the config in force names them, then those it no
 * longer names, in the order the state records them.
 */
export function sentTo(recorded: readonly string[], configured: readonly string[], settled: boolean): string[] {
  const urls = settled ? [...recorded] : [...recorded, ...configured.filter((u) => !recorded.includes(u))];
  const rank = (u: string): number => {
    const i = configured.indexOf(u);
    return i < 0 ? configured.length : i;
  };
  return urls.map((u, i) => ({ u, i })).sort((a, b) => rank(a.u) - rank(b.u) || a.i - b.i).map((x) => x.u);
}

function parseJson<T>(text: string | null | undefined): T | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

function relayView(url: string, r: RelayReportRecord | undefined): RelayView {
  if (!r) return { url, status: 'pending', message: '', at: null };
  return {
    url,
    status: r.status,
    message: r.message,
    at: r.at || null,
    ...(r.attempts !== undefined ? { attempts: r.attempts } : {}),
    ...(r.prefix !== undefined ? { prefix: r.prefix } : {}),
    ...(r.final !== undefined ? { final: r.final } : {}),
    ...(r.copyId !== undefined ? { copyId: r.copyId } : {}),
    ...(r.pow !== undefined ? { pow: r.pow } : {}),
  };
}

async function nostrView(store: AnchorStore, config: SourcesConfig, record: SubjectRecord): Promise<NostrView | undefined> {
  const w = record.witnesses.nostr;
  if (!w) return undefined;
  let eventId = record.nostrEventId;
  let batch: NostrView['batch'] = null;
  let mode: NostrView['mode'] = eventId ? 'envelope' : null;
  const link = record.batches.nostr;
  if (!eventId && link) {
    const { event: eventJson, size, mode: decided } = await store.batches.nostrBatchEvent(link.id);
    // Decided `envelope`: the subject's own event is on its way (the batch is only how it was cut).
    if (decided === 'envelope') mode = 'envelope';
    else {
      // Not decided yet (mode null) or a batch event: the subject's place in its batch.
      if (decided === 'batch' || eventJson) mode = 'batch';
      eventId = parseJson<{ id?: string }>(eventJson)?.id ?? null;
      batch = { id: link.id, index: link.index, size };
    }
  }
  // sentTo: the relays the state says the event went to, never the current config's (a
  // subject anchored with relays A and B keeps showing A and B after the config moves to C);
  // before it went anywhere, the configured relays it waits for.
  const sent = eventId ? await store.events.eventRelays(eventId) : { relays: [], reports: [] };
  const relays = sentTo(sent.relays, configuredSources(config).relays, sent.relays.length > 0).map((url) => relayView(url, sent.reports.find((r) => r.url === url)));
  return {
    status: w.status,
    confirmedAt: w.confirmedMs === null ? null : isoSeconds(w.confirmedMs),
    mode,
    eventId,
    batch,
    relays,
  };
}

function calendarView(url: string, raw: string | null | undefined): CalendarView {
  const cal = parseJson<{ status?: string; message?: string; at?: string; polls?: number }>(raw);
  return {
    url,
    status: cal?.status ?? 'unsubmitted',
    message: cal?.message ?? '',
    at: cal?.at || null,
    ...(cal?.polls !== undefined ? { polls: cal.polls } : {}),
  };
}

/**
 * The calendars (sentTo): each one the batch's state names (submitted to, or failed on);
 * until the batch is submitted, also the configured calendars it is still to go to, listed
 * `unsubmitted`; once it is, only the ones the state names.
 */
async function otsView(store: AnchorStore, config: SourcesConfig, record: SubjectRecord): Promise<OtsView | undefined> {
  const w = record.witnesses.ots;
  if (!w) return undefined;
  const link = record.batches.ots;
  const view: OtsView = {
    status: w.status,
    confirmedAt: w.confirmedMs === null ? null : isoSeconds(w.confirmedMs),
    batch: null,
    calendars: sentTo([], configuredSources(config).calendars, false).map((url) => calendarView(url, null)),
    bitcoin: null,
  };
  if (!link) return view;
  const [fields, recorded] = await Promise.all([
    store.batches.otsBatchSummary(link.id),
    store.batches.batchCalendars(link.id),
  ]);
  const submitted = fields.submitted;
  view.batch = { id: link.id, index: link.index, size: fields.size, anchoredAt: fields.anchoredAt, submitted };
  view.calendars = sentTo(recorded.map((c) => c.url), configuredSources(config).calendars, submitted).map((url) => calendarView(url, recorded.find((c) => c.url === url)?.state));
  view.bitcoin = parseJson<OtsView['bitcoin']>(fields.bitcoin);
  return view;
}

export async function anchorDetail(store: AnchorStore, config: SourcesConfig, record: SubjectRecord): Promise<AnchorDetail> {
  const [nostr, ots, history] = await Promise.all([nostrView(store, config, record), otsView(store, config, record), store.subjects.history(record.key)]);
  const { witnesses: _statuses, reason: _reason, ...summary } = summarize(record);
  return {
    ...summary,
    reason: record.reason,
    envelope: parseJson<Record<string, unknown>>(record.envelopeCanonical),
    witnesses: { ...(nostr ? { nostr } : {}), ...(ots ? { ots } : {}) },
    history,
  };
}

/** The detail of the subject under `key`, or null when there is none. */
export async function subjectDetail(store: AnchorStore, config: SourcesConfig, key: string): Promise<AnchorDetail | null> {
  const record = await store.subjects.getRecord(key);
  return record ? anchorDetail(store, config, record) : null;
}
