/**
 * Paging the subject list (SubjectIndexes.list, ShardedStore.list: GET /v1/anchors) while
 * subjects move between the status indexes as their witnesses answer (pending → partial →
 * confirmed). Found as a flake of test/http/api.test.ts ("pages newest first with an opaque
 * cursor until next is null"). Here the moves are driven, not hoped for: the store that lists
 * talks to Redis through a connection that, before every round trip the listing makes, moves
 * the subject at the cursor (and one other) one status on through another store (set-witness),
 * so a move lands between any two reads of one page as well as between pages.
 *
 * The guarantee: paging to the end gives no subject twice, in (acceptance time, key) order
 * newest first, and every subject that was in the listed set for the whole paging. Real Redis
 * (the shared one, a unique prefix cleaned after the file).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '../../src/adapters/redis/connection.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject } from '../../src/adapters/state/subjects.js';
import type { ListQuery } from '../../src/adapters/state/subject-indexes.js';
import { ShardedStore } from '../../src/adapters/state/sharded-store.js';
import { shardOf } from '../../src/core/shard/shard.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/harness.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

let redis: RedisClient;

beforeAll(() => {
  redis = connectRedis(SHARED_REDIS_URL);
});

afterAll(async () => {
  await redis?.quit();
});

type Position = [number, string];
type Step = 0 | 1 | 2; // pending, partial (nostr confirmed), confirmed (both)

/** A connection to the same Redis that awaits `before()` ahead of every command, script and pipeline it sends. */
function interleaved(client: RedisClient, before: () => Promise<void>): RedisClient {
  const wrapPipeline = (pipe: object): object =>
    new Proxy(pipe, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === 'exec' && typeof v === 'function') return async (...a: unknown[]) => { await before(); return (v as (...x: unknown[]) => unknown).apply(target, a); };
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
  return new Proxy(client, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const fn = v as (...x: unknown[]) => unknown;
      if (prop === 'pipeline' || prop === 'multi') return (...a: unknown[]) => wrapPipeline(fn.apply(target, a) as object);
      if (prop === 'defineCommand') return fn.bind(target);
      return async (...a: unknown[]) => { await before(); return fn.apply(target, a); };
    },
  }) as RedisClient;
}

/** Byte order of the keys (UTF-8, as Redis sorts members of one score), newest first. */
function listOrder(a: Position, b: Position): number {
  return b[0] - a[0] || Buffer.compare(Buffer.from(b[1]), Buffer.from(a[1]));
}

/** The first key `${base}-<n>` that shard 0 of `shards` holds. */
function inShard0(base: string, shards: number): string {
  for (let n = 0; n < 10_000; n++) if (shardOf(`${base}-${n}`, shards) === 0) return `${base}-${n}`;
  throw new Error('no key for shard 0');
}

/** Deterministic 32-bit PRNG (mulberry32): the same moves every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function subject(key: string): AcceptSubject {
  return { key, kind: 'receipt', envelopeCanonical: `{"k":${JSON.stringify(key)}}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) };
}

interface World {
  /** Lists through the interleaving connection. */
  lister: { list(q: ListQuery): Promise<{ keys: string[]; next: string | null }> };
  positions: Map<string, Position>;
  steps: Map<string, Step>;
  /** The subject the listing stands at (the last key of the previous page). */
  atCursor: string | null;
  /** Moves made, for the message. */
  moves: number;
}

/**
 * `n` subjects over shards (1: a plain AnchorStore) accepted `perMs` to an acceptance time
 * (one accept call each), given a seeded mix of statuses, and a lister whose every round trip
 * is preceded by moving the cursor's subject and one other subject one status on.
 */
async function world(opts: { n: number; perMs: number; shards: number; seed: number; keyOf?: (i: number) => string; start?: (i: number) => Step; others?: boolean }): Promise<World> {
  const prefix = uniquePrefix('listrace');
  let clock = 1_700_000_000_000;
  const positions = new Map<string, Position>();
  const steps = new Map<string, Step>();
  const movers = Array.from({ length: opts.shards }, (_, i) => new AnchorStore(redis, opts.shards === 1 ? prefix : `${prefix}:${i}`, () => clock));
  const moverState = opts.shards === 1 ? null : new ShardedStore(movers);
  const storeOf = (key: string): AnchorStore => (moverState ? moverState.of(key) : movers[0]!);
  // keys from the seed (a unique prefix holds them): the same order of ties every run
  const keys = Array.from({ length: opts.n }, (_, i) => (opts.keyOf ? opts.keyOf(i) : `s-${createHash('sha256').update(`${opts.seed}:${i}`).digest('hex').slice(0, 12)}`));
  for (let i = 0; i < keys.length; i += opts.perMs) {
    clock += 1;
    const group = keys.slice(i, i + opts.perMs);
    // one accept call per shard: every subject of the group gets the same acceptance time
    const byStore = new Map<AnchorStore, string[]>();
    for (const key of group) byStore.set(storeOf(key), [...(byStore.get(storeOf(key)) ?? []), key]);
    for (const [store, ks] of byStore) {
      const res = await store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: [] }, ks.map(subject));
      expect(res.results.every((r) => r.result === 'created')).toBe(true);
    }
    for (const key of group) {
      positions.set(key, [clock, key]);
      steps.set(key, 0);
    }
  }
  const next = async (key: string): Promise<void> => {
    const step = steps.get(key)!;
    if (step === 2) return;
    const change = await storeOf(key).subjects.setWitness(key, step === 0 ? 'nostr' : 'ots', 'confirmed', 1e12);
    expect(change.overall).toBe(step === 0 ? 'partial' : 'confirmed');
    steps.set(key, (step + 1) as Step);
  };
  const rand = prng(opts.seed);
  // a seeded start: a third pending, a third partial, a third confirmed, interleaved in time
  for (const [i, key] of keys.entries()) {
    const want = opts.start ? opts.start(i) : (Math.floor(rand() * 3) as Step);
    while (steps.get(key)! < want) await next(key);
  }
  const w: World = { lister: null as never, positions, steps, atCursor: null, moves: 0 };
  // one move at a time, also when K shards' reads ask at once
  let queue = Promise.resolve();
  const before = (): Promise<void> => {
    queue = queue.then(async () => {
      if (w.atCursor) await next(w.atCursor);
      if (opts.others !== false) await next(keys[Math.floor(rand() * keys.length)]!);
      w.moves++;
    });
    return queue;
  };
  const conn = interleaved(redis, before);
  const listers = Array.from({ length: opts.shards }, (_, i) => new AnchorStore(conn, opts.shards === 1 ? prefix : `${prefix}:${i}`));
  w.lister = opts.shards === 1 ? listers[0]!.indexes : new ShardedStore(listers);
  return w;
}

