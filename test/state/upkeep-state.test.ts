/**
 * Relay upkeep's walk over real Redis (src/adapters/nostr/upkeep-state.ts; outbox-add.lua with
 * kept-lib.lua, kept-drop.lua): events handed to the relays keep the place they were first
 * handed over in however often they are handed over again, a pass takes the next slice after
 * the cursor across the walk's chunks, the pass that reaches the newest ends the round (the
 * next starts over), events retention forgot are cleared and skipped (a chunk left empty
 * goes), and the shards' records read as one relay's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { KEPT_CHUNK_IDS, UpkeepState, readRelayUpkeep, type KeptSlice, type RelayUpkeepRecord } from '../../src/adapters/nostr/upkeep-state.js';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { SHARED_REDIS_URL, deletePrefix, uniquePrefix } from '../helpers/harness.js';

let redis: Redis;
const prefixes: string[] = [];

function state(perChunk?: number): { store: AnchorStore; upkeep: UpkeepState } {
  const prefix = uniquePrefix('upkeep');
  prefixes.push(prefix);
  const store = new AnchorStore(redis, prefix);
  return { store, upkeep: new UpkeepState(store, { perChunk }) };
}

const id = (n: number): string => n.toString(16).padStart(64, '0');
const ids = (from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, i) => id(from + i));

const RELAYS = ['ws://127.0.0.1:1', 'ws://127.0.0.1:2'];

/** Stores the events (as a batch's) and hands them to the relays (`urls`, all by default) as ensurePublishingMany does: the outboxes note them in the walk. */
async function handOver(store: AnchorStore, upkeep: UpkeepState, list: readonly string[], urls: readonly string[] = RELAYS): Promise<void> {
  for (const e of list) await store.events.storeEvent(e, JSON.stringify({ id: e }), { batch: 'b1' });
  await new RelayOutbox(store.events, RELAYS, upkeep.walk).add(list, Date.now(), urls);
}

/** Passes until the round ends (each `most` events), as RelayUpkeep.pass moves the cursor; bounded. */
async function round(upkeep: UpkeepState, most: number): Promise<KeptSlice[]> {
  const out: KeptSlice[] = [];
  for (let pass = 0; pass < 100; pass++) {
    const next = await upkeep.next(most);
    out.push(next);
    await upkeep.finish(new Map(), next.end ? 0 : next.cursor);
    if (next.end) return out;
  }
  throw new Error('the round did not end within 100 passes');
}

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
});

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis, `{${p}}`);
  redis.disconnect();
});

