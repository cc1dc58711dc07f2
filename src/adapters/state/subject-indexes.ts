/**
 * SubjectIndexes: the subjects as the scripts index and count them: list pages over the
 * status and witness indexes (list-page.lua, one moment of them per read), counts per status
 * and per witness, the timeline's minutes, the oldest subjects, and the reconciler's and
 * retention's scans. Reads only.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys, WitnessName } from './keys.js';
import { decodeCursor, encodeCursor, listOrder, type Position } from './list-position.js';
import { DIR, defineScripts, load, runScript } from './scripts.js';
import { WITNESS_STATUSES } from '../../core/proof/format.js';
import { SUBJECT_STATUSES, hashValue } from './subject-hash.js';

/** One page of the subject list from one or more indexes, in one read (SubjectIndexes.list). */
export const LIST_PAGE = load(DIR, 'list-page');

/** Index reads one list page may make while a filter keeps too few subjects (bounds a request). */
const LIST_ROUNDS = 20;
/** Subjects a filtered list page reads from the indexes per round. */
const LIST_FILTER_READ = 200;


export interface ListQuery {
  status?: string | undefined;
  witness?: WitnessName | undefined;
  /** Opaque cursor from a previous page. */
  cursor?: string | undefined;
  limit: number;
}


export class SubjectIndexes {
  constructor(private readonly redis: Redis, private readonly keys: StateKeys) {
    defineScripts(redis, [LIST_PAGE]);
  }

  /** The oldest subject (by acceptance) whose overall status is one of `statuses`, or null. */
  async oldestWithStatus(statuses: readonly string[]): Promise<{ key: string; ms: number } | null> {
    let best: { key: string; ms: number } | null = null;
    for (const status of statuses) {
      const [key, score] = await this.redis.zrange(this.keys.byStatus(status), 0, 0, 'WITHSCORES');
      if (key !== undefined && score !== undefined && (best === null || Number(score) < best.ms)) best = { key, ms: Number(score) };
    }
    return best;
  }

