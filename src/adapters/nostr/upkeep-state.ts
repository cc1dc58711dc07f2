/**
 * What relay upkeep keeps in Redis, under the shard's hash tag (docs/evidence.md):
 *
 * - `:nostr:kept`: every anchor event handed to the relays, by its id's 32 bytes (not its 64 hex
 *   characters: half the member), in the order it was first handed (a sequence number from
 *   `:nostr:kept:seq` as its score), so a pass walks the whole history
 *   from a cursor, a bounded slice at a time, and a new event never moves the ones before it.
 *   An event retention forgot (its `:ev:<id>` gone) leaves it when a pass meets it.
 * - `:nostr:upkeep`: the pass's cursor (`cursor`, the last sequence number checked; 0 starts
 *   a new round), per relay what the round found (`r:<url>`, JSON `RelayUpkeepRecord`), and
 *   per relay the events sent again that it accepted, ever (`republished:<url>`, a counter
 *   the relays' drains add to).
 *
 * Passes run one at a time per shard (PeriodicPass), so the cursor and records need no script.
 */
import type { AnchorStore } from '../state/anchor-store.js';
import type { RelayReportRecord } from '../state/events.js';
import { decodeReport } from '../state/relay-reports.js';

/** What upkeep found on one relay: the round under way and the last one finished. */
export interface RelayUpkeepRecord {
  /** Events checked on this relay in the round under way. */
  checked: number;
  /** Of those, not held by the relay (handed back to its outbox). */
  missing: number;
  /** Of those, not known: the relay could not be asked or did not reach EOSE in time. */
  unknown: number;
  /** Oldest `created_at` (s) of the events the relay held on its own this round; null: none yet. */
  oldestHeld: number | null;
  /** The last finished round's numbers, null before the first round ends. */
  last: { checked: number; missing: number; unknown: number; oldestHeld: number | null; at: string } | null;
  /** ISO time of the last pass that asked this relay, and what went wrong in it (null: nothing). */
  at: string;
  error: string | null;
}

/** One event of a pass as stored: its JSON (null: forgotten) and, per relay, its report and the copy that relay was sent. */
export interface KeptEvent {
  id: string;
  json: string | null;
  /** Its event hash is gone (retention forgot it). */
  gone: boolean;
  relays: Map<string, { report: RelayReportRecord | undefined; copy: string | null }>;
}

/** An event id (64 hex) as `:nostr:kept` holds it: its 32 bytes. */
function member(id: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`relay upkeep: event id ${JSON.stringify(id.slice(0, 80))} is not 64 lowercase hex characters`);
  return Buffer.from(id, 'hex');
}

export class UpkeepState {
  constructor(private readonly store: AnchorStore) {}

  get keptKey(): string {
    return `${this.store.keys.base}:nostr:kept`;
  }

  private get seqKey(): string {
    return `${this.store.keys.base}:nostr:kept:seq`;
  }

  private get stateKey(): string {
    return `${this.store.keys.base}:nostr:upkeep`;
  }

  /** Notes events handed to the relays; one already noted keeps its place. */
  async note(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const last = await this.store.redis.incrby(this.seqKey, ids.length);
    const first = last - ids.length + 1;
    await this.store.redis.zadd(this.keptKey, 'NX', ...ids.flatMap((id, i) => [first + i, member(id)]));
  }

  /** The next `most` events after the cursor; `end` when they include the round's newest. */
  async next(most: number): Promise<{ ids: string[]; cursor: number; end: boolean }> {
    const from = Number((await this.store.redis.hget(this.stateKey, 'cursor')) ?? '0');
    // one more than asked: whether any is left after these
    const rows = await this.store.redis.zrangebyscoreBuffer(this.keptKey, `(${from}`, '+inf', 'WITHSCORES', 'LIMIT', 0, most + 1);
    const ids: string[] = [];
    let cursor = from;
    for (let i = 0; i < rows.length && ids.length < most; i += 2) {
      ids.push(rows[i]!.toString('hex'));
      cursor = Number(rows[i + 1]!.toString());
    }
    return { ids, cursor, end: rows.length <= 2 * most };
  }

