/**
 * The full state of one subject as people and dashboards read it (`GET /v1/anchors/{key}`,
 * the list, `aer1-anchor status`, the demo): its record, each witness's state down to every
 * relay and calendar, and its history. Reads only the batch fields it shows, never a
 * batch's digests.
 */
import type { Config } from '../config/config.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import type { AnchorStore, HistoryEntry, RelayReportRecord, SubjectRecord } from './anchor-store.js';

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

async function nostrView(store: AnchorStore, config: Config, record: SubjectRecord): Promise<NostrView | undefined> {
  const w = record.witnesses.nostr;
  if (!w) return undefined;
  let eventId = record.nostrEventId;
  let batch: NostrView['batch'] = null;
  let mode: NostrView['mode'] = eventId ? 'envelope' : null;
  const link = record.batches.nostr;
  if (!eventId && link) {
    const { event: eventJson, size, mode: decided } = await store.nostrBatchEvent(link.id);
    // Decided `envelope`: the subject's own event is on its way (the batch is only how it was cut).
    if (decided === 'envelope') mode = 'envelope';
    else {
      // Not decided yet (mode null) or a batch event: the subject's place in its batch.
      if (decided === 'batch' || eventJson) mode = 'batch';
      eventId = parseJson<{ id?: string }>(eventJson)?.id ?? null;
      batch = { id: link.id, index: link.index, size };
    }
  }
  // The relays the state says the event went to, never the current config's: a subject
  // anchored with relays A and B keeps showing A and B after the config moves to C.
  const sent = eventId ? await store.eventRelays(eventId) : { relays: [], reports: [] };
  const relays = sent.relays.map((url) => relayView(url, sent.reports.find((r) => r.url === url)));
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
 * The calendars come from the batch's state: each one it was submitted to (or failed on).
 * Until the batch is submitted, the configured calendars it is still to go to are listed
 * as `unsubmitted`; once it is, only the ones the state names.
 */
async function otsView(store: AnchorStore, config: Config, record: SubjectRecord): Promise<OtsView | undefined> {
  const w = record.witnesses.ots;
  if (!w) return undefined;
  const link = record.batches.ots;
  const view: OtsView = {
    status: w.status,
    confirmedAt: w.confirmedMs === null ? null : isoSeconds(w.confirmedMs),
    batch: null,
    calendars: config.ots.calendars.map((url) => calendarView(url, null)),
    bitcoin: null,
  };
  if (!link) return view;
  const [fields, recorded] = await Promise.all([
    store.otsBatchSummary(link.id),
    store.batchCalendars(link.id),
  ]);
  const submitted = fields.submitted;
  view.batch = { id: link.id, index: link.index, size: fields.size, anchoredAt: fields.anchoredAt, submitted };
  view.calendars = recorded.map((c) => calendarView(c.url, c.state));
  if (!submitted) {
    for (const url of config.ots.calendars) if (!recorded.some((c) => c.url === url)) view.calendars.push(calendarView(url, null));
  }
  view.bitcoin = parseJson<OtsView['bitcoin']>(fields.bitcoin);
  return view;
}

export async function anchorDetail(store: AnchorStore, config: Config, record: SubjectRecord): Promise<AnchorDetail> {
  const [nostr, ots, history] = await Promise.all([nostrView(store, config, record), otsView(store, config, record), store.history(record.key)]);
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
export async function subjectDetail(store: AnchorStore, config: Config, key: string): Promise<AnchorDetail | null> {
  const record = await store.getRecord(key);
  return record ? anchorDetail(store, config, record) : null;
}