  /** Retention: up to `limit` confirmed subjects accepted before `beforeMs`, oldest first, from the `offset`-th. */
  async confirmedBefore(beforeMs: number, limit: number, offset = 0): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.byStatus('confirmed'), '-inf', `(${beforeMs}`, 'LIMIT', offset, limit);
  }

  /**
   * Newest first: (acceptance time, key) descending, keys in byte order (list-position.ts).
   * The cursor is the position of the last subject looked at. A status alone reads
   * idx:st:<status>; no filter merges every status index; a witness reads its index
   * (pending, partial, failed) or, for confirmed, idx:st:confirmed and :partial filtered by the
   * witness's status. Each read of the indexes is one list-page.lua call, so a subject moving
   * between them is in one of them for that read: paging to the end gives no subject twice and
   * every subject listed by the query for the whole paging (docs/http.md, "Paging"). A filtered
   * page looks at a bounded number of subjects, so it may come back short with a `next` to go
   * on from.
   */
  async list(q: ListQuery): Promise<{ keys: string[]; next: string | null }> {
    const page = await this.listPositions(q);
    return { keys: page.items.map(([, key]) => key), next: page.next };
  }

  /** `list` with each key's position (acceptance time ms, key): what ShardedStore merges shards by. */
  async listPositions(q: ListQuery): Promise<{ items: Position[]; next: string | null }> {
    const k = this.keys;
    const status = q.witness ? (q.status ?? 'pending') : q.status;
    let indexes: string[];
    let filter: ((keys: string[]) => Promise<boolean[]>) | null = null;
    if (q.witness && status === 'confirmed') {
      const w = q.witness;
      indexes = [k.byStatus('confirmed'), k.byStatus('partial')];
      filter = async (keys) => {
        const pipe = this.redis.pipeline();
        for (const key of keys) pipe.hget(k.subject(key), `w:${w}`);
        const res = (await pipe.exec()) ?? [];
        return res.map(([err, v]) => {
          if (err) throw err;
          return v === 'confirmed';
        });
      };
    } else if (q.witness) indexes = [k.byWitness(q.witness, status!)];
    else if (status) indexes = [k.byStatus(status)];
    else indexes = SUBJECT_STATUSES.map((st) => k.byStatus(st));
    const after: Position | null = q.cursor ? decodeCursor(q.cursor) : null;
    const out: Position[] = [];
    let last: Position | null = after;
    for (let round = 0; round < LIST_ROUNDS; round++) {
      const page = await this.newestAfter(indexes, last, filter ? LIST_FILTER_READ : q.limit - out.length);
      const keep = filter ? await filter(page.items.map(([, key]) => key)) : page.items.map(() => true);
      for (let i = 0; i < page.items.length; i++) {
        if (out.length === q.limit) return { items: out, next: encodeCursor(last!) };
        last = page.items[i]!;
        if (keep[i]) out.push(last);
      }
      if (!page.more) return { items: out, next: null };
      if (out.length === q.limit) return { items: out, next: encodeCursor(last!) };
    }
    return { items: out, next: last && last !== after ? encodeCursor(last) : null };
  }

  /**
   * Up to `n` members of the indexes after `after` in list order, merged, from one
   * list-page.lua call (one moment of the state); `more`: members past the last one returned
   * are left.
   */
  private async newestAfter(indexes: readonly string[], after: Position | null, n: number): Promise<{ items: Position[]; more: boolean }> {
    const flat = (await runScript(this.redis, LIST_PAGE, [...indexes], [n, after ? String(after[0]) : '', after ? after[1] : ''])) as Array<number | string[]>;
    const all: Position[] = [];
    let left = 0;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      left += Number(flat[i]);
      const page = flat[i + 1] as string[];
      for (let j = 0; j + 1 < page.length; j += 2) all.push([Number(page[j + 1]), page[j]!]);
    }
    all.sort(listOrder);
    // a key in two indexes at one position (never written so: a hand-edited Redis) is listed once
    const items: Position[] = [];
    for (const item of all) {
      if (items.length === n) break;
      if (items.length === 0 || items[items.length - 1]![1] !== item[1]) items.push(item);
    }
    return { items, more: left > items.length };
  }

  /** Subjects per overall status, from the counts the scripts keep (one round trip). */
  async countByStatus(): Promise<Record<string, number>> {
    const values = await this.redis.hmget(this.keys.counts, ...SUBJECT_STATUSES.map((s) => `st:${s}`));
    return Object.fromEntries(SUBJECT_STATUSES.map((s, i) => [s, Math.max(0, Number(values[i] ?? 0))]));
  }

  /** Every subject the state holds, rejected ones included. */
  async subjectCount(): Promise<number> {
    return Object.values(await this.countByStatus()).reduce((a, b) => a + b, 0);
  }

  async countByWitness(witnesses: readonly WitnessName[]): Promise<Record<string, Record<string, number>>> {
    const fields = witnesses.flatMap((w) => WITNESS_STATUSES.map((s) => `w:${w}:${s}`));
    const values = fields.length > 0 ? await this.redis.hmget(this.keys.counts, ...fields) : [];
    const out: Record<string, Record<string, number>> = {};
    let i = 0;
    for (const w of witnesses) {
      out[w] = {};
      for (const s of WITNESS_STATUSES) out[w]![s] = Math.max(0, Number(values[i++] ?? 0));
    }
    return out;
  }

  /** Acceptance time (ms) of the oldest subject whose witness is still pending or partial. */
  async oldestUnconfirmed(witness: WitnessName): Promise<number | null> {
    let oldest: number | null = null;
    for (const s of ['pending', 'partial']) {
      const r = await this.redis.zrange(this.keys.byWitness(witness, s), 0, 0, 'WITHSCORES');
      if (r[1] !== undefined) oldest = oldest === null ? Number(r[1]) : Math.min(oldest, Number(r[1]));
    }
    return oldest;
  }

  /**
   * The timeline's minutes `first`..`last` (epoch minutes), oldest first: subjects accepted in
   * each (`received`: every status index, a subject being in one; `rejected`) and, per series
   * (`subject` or a witness), the confirmations counted in it with their summed and longest
   * time to confirm (set-witness.lua's `tl:<minute>` hashes). One round trip.
   */
  async timelineMinutes(first: number, last: number, series: readonly string[]): Promise<Array<{ minute: number; received: number; rejected: number; confirmed: Record<string, { count: number; sumMs: number; maxMs: number }> }>> {
    const k = this.keys;
    const pipe = this.redis.pipeline();
    for (let m = first; m <= last; m++) {
      const from = m * 60_000;
      for (const st of SUBJECT_STATUSES) pipe.zcount(k.byStatus(st), from, `(${from + 60_000}`);
      pipe.hgetall(k.timeline(m));
    }
    const res = (await pipe.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    const per = SUBJECT_STATUSES.length + 1;
    const out = [];
    for (let i = 0, m = first; m <= last; m++, i += per) {
      const h = (res[i + per - 1]?.[1] ?? {}) as Record<string, string>;
      const confirmed: Record<string, { count: number; sumMs: number; maxMs: number }> = {};
      for (const s of series) confirmed[s] = { count: Number(h[`n:${s}`] ?? 0), sumMs: Number(h[`t:${s}`] ?? 0), maxMs: Number(h[`m:${s}`] ?? 0) };
      const received = SUBJECT_STATUSES.reduce((n, _st, j) => n + Number(res[i + j]?.[1] ?? 0), 0);
      const rejected = Number(res[i + SUBJECT_STATUSES.indexOf('rejected')]?.[1] ?? 0);
      out.push({ minute: m, received, rejected, confirmed });
    }
    return out;
  }

  async lastConfirmed(witness: WitnessName): Promise<number | null> {
    const v = await this.redis.hget(this.keys.meta, `last_confirmed:${witness}`);
    return v === null ? null : Number(v);
  }

  /**
   * One page of the subjects whose `witness` is in `status`, oldest first, accepted before
   * `acceptedBeforeMs`, each with its batch of that witness and its own Nostr event (null:
   * none). Resumes after `cursor` (from the previous page; null: from the start); `next` is
   * null once the index is walked.
   */
  async scanWitness(witness: WitnessName, status: string, cursor: string | null, limit: number, acceptedBeforeMs: number): Promise<{ items: Array<{ key: string; batchId: string | null; eventId: string | null }>; next: string | null }> {
    const fields = [`${witness}:batch`, 'nostr:event'];
    let min = '-inf';
    let after: string | null = null;
    if (cursor) {
      const i = cursor.indexOf(':');
      min = cursor.slice(0, i);
      after = cursor.slice(i + 1);
    }
    // Members with one score come in key order, so (score, key) is a total order to resume from.
    const raw = await this.redis.zrangebyscore(this.keys.byWitness(witness, status), min, `(${acceptedBeforeMs}`, 'WITHSCORES', 'LIMIT', 0, limit + 1);
    const page: Array<[string, string]> = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const [k, score] = [raw[i]!, raw[i + 1]!];
      if (after !== null && score === min && k <= after) continue;
      page.push([k, score]);
    }
    let next: string | null = null;
    if (raw.length / 2 > limit) {
      const last = page.length > 0 ? page[Math.min(page.length, limit) - 1]! : null;
      // A page filled by one score's keys already seen: step past that score.
      next = last ? `${last[1]}:${last[0]}` : `(${min}:`;
    }
    const kept = page.slice(0, limit);
    const pipe = this.redis.pipeline();
    for (const [k] of kept) pipe.hmgetBuffer(this.keys.subject(k), ...fields);
    const res = kept.length > 0 ? ((await pipe.exec()) ?? []) : [];
    return {
      items: kept.map(([key], i) => {
        const [err, values] = res[i] ?? [null, []];
        if (err) throw err;
        const [batchId, eventId] = values as Array<Buffer | null>;
        return { key, batchId: batchId ? batchId.toString() : null, eventId: eventId ? hashValue(eventId) : null };
      }),
      next,
    };
  }
}
