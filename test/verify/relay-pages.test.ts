/**
 * Paging a relay's answer to its end (relay-pages.ts) against relays the dev relay cannot
 * play: one that caps every answer far below the page asked for, one that drops the
 * connection after a page, one whose second holds more events than any answer can. The
 * relay here is a stand-in (named so) that keeps NIP-01's order: newest first, ties by
 * lowest id, `since`/`until` inclusive, at most `limit` (or its own cap) events.
 */
import { describe, expect, it } from 'vitest';
import { MAX_QUERY_LIMIT, type RelayQueryFilter } from '../../src/core/nostr/filter.js';
import type { RelayFetcher } from '../../src/core/verify/online.js';
import { pageThrough } from '../../src/core/verify/relay-pages.js';

interface StubEvent { id: string; created_at: number }

/** A stand-in relay over `events`, answering at most `cap` events a query; `failAt` throws on that query. */
function stubRelay(events: StubEvent[], cap: number, failAt = Infinity): RelayFetcher & { queries: RelayQueryFilter[] } {
  const queries: RelayQueryFilter[] = [];
  return {
    queries,
    async query(url, filter) {
      queries.push(filter);
      if (queries.length >= failAt) throw new Error(`${url}: connection dropped`);
      return events
        .filter((e) => (filter.since === undefined || e.created_at >= filter.since) && (filter.until === undefined || e.created_at <= filter.until))
        .sort((a, b) => b.created_at - a.created_at || a.id.localeCompare(b.id))
        .slice(0, Math.min(cap, filter.limit ?? cap))
        .map((e) => JSON.stringify(e));
    },
    async fetch() {
      return null;
    },
    close() {},
  };
}

const ev = (n: number, at: number): StubEvent => ({ id: n.toString(16).padStart(64, '0'), created_at: at });
const read = async (relay: RelayFetcher, bound = {}): Promise<{ ids: string[]; answer: Awaited<ReturnType<typeof pageThrough>> }> => {
  const ids: string[] = [];
  const answer = await pageThrough(relay, 'wss://stub.example', { authors: ['a'] }, (_url, texts) => ids.push(...texts.map((t) => (JSON.parse(t) as StubEvent).id)), bound);
  return { ids, answer };
};

describe('reading a relay answer to its end', () => {
  it('reads every event from a relay that caps its answers at 3 (far below the page of 500 asked)', async () => {
    const events = Array.from({ length: 20 }, (_, i) => ev(i, 1000 + i));
    const { ids, answer } = await read(stubRelay(events, 3));
    expect(new Set(ids).size).toBe(20);
    expect(answer).toMatchObject({ events: 20, complete: true, incomplete: null, error: null });
  });

  it('reads a second holding more events than a page, by asking for that second alone', async () => {
    const events = [...Array.from({ length: 7 }, (_, i) => ev(i, 500)), ev(100, 499), ev(101, 501)];
    const { ids, answer } = await read(stubRelay(events, 1000), { pageSize: 3 });
    expect(new Set(ids).size).toBe(9);
    expect(answer.complete).toBe(true);
  });

  it('calls a relay that drops the connection after a page incomplete, keeping what it read', async () => {
    const events = Array.from({ length: 10 }, (_, i) => ev(i, 1000 + i));
    const { ids, answer } = await read(stubRelay(events, 4, 2));
    expect(ids).toHaveLength(4);
    expect(answer).toMatchObject({ events: 4, complete: false, error: 'wss://stub.example: connection dropped', incomplete: 'the relay failed: wss://stub.example: connection dropped' });
  });

  it('calls the answer incomplete when one second holds more events than any query can list', async () => {
    const events = Array.from({ length: MAX_QUERY_LIMIT + 1 }, (_, i) => ev(i, 700));
    const { answer } = await read(stubRelay(events, MAX_QUERY_LIMIT), { pageSize: 10, maxEvents: 100_000 });
    expect(answer.complete).toBe(false);
    expect(answer.incomplete).toBe(`more than ${MAX_QUERY_LIMIT} events share the second 700: no query can list them all`);
  });

  it('stops at the bound and says so', async () => {
    const events = Array.from({ length: 30 }, (_, i) => ev(i, 1000 + i));
    const { ids, answer } = await read(stubRelay(events, 1000), { pageSize: 10, maxEvents: 25 });
    expect(ids).toHaveLength(25);
    expect(answer).toMatchObject({ events: 25, complete: false, incomplete: 'the bound of 25 events was reached' });
  });
});