  /** For each event: its JSON (a subject's own event rebuilt) and, per relay, its report and copy (EventStore.readEvents). */
  async read(ids: readonly string[], relays: readonly string[]): Promise<KeptEvent[]> {
    const numbers = await this.store.registry.relayNumbers(relays);
    const fields = relays.flatMap((u, j) => [`r:${numbers[j]}`, `copy:${u}`]);
    const rows = await this.store.events.readEvents(ids, ids.map(() => fields));
    return ids.map((id, i) => {
      const { event, values } = rows[i]!;
      const out = new Map<string, { report: RelayReportRecord | undefined; copy: string | null }>();
      relays.forEach((u, j) => {
        const report = values[2 * j] ?? null;
        out.set(u, { report: report ? decodeReport(u, report) : undefined, copy: values[1 + 2 * j] ?? null });
      });
      // an event that cannot be rebuilt is not checked (its relays' drains record why), nor dropped
      return { id, json: 'json' in event ? event.json : null, gone: 'json' in event && event.json === null, relays: out };
    });
  }

  /** Takes events retention forgot out of the walk. */
  async drop(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.store.redis.zrem(this.keptKey, ...ids.map(member));
  }

  /** Every relay's record (a relay never asked has none). */
  async records(relays: readonly string[]): Promise<Map<string, RelayUpkeepRecord | null>> {
    if (relays.length === 0) return new Map();
    const values = await this.store.redis.hmget(this.stateKey, ...relays.map((u) => `r:${u}`));
    return new Map(relays.map((u, i) => [u, values[i] ? (JSON.parse(values[i]!) as RelayUpkeepRecord) : null]));
  }

  /** Counts events sent again that `url` accepted (its drain, after recording them). */
  async countRepublished(url: string, n: number): Promise<void> {
    if (n > 0) await this.store.redis.hincrby(this.stateKey, `republished:${url}`, n);
  }

  /** Events sent again that each relay accepted, ever. */
  async republished(relays: readonly string[]): Promise<Map<string, number>> {
    if (relays.length === 0) return new Map();
    const values = await this.store.redis.hmget(this.stateKey, ...relays.map((u) => `republished:${u}`));
    return new Map(relays.map((u, i) => [u, Number(values[i] ?? 0)]));
  }

  /** Ends a pass: the relays' records and the cursor (0 after the round's newest: the next pass starts over). */
  async finish(records: ReadonlyMap<string, RelayUpkeepRecord>, cursor: number): Promise<void> {
    const fields = [...records].flatMap(([u, r]) => [`r:${u}`, JSON.stringify(r)]);
    await this.store.redis.hset(this.stateKey, 'cursor', String(cursor), ...fields);
  }

  /** Events noted (the whole history a round walks). */
  async size(): Promise<number> {
    return this.store.redis.zcard(this.keptKey);
  }
}

/** One relay's upkeep over every shard: sums of the rounds, the oldest held of all, the latest pass. */
export interface RelayUpkeepSummary {
  url: string;
  checked: number;
  missing: number;
  unknown: number;
  /** Events sent again that the relay accepted, ever. */
  republished: number;
  /** How far back the relay holds events: this round's oldest held once found, else the last round's (s; null: not known). */
  oldestHeld: number | null;
  lastRound: { checked: number; missing: number; unknown: number; at: string } | null;
  at: string | null;
  error: string | null;
}

/** Every relay's upkeep summed over the shards' records. */
export async function readRelayUpkeep(stores: readonly AnchorStore[], relays: readonly string[]): Promise<RelayUpkeepSummary[]> {
  const all = await Promise.all(stores.map((s) => new UpkeepState(s).records(relays)));
  const counts = await Promise.all(stores.map((s) => new UpkeepState(s).republished(relays)));
  return relays.map((url) => {
    const republished = counts.reduce((n, c) => n + (c.get(url) ?? 0), 0);
    const out: RelayUpkeepSummary = { url, checked: 0, missing: 0, unknown: 0, republished, oldestHeld: null, lastRound: null, at: null, error: null };
    for (const records of all) {
      const r = records.get(url);
      if (!r) continue;
      out.checked += r.checked;
      out.missing += r.missing;
      out.unknown += r.unknown;
      const oldest = r.oldestHeld ?? r.last?.oldestHeld ?? null;
      if (oldest !== null && (out.oldestHeld === null || oldest < out.oldestHeld)) out.oldestHeld = oldest;
      if (r.last) {
        const l = out.lastRound ?? { checked: 0, missing: 0, unknown: 0, at: r.last.at };
        out.lastRound = { checked: l.checked + r.last.checked, missing: l.missing + r.last.missing, unknown: l.unknown + r.last.unknown, at: r.last.at > l.at ? r.last.at : l.at };
      }
      if (out.at === null || r.at > out.at) out.at = r.at;
      out.error ??= r.error;
    }
    return out;
  });
}