describe('relay upkeep state', () => {
  it('walks every event in the order first handed over, a slice a pass, and starts over after the newest', async () => {
    const { store, upkeep } = state();
    await handOver(store, upkeep, [id(1), id(2), id(3)]);
    // handed over again: keeps its place
    await handOver(store, upkeep, [id(2), id(4), id(5)]);
    expect(await upkeep.size()).toBe(5);
    const seen: string[][] = [];
    const ends: boolean[] = [];
    for (let pass = 0; pass < 4; pass++) {
      const next = await upkeep.next(2);
      seen.push(next.ids);
      ends.push(next.end);
      await upkeep.finish(new Map(), next.end ? 0 : next.cursor);
    }
    expect(seen).toEqual([[id(1), id(2)], [id(3), id(4)], [id(5)], [id(1), id(2)]]);
    expect(ends).toEqual([false, false, true, false]);
  });

  it('ends the round on the pass that takes exactly the last events, not one empty pass later', async () => {
    const { store, upkeep } = state();
    await handOver(store, upkeep, [id(1), id(2)]);
    const next = await upkeep.next(2);
    expect(next).toMatchObject({ ids: [id(1), id(2)], end: true });
  });

  it('an event handed over again, by a retried job, twice in one call or to one relay by the reconciler, is in the walk once and keeps its place', async () => {
    const { store, upkeep } = state();
    await handOver(store, upkeep, [id(1), id(2), id(2), id(3)]);
    // the job retried: the same ids again, then the next ones with one of them among them
    await handOver(store, upkeep, [id(1), id(2), id(3)]);
    await handOver(store, upkeep, [id(4), id(1), id(5)]);
    // the reconciler hands one back to one relay
    await handOver(store, upkeep, [id(3)], [RELAYS[1]!]);
    expect(await upkeep.size()).toBe(5);
    const [pass] = await round(upkeep, 10);
    expect(pass!.ids).toEqual(ids(1, 5));
    expect(pass!.positions).toEqual([0, 1, 2, 3, 4]);
  });

  it('an event first handed to one relay (the reconciler) is noted then, and keeps its place when handed to the others', async () => {
    const { store, upkeep } = state();
    await handOver(store, upkeep, [id(1)], [RELAYS[0]!]);
    await handOver(store, upkeep, [id(2)]);
    await handOver(store, upkeep, [id(1)]);
    expect((await upkeep.next(10)).ids).toEqual([id(1), id(2)]);
    expect(await upkeep.size()).toBe(2);
  });

  it('relay upkeep off: the outboxes note nothing', async () => {
    const { store, upkeep } = state();
    await store.events.storeEvent(id(1), '{}', { batch: 'b1' });
    await new RelayOutbox(store.events, RELAYS).add([id(1)], Date.now());
    expect(await upkeep.size()).toBe(0);
    expect((await upkeep.next(10)).ids).toEqual([]);
  });

  it('walks across chunks: notes that fill one chunk and start the next, slices that end and begin mid-chunk', async () => {
    // 3 ids a chunk: 11 events are chunks 0..3, the last one 2 ids
    const { store, upkeep } = state(3);
    await handOver(store, upkeep, ids(1, 2));
    await handOver(store, upkeep, ids(3, 9));
    await handOver(store, upkeep, [id(5), id(10), id(11)]);
    expect(await upkeep.size()).toBe(11);
    const slices = await round(upkeep, 4);
    expect(slices.map((s) => s.ids)).toEqual([ids(1, 4), ids(5, 8), ids(9, 11)]);
    expect(slices.map((s) => s.end)).toEqual([false, false, true]);
    expect(slices.flatMap((s) => s.positions)).toEqual(Array.from({ length: 11 }, (_, i) => i));
    // events handed over after a round started come after the older ones in the same round
    const first = await upkeep.next(4);
    await upkeep.finish(new Map(), first.cursor);
    await handOver(store, upkeep, ids(12, 13));
    const rest = await round(upkeep, 4);
    expect([first, ...rest].flatMap((s) => s.ids)).toEqual(ids(1, 13));
    // the whole walk in one slice
    expect((await upkeep.next(100)).ids).toEqual(ids(1, 13));
  });

  it('drop clears the events retention forgot: the walk skips them, the size counts them out, a chunk left empty goes', async () => {
    const { store, upkeep } = state(3);
    await handOver(store, upkeep, ids(1, 8));
    const all = await upkeep.next(100);
    const slot = (n: number): { id: string; position: number } => ({ id: id(n), position: all.positions[all.ids.indexOf(id(n))]! });
    // id 2 (chunk 0) and the whole of chunk 1 (ids 4, 5, 6)
    expect(await upkeep.drop([slot(2), slot(4), slot(5), slot(6)])).toBe(4);
    expect(await upkeep.size()).toBe(4);
    expect(await redis.hexists(upkeep.keptKey, '1')).toBe(0);
    expect(await redis.hexists(upkeep.keptKey, '0')).toBe(1);
    // dropped again (a pass that ran twice), or at a position holding another id: nothing changes
    expect(await upkeep.drop([slot(2), { id: id(1), position: 2 }])).toBe(0);
    expect(await upkeep.size()).toBe(4);
    const slices = await round(upkeep, 2);
    expect(slices.map((s) => s.ids)).toEqual([[id(1), id(3)], [id(7), id(8)]]);
    expect(slices.map((s) => s.end)).toEqual([false, true]);
    // the last chunk emptied, then new events: after the old ones, in the chunk's free slots and on
    await upkeep.drop([slot(7), slot(8)]);
    expect(await redis.hexists(upkeep.keptKey, '2')).toBe(0);
    await handOver(store, upkeep, ids(9, 11));
    expect(await upkeep.size()).toBe(5);
    const after = await upkeep.next(100);
    expect(after.ids).toEqual([id(1), id(3), id(9), id(10), id(11)]);
    expect(after.positions).toEqual([0, 2, 8, 9, 10]);
  });

  it('a pass steps over a long run of forgotten events at once: no empty passes', async () => {
    const { store, upkeep } = state(2);
    await handOver(store, upkeep, ids(1, 400));
    const all = await upkeep.next(400);
    expect(all.ids).toHaveLength(400);
    // retention forgot the oldest 396
    await upkeep.drop(all.ids.slice(0, 396).map((e, i) => ({ id: e, position: all.positions[i]! })));
    expect(await upkeep.size()).toBe(4);
    const next = await upkeep.next(3);
    expect(next).toMatchObject({ ids: ids(397, 399), end: false });
    await upkeep.finish(new Map(), next.cursor);
    expect(await upkeep.next(3)).toMatchObject({ ids: [id(400)], end: true });
  });

  it('packs about 32 bytes an event', async () => {
    const { store, upkeep } = state();
    const n = 10 * KEPT_CHUNK_IDS;
    const list = Array.from({ length: n }, (_, i) => id(0x1000 + i));
    const pipe = redis.pipeline();
    for (const e of list) pipe.hset(store.keys.event(e), 'batch', 'b1');
    await pipe.exec();
    await new RelayOutbox(store.events, RELAYS, upkeep.walk).add(list, Date.now());
    expect(await upkeep.size()).toBe(n);
    const bytes = Number(await redis.call('MEMORY', 'USAGE', upkeep.keptKey, 'SAMPLES', '0')) + Number(await redis.call('MEMORY', 'USAGE', store.keys.nostrKeptChunks, 'SAMPLES', '0'));
    expect(bytes / n).toBeLessThan(36);
  });

  it('refuses an id that is not 64 lowercase hex, or all zero, or a position that is not one, naming it', async () => {
    const { store, upkeep } = state();
    await expect(new RelayOutbox(store.events, RELAYS, upkeep.walk).add(['ABC'], Date.now())).rejects.toThrow(/relay upkeep walk: event id ABC is not 64 lowercase hex characters/);
    await expect(upkeep.drop([{ id: 'ABC', position: 0 }])).rejects.toThrow('relay upkeep: event id "ABC" is not 64 lowercase hex characters');
    await expect(upkeep.drop([{ id: id(0), position: 0 }])).rejects.toThrow(/all zero.*cleared slot/);
    await expect(upkeep.drop([{ id: id(1), position: -1 }])).rejects.toThrow(/position -1 of event/);
    expect(await upkeep.size()).toBe(0);
  });

  it('drops events retention forgot, and reads the shards\' records and re-publish counts as one relay\'s', async () => {
    const a = state();
    const b = state();
    await handOver(a.store, a.upkeep, [id(1), id(2)]);
    await a.upkeep.drop([{ id: id(1), position: 0 }]);
    expect(await a.upkeep.size()).toBe(1);
    const url = 'ws://127.0.0.1:1';
    const rec = (checked: number, oldestHeld: number | null, last: RelayUpkeepRecord['last']): RelayUpkeepRecord => ({ checked, missing: 1, unknown: 0, oldestHeld, last, at: '2026-01-01T00:00:00.000Z', error: null });
    await a.upkeep.finish(new Map([[url, rec(3, 1_700_000_100, null)]]), 7);
    await b.upkeep.finish(new Map([[url, rec(4, null, { checked: 9, missing: 2, unknown: 1, oldestHeld: 1_700_000_050, at: '2026-01-01T00:00:00.000Z' })]]), 0);
    await a.upkeep.countRepublished(url, 2);
    await b.upkeep.countRepublished(url, 3);
    const [sum] = await readRelayUpkeep([a.store, b.store], [url]);
    expect(sum).toEqual({
      url,
      checked: 7,
      missing: 2,
      unknown: 0,
      republished: 5,
      oldestHeld: 1_700_000_050,
      lastRound: { checked: 9, missing: 2, unknown: 1, at: '2026-01-01T00:00:00.000Z' },
      at: '2026-01-01T00:00:00.000Z',
      error: null,
    });
    expect((await a.upkeep.next(10)).ids).toEqual([]);
  });
});
