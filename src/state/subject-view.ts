/**
 * The full state of one subject as people and dashboards read it (`aer1-anchor status`,
 * `GET /v1/anchors/{key}`): overall and per-witness status, per-relay and per-calendar
 * detail, and the history of transitions.
 */
import type { AnchorStore, HistoryEntry, RelayReportRecord } from './anchor-store.js';

export interface SubjectView {
  key: string;
  status: string;
  kind: string | null;
  digest: string | null;
  envelope: Record<string, unknown> | null;
  created_at: string | null;
  updated_at: string | null;
  reason?: string;
  witnesses: {
    nostr?: {
      status: string;
      confirmed_at: string | null;
      event_id: string | null;
      batch?: { id: string; index: number };
      relays: Array<{ url: string; status: string; message: string; at: string; attempts?: number }>;
    };
    ots?: {
      status: string;
      confirmed_at: string | null;
      batch?: { id: string; index: number; size: number };
      calendars: Array<{ url: string; status: string; message: string; at: string }>;
      bitcoin?: { height: number; block_hash: string; time: number };
    };
  };
  history: HistoryEntry[];
}

function iso(ms: number | null): string | null {
  return ms ? new Date(ms).toISOString() : null;
}

export async function subjectView(store: AnchorStore, key: string, sources: { relays: readonly string[]; calendars: readonly string[] }): Promise<SubjectView | null> {
  const record = await store.getRecord(key);
  if (!record) return null;
  const view: SubjectView = {
    key: record.key,
    status: record.status,
    kind: record.kind,
    digest: record.digest,
    envelope: record.envelopeCanonical ? (JSON.parse(record.envelopeCanonical) as Record<string, unknown>) : null,
    created_at: iso(record.createdMs),
    updated_at: iso(record.updatedMs),
    witnesses: {},
    history: await store.history(key),
  };
  if (record.reason) view.reason = record.reason;

  const n = record.witnesses.nostr;
  if (n) {
    let eventId = record.nostrEventId;
    const link = record.batches.nostr;
    if (!eventId && link) {
      const json = await store.batchField('nostr', link.id, 'event');
      eventId = json ? (JSON.parse(json) as { id: string }).id : null;
    }
    const reports: RelayReportRecord[] = eventId ? await store.relayReports(eventId) : [];
    view.witnesses.nostr = {
      status: n.status,
      confirmed_at: iso(n.confirmedMs),
      event_id: eventId,
      ...(link ? { batch: link } : {}),
      relays: sources.relays.map((url) => {
        const r = reports.find((x) => x.url === url);
        return r
          ? { url, status: r.status, message: r.message, at: r.at, ...(r.attempts !== undefined ? { attempts: r.attempts } : {}) }
          : { url, status: 'pending', message: '', at: '' };
      }),
    };
  }

  const o = record.witnesses.ots;
  if (o) {
    const link = record.batches.ots;
    const batch = link ? await store.getBatch('ots', link.id) : null;
    view.witnesses.ots = {
      status: o.status,
      confirmed_at: iso(o.confirmedMs),
      ...(link && batch ? { batch: { id: link.id, index: link.index, size: batch.size } } : {}),
      calendars: sources.calendars.map((url) => {
        const raw = batch?.fields[`cal:${url}`];
        if (!raw) return { url, status: link ? 'unsubmitted' : 'waiting for batch', message: '', at: '' };
        const c = JSON.parse(raw) as { status: string; message?: string; at?: string };
        return { url, status: c.status, message: c.message ?? '', at: c.at ?? '' };
      }),
      ...(batch?.fields.bitcoin && o.status === 'confirmed' ? { bitcoin: JSON.parse(batch.fields.bitcoin) as { height: number; block_hash: string; time: number } } : {}),
    };
  }
  return view;
}
