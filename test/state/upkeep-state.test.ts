/**
 * Relay upkeep's walk over real Redis (src/adapters/nostr/upkeep-state.ts): events keep the
 * place they were first handed over in, a pass takes the next slice after the cursor, the
 * pass that reaches the newest ends the round (the next starts over), and the shards'
 * records read as one relay's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { UpkeepState, readRelayUpkeep, type RelayUpkeepRecord } from '../../src/adapters/nostr/upkeep-state.js';
import { SHARED_REDIS_URL, deletePrefix, uniquePrefix } from '../helpers/harness.js';

let redis: Redis;
const prefixes: string[] = [];

function state(): { store: AnchorStore; upkeep: UpkeepState } {
  const prefix = uniquePrefix('upkeep');
  prefixes.push(prefix);
  const store = new AnchorStore(redis, prefix);
  return { store, upkeep: new UpkeepState(store) };
}

const id = (n: number): string => n.toString(16).padStart(64, '0');

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
});

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis, `{${p}}`);
  redis.disconnect();
});

describe('relay upkeep state', () => {
  it('walks every event in the order first handed over, a slice a pass, and starts over after the newest', async () => {
    const { upkeep } = state();
    await upkeep.note([id(1), id(2), id(3)]);
    // handed over again: keeps its place
    await upkeep.note([id(2), id(4), id(5)]);
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
    const { upkeep } = state();
    await upkeep.note([id(1), id(2)]);
    const next = await upkeep.next(2);
    expect(next).toMatchObject({ ids: [id(1), id(2)], end: true });
  });

  it('drops events retention forgot, and reads the shards\' records and re-publish counts as one relay\'s', async () => {
    const a = state();
    const b = state();
    await a.upkeep.note([id(1), id(2)]);
    await a.upkeep.drop([id(1)]);
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
