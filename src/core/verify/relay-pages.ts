/**
 * Reading a relay's whole answer to one filter, page by page (discovery and audit). NIP-01
 * relays serve the newest `limit` events first, so each page asks `until` the oldest
 * second of the last one, inclusive: the events of that second come again and none is
 * lost at a page boundary. A page that brings nothing new while it is full (more events
 * share one second than a page holds) is answered by asking for that second alone, with
 * the largest limit; then the listing goes on below it. The answer is complete only when a
 * page brings nothing new and was not full; a relay that fails or times out, a second
 * holding more events than one answer can, or the caller's bound reached, makes it
 * incomplete, and says which.
 */
import { MAX_QUERY_LIMIT, type RelayQueryFilter } from '../nostr/filter.js';
import type { RelayFetcher } from './online.js';

/** Events asked for per page. */
export const DEFAULT_PAGE_SIZE = 500;
/** Events read per relay for one look-up or listing before the answer is called incomplete. */
export const DEFAULT_MAX_EVENTS = 10_000;

export interface PageBound {
  /** Events per page (at most MAX_QUERY_LIMIT). */
  readonly pageSize?: number;
  /** Distinct events read before stopping (the answer is then incomplete). */
  readonly maxEvents?: number;
}

/** One relay's answer, as discovery and audit report it. */
export interface RelayAnswer {
  readonly url: string;
  /** Distinct events the relay served (before verification). */
  readonly events: number;
  /** Why the relay could not be asked (or stopped answering), or null. */
  readonly error: string | null;
  /** True only when every page was read to the end: no event of the filter can be missing. */
  readonly complete: boolean;
  /** Why the answer is incomplete, in words; null when complete. */
  readonly incomplete: string | null;
  /** Queries sent. */
  readonly pages: number;
}

/** Receives each page's new event texts (each distinct event once, as the relay sent them): pages are handed on, never held. */
export type PageSink = (url: string, texts: string[]) => void;

/** The id and created_at of an event text, read without trusting it (verification comes later). */
function head(text: string): { id: string; created: number } {
  const id = /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text.slice(0, 4096))?.[1] ?? text;
  const created = Number(/"created_at"\s*:\s*(\d{1,15})/.exec(text)?.[1] ?? NaN);
  return { id, created };
}

export function boundOf(bound: PageBound = {}): { pageSize: number; maxEvents: number } {
  const pageSize = Math.max(2, Math.min(bound.pageSize ?? DEFAULT_PAGE_SIZE, MAX_QUERY_LIMIT));
  const maxEvents = Math.max(1, bound.maxEvents ?? DEFAULT_MAX_EVENTS);
  return { pageSize, maxEvents };
}

/** Pages through one relay's answer to `filter` (its own `until`, `limit` are replaced), handing each page's new events to `sink`. */
export async function pageThrough(fetcher: RelayFetcher, url: string, filter: RelayQueryFilter, sink: PageSink, bound: PageBound = {}): Promise<RelayAnswer> {
  const { pageSize, maxEvents } = boundOf(bound);
  const seen = new Set<string>();
  let pages = 0;
  const { until: ceiling, limit: _limit, ...base } = filter;
  let until = ceiling;
  const done = (error: string | null, incomplete: string | null): RelayAnswer => (
    { url, events: seen.size, error, complete: error === null && incomplete === null, incomplete: error !== null ? `the relay failed: ${error}` : incomplete, pages }
  );
  const ask = async (f: RelayQueryFilter): Promise<string[]> => {
    pages++;
    return fetcher.query(url, f);
  };
  /** Files a page's texts; false when the bound is reached. */
  const take = (page: readonly string[]): { fresh: number; oldest: number; full: boolean } => {
    const fresh: string[] = [];
    let oldest = Infinity;
    let full = false;
    for (const text of page) {
      const h = head(text);
      if (Number.isFinite(h.created)) oldest = Math.min(oldest, h.created);
      if (seen.has(h.id)) continue;
      if (seen.size >= maxEvents) {
        full = true;
        break;
      }
      seen.add(h.id);
      fresh.push(text);
    }
    sink(url, fresh);
    return { fresh: fresh.length, oldest, full };
  };
  // each round either brings a new event or moves `until` below a second already read: bounded by maxEvents
  for (let round = 0; round <= 2 * maxEvents + 2; round++) {
    let page: string[];
    try {
      page = await ask({ ...base, ...(until !== undefined ? { until } : {}), limit: pageSize });
    } catch (err) {
      return done(err instanceof Error ? err.message : String(err), null);
    }
    const got = take(page);
    if (got.full) return done(null, `the bound of ${maxEvents} events was reached`);
    if (page.length === 0) return done(null, null);
    if (!Number.isFinite(got.oldest)) return done(null, 'the relay served events without a created_at');
    if (got.fresh > 0) {
      until = got.oldest;
      continue;
    }
    // nothing new: the page held only events already read, all at or above `until`
    if (page.length < pageSize) return done(null, null);
    const second = got.oldest;
    let tie: string[];
    try {
      tie = await ask({ ...base, since: second, until: second, limit: MAX_QUERY_LIMIT });
    } catch (err) {
      return done(err instanceof Error ? err.message : String(err), null);
    }
    if (take(tie).full) return done(null, `the bound of ${maxEvents} events was reached`);
    if (tie.length >= MAX_QUERY_LIMIT) return done(null, `more than ${MAX_QUERY_LIMIT} events share the second ${second}: no query can list them all`);
    if (second <= 0 || (filter.since !== undefined && second <= filter.since)) return done(null, null);
    until = second - 1;
  }
  return done(null, `the bound of ${maxEvents} events was reached`);
}

/** Pages through every relay at once. */
export function pageAll(fetcher: RelayFetcher, relays: readonly string[], filter: RelayQueryFilter, sink: PageSink, bound: PageBound = {}): Promise<RelayAnswer[]> {
  return Promise.all(relays.map((url) => pageThrough(fetcher, url, filter, sink, bound)));
}

/** Sums the answers of several look-ups on one relay into one line's worth. */
export function mergeAnswers(url: string, answers: readonly RelayAnswer[]): RelayAnswer {
  const bad = answers.find((a) => !a.complete);
  return {
    url,
    events: answers.reduce((n, a) => n + a.events, 0),
    error: answers.find((a) => a.error !== null)?.error ?? null,
    complete: bad === undefined,
    incomplete: bad?.incomplete ?? null,
    pages: answers.reduce((n, a) => n + a.pages, 0),
  };
}
