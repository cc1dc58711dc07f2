/**
 * The state of K shards read as one (redis.shards, docs/architecture.md "Shards"): a subject
 * is read from its own shard (`shardOf(key, K)`), counts are summed, the oldest is the
 * oldest of all, and a list page merges the shards' pages in the order one shard lists in,
 * (acceptance time, key) newest first (list-position.ts), so its cursor means the same in
 * every shard; a subject is in one shard only and each shard's page is one moment of that
 * shard (list-page.lua), so shards read at different moments still give each subject once.
 * With one shard every call is the shard's own, unchanged.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import { groupByShard, shardOf, shardPrefix } from '../../core/shard/shard.js';
import { AnchorStore } from './anchor-store.js';
import type { ListQuery, SubjectIndexes } from './subject-indexes.js';
import type { SubjectRecord } from './subject-hash.js';
import type { SubjectStore } from './subjects.js';
import type { WitnessName } from './keys.js';
import { decodeCursor, encodeCursor, listOrder, type Position } from './list-position.js';

export class ShardedStore {
  /** Shard i's store at index i. */
  readonly shards: readonly AnchorStore[];

  constructor(shards: readonly AnchorStore[]) {
    if (shards.length < 1) throw new RangeError('a sharded store needs at least one shard');
    this.shards = shards;
  }

  /** The K stores of `prefix` on one connection. */
  static open(redis: Redis, prefix: string, shards: number): ShardedStore {
    return new ShardedStore(Array.from({ length: shards }, (_, i) => new AnchorStore(redis, shardPrefix(prefix, i, shards))));
  }

  get count(): number {
    return this.shards.length;
  }

  /** The store that holds (or would hold) the subject `key`. */
  of(key: string): AnchorStore {
    return this.shards[shardOf(key, this.shards.length)]!;
  }

  getRecord(key: string): Promise<SubjectRecord | null> {
    return this.of(key).subjects.getRecord(key);
  }

  /** SubjectStore.getRecords over every shard (`envelopes: false`: none read, as for a list page). */
  async getRecords(keys: readonly string[], opts: { envelopes?: boolean } = {}): Promise<Array<SubjectRecord | null>> {
    if (this.shards.length === 1) return this.shards[0]!.subjects.getRecords(keys, opts);
    const groups = groupByShard(keys, this.shards.length, (k) => k);
    const out: Array<SubjectRecord | null> = keys.map(() => null);
    await Promise.all([...groups].map(async ([s, idx]) => {
      const recs = await this.shards[s]!.subjects.getRecords(idx.map((i) => keys[i]!), opts);
      idx.forEach((i, j) => (out[i] = recs[j] ?? null));
    }));
    return out;
  }

  /**
   * One page over every shard: each shard lists from the same cursor; the merged page takes
   * the first `limit` in order, but never past a shard's own stopping point (a shard that
   * stopped early, its filter rounds spent, has not looked beyond its `next`).
   */
  async list(q: ListQuery): Promise<{ keys: string[]; next: string | null }> {
    if (this.shards.length === 1) return this.shards[0]!.indexes.list(q);
    const pages = await Promise.all(this.shards.map(async (s) => {
      const page = await s.indexes.listPositions(q);
      return { items: page.items, next: page.next ? decodeCursor(page.next) : null };
    }));
    // a shard with more to read has seen up to its next: nothing past the earliest such point is known for all
    let bound: Position | null = null;
    for (const p of pages) if (p.next && (bound === null || listOrder(p.next, bound) < 0)) bound = p.next;
    const all = pages.flatMap((p) => p.items).sort(listOrder);
    const keys: string[] = [];
    let last: Position | null = null;
    for (const item of all) {
      if (keys.length === q.limit || (bound && listOrder(item, bound) > 0)) break;
      keys.push(item[1]);
      last = item;
    }
    if (all.length === keys.length && bound === null) return { keys, next: null };
    return { keys, next: encodeCursor(keys.length === q.limit ? last! : bound!) };
  }

  history(key: string): ReturnType<SubjectStore['history']> {
    return this.of(key).subjects.history(key);
  }

  async countByStatus(): Promise<Record<string, number>> {
    return sumRecords(await Promise.all(this.shards.map((s) => s.indexes.countByStatus())));
  }

  async subjectCount(): Promise<number> {
    return Object.values(await this.countByStatus()).reduce((a, b) => a + b, 0);
  }

  async countByWitness(witnesses: readonly WitnessName[]): Promise<Record<string, Record<string, number>>> {
    const all = await Promise.all(this.shards.map((s) => s.indexes.countByWitness(witnesses)));
    const out: Record<string, Record<string, number>> = {};
    for (const w of witnesses) out[w] = sumRecords(all.map((a) => a[w] ?? {}));
    return out;
  }

  async oldestWithStatus(statuses: readonly string[]): Promise<{ key: string; ms: number } | null> {
    const all = await Promise.all(this.shards.map((s) => s.indexes.oldestWithStatus(statuses)));
    return all.reduce<{ key: string; ms: number } | null>((a, b) => (b && (a === null || b.ms < a.ms) ? b : a), null);
  }

  async oldestUnconfirmed(witness: WitnessName): Promise<number | null> {
    return minOf(await Promise.all(this.shards.map((s) => s.indexes.oldestUnconfirmed(witness))));
  }

  async lastConfirmed(witness: WitnessName): Promise<number | null> {
    const all = (await Promise.all(this.shards.map((s) => s.indexes.lastConfirmed(witness)))).filter((v): v is number => v !== null);
    return all.length === 0 ? null : Math.max(...all);
  }

  async timelineMinutes(first: number, last: number, series: readonly string[]): ReturnType<SubjectIndexes['timelineMinutes']> {
    const all = await Promise.all(this.shards.map((s) => s.indexes.timelineMinutes(first, last, series)));
    if (all.length === 1) return all[0]!;
    return all[0]!.map((m, i) => {
      const confirmed: Record<string, { count: number; sumMs: number; maxMs: number }> = {};
      for (const name of series) {
        const each = all.map((a) => a[i]!.confirmed[name] ?? { count: 0, sumMs: 0, maxMs: 0 });
        confirmed[name] = { count: each.reduce((x, c) => x + c.count, 0), sumMs: each.reduce((x, c) => x + c.sumMs, 0), maxMs: Math.max(...each.map((c) => c.maxMs)) };
      }
      return { minute: m.minute, received: all.reduce((x, a) => x + a[i]!.received, 0), rejected: all.reduce((x, a) => x + a[i]!.rejected, 0), confirmed };
    });
  }
}

function sumRecords(list: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of list) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  return out;
}

function minOf(values: ReadonlyArray<number | null>): number | null {
  const all = values.filter((v): v is number => v !== null);
  return all.length === 0 ? null : Math.min(...all);
}