/** Pages to the end (bounded), the cursor's subject noted for the adversary before each page. */
async function pageAll(w: World, q: Omit<ListQuery, 'cursor' | 'limit'>, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 2000; i++) {
    const page = await w.lister.list({ ...q, limit, ...(cursor ? { cursor } : {}) });
    expect(page.keys.length).toBeLessThanOrEqual(limit);
    seen.push(...page.keys);
    if (!page.next) return seen;
    cursor = page.next;
    w.atCursor = seen[seen.length - 1] ?? w.atCursor;
  }
  throw new Error('more than 2,000 pages');
}

/** No key twice, in list order, and every key of `always` (in the set for the whole paging) seen. */
function expectPaged(w: World, seen: string[], always: readonly string[]): void {
  const twice = seen.filter((k, i) => seen.indexOf(k) !== i);
  expect(twice, `seen twice (${w.moves} moves)`).toEqual([]);
  const pos = seen.map((k) => w.positions.get(k)!);
  expect(pos.map(([, k]) => k), 'newest first, then key').toEqual([...pos].sort(listOrder).map(([, k]) => k));
  const set = new Set(seen);
  const missed = always.filter((k) => !set.has(k));
  expect(missed, `missed (${w.moves} moves)`).toEqual([]);
}

describe.each([1, 3])('list while subjects change status (%i shard(s))', (shards) => {
  it('the subject at the cursor moving on between the reads of one page does not hide the next ones', async () => {
    // oldest first: 2 pending, 3 confirmed, then the page's last subject (pending), 2 newer pending.
    // Page 2 reads while that subject moves to partial, then to confirmed: it must still give
    // the 3 confirmed ones next, not 2 of them and a pending one.
    const start: Step[] = [0, 0, 2, 2, 2, 0, 0, 0];
    // all in one shard, so that shard's page meets the move (the others are empty)
    const w = await world({ n: start.length, perMs: 1, shards, seed: 0, start: (i) => start[i]!, others: false, keyOf: (i) => inShard0(`c${i}`, shards) });
    expectPaged(w, await pageAll(w, {}, 3), [...w.positions.keys()]);
  });

  it('no filter: every subject once, newest first, ties of one ms included', async () => {
    // seeds 12, 15, 25, 39 and 45 lost a subject when a page read the indexes in several round trips
    for (const [seed, perMs, limit] of [[1, 1, 3], [12, 1, 2], [15, 4, 2], [25, 2, 3], [39, 4, 2], [45, 2, 2], [4, 2, 7]] as const) {
      const w = await world({ n: 60, perMs, shards, seed });
      const seen = await pageAll(w, {}, limit);
      // every subject exists for the whole paging, in one status index or another
      expectPaged(w, seen, [...w.positions.keys()]);
    }
  });

  it('?status=: a subject in that status for the whole paging is seen once; none twice', async () => {
    for (const [seed, perMs, limit] of [[5, 1, 3], [6, 4, 3]] as const) {
      const w = await world({ n: 60, perMs, shards, seed });
      // confirmed is where moves lead: those confirmed at the start stay there
      const confirmed = [...w.steps].filter(([, s]) => s === 2).map(([k]) => k);
      expectPaged(w, await pageAll(w, { status: 'confirmed' }, limit), confirmed);
      // pending ones may leave while it pages: none is seen twice, the order holds
      expectPaged(w, await pageAll(w, { status: 'pending' }, limit), []);
    }
  });

  it('?witness=nostr&status=confirmed (two indexes and a filter): every such subject once', async () => {
    for (const [seed, perMs, limit] of [[7, 1, 3], [8, 3, 2]] as const) {
      const w = await world({ n: 60, perMs, shards, seed });
      const nostrConfirmed = [...w.steps].filter(([, s]) => s >= 1).map(([k]) => k);
      expectPaged(w, await pageAll(w, { witness: 'nostr', status: 'confirmed' }, limit), nostrConfirmed);
    }
  });
});

describe('list order of keys beyond ASCII', () => {
  it.each([1, 3])('members of one acceptance time page in byte order (as Redis keeps them), %i shard(s): none skipped or repeated', async (shards) => {
    // U+FFFD sorts after U+1F600 in UTF-16 code units, before it in UTF-8 bytes (Redis's order)
    const names = ['\u{1F600}', '\uFFFD', 'z', 'é', '\u{10FFFF}', 'a', '\uE000', '\u{1F601}'];
    const w = await world({ n: names.length, perMs: names.length, shards, seed: 9, keyOf: (i) => `k${names[i]}` });
    for (const limit of [1, 2, 3]) expectPaged(w, await pageAll(w, {}, limit), [...w.positions.keys()]);
  });
});
