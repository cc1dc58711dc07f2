/**
 * What relay upkeep keeps in Redis, under the shard's hash tag (docs/evidence.md):
 *
 * - `:nostr:kept`: the walk, every anchor event handed to the relays in the order it was first
 *   handed over, packed: a hash whose field `<c>` is chunk c, the ids of positions
 *   c × KEPT_CHUNK_IDS … as 32 bytes each, back to back (127 ids: 4,064 bytes, so the string
 *   and its header fill a 4 KiB allocation), `t` the positions used so far and `n` the events
 *   in it. About 33 bytes an event. outbox-add.lua (RelayOutbox.add, with `walk`) puts an event
 *   at the end the first time it is handed to the relays, in the same call that records the
 *   relays on it (`to` in its hash): an event handed over again (a retried job, the
 *   reconciler) keeps its one place, and while upkeep is on none gets a `to` without going
 *   into the walk. A pass walks the positions from a cursor, a bounded slice at a time, and a
 *   new event never moves the ones before it. An event retention forgot (its `:ev:<id>` gone) is cleared from
 *   its slot (32 zero bytes) when a pass meets it, and a chunk left with none goes
 *   (kept-drop.lua).
 * - `:nostr:kept:c`: the numbers of the chunks the walk holds (a sorted set), so a pass steps
 *   over the chunks that went without looking at them.
 * - `:nostr:upkeep`: the pass's cursor (`cursor`, the position after the last event checked;
 *   0 starts a new round), per relay what the round found (`r:<url>`, JSON
 *   `RelayUpkeepRecord`), and per relay the events sent again that it accepted, ever
 *   (`republished:<url>`, a counter the relays' drains add to).
 *
 * Passes run one at a time per shard (PeriodicPass), so the cursor and records need no script;
 * noting (any worker, outbox-add.lua) and dropping (the pass, kept-drop.lua) are scripts.
 */
import type { AnchorStore } from '../state/anchor-store.js';
import type { RelayReportRecord } from '../state/events.js';
import { decodeReport } from '../state/relay-reports.js';
import { DIR, defineScripts, load, runScript } from '../state/scripts.js';

/** Relay upkeep's walk: clears the slots of events retention forgot (outbox-add.lua, an EventStore script, appends). */
export const KEPT_DROP = load(DIR, 'kept-drop');

/** Event ids per chunk of the walk: 127 × 32 = 4,064 bytes, with the string's header within 4,096. */
export const KEPT_CHUNK_IDS = 127;
/** Most chunks one read of a pass asks for (128: 512 KiB of ids), and most reads one `next` makes. */
const NEXT_SPAN_MAX = 128;
const NEXT_READS_MAX = 32;

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

/** A slice of the walk: the events and their positions, the cursor after them, and whether they include the newest. */
export interface KeptSlice {
  ids: string[];
  /** `positions[i]`: where `ids[i]` is in the walk (what drop takes). */
  positions: number[];
  cursor: number;
  end: boolean;
}

/** Where outbox-add.lua notes events handed over for the first time (RelayOutbox): the walk's two keys and its ids per chunk. */
export interface KeptWalk {
  kept: string;
  chunks: string;
  perChunk: number;
}

const ZERO_ID = Buffer.alloc(32);

/** An event id (64 hex) as the walk holds it: its 32 bytes (all zero marks a cleared slot, so it is refused). */
function member(id: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`relay upkeep: event id ${JSON.stringify(id.slice(0, 80))} is not 64 lowercase hex characters`);
  const bytes = Buffer.from(id, 'hex');
  if (bytes.equals(ZERO_ID)) throw new Error('relay upkeep: event id 0000…0000 (all zero) cannot be noted: it marks a cleared slot of the walk');
  return bytes;
}

export class UpkeepState {
  /** Ids per chunk: KEPT_CHUNK_IDS, the same for the life of a prefix (a test of chunk boundaries passes a small one on a prefix of its own). */
  private readonly perChunk: number;

  constructor(
    private readonly store: AnchorStore,
    opts: { perChunk?: number } = {},
  ) {
    this.perChunk = opts.perChunk ?? KEPT_CHUNK_IDS;
    if (!Number.isSafeInteger(this.perChunk) || this.perChunk < 1) throw new Error(`relay upkeep: perChunk ${this.perChunk} is not a positive integer`);
    defineScripts(store.redis, [KEPT_DROP]);
  }

  get keptKey(): string {
    return this.store.keys.nostrKept;
  }

  private get chunksKey(): string {
    return this.store.keys.nostrKeptChunks;
  }

  private get stateKey(): string {
    return `${this.store.keys.base}:nostr:upkeep`;
  }

  /** The walk, for the relay outboxes that note events in it (RelayOutbox). */
  get walk(): KeptWalk {
    return { kept: this.keptKey, chunks: this.chunksKey, perChunk: this.perChunk };
  }

  /**
   * The next `most` events after the cursor, oldest first; `end` when they include the
   * round's newest. Reads the chunks the walk holds (`:nostr:kept:c`) from the cursor's, a few
   * at a time, twice as many each read (NEXT_SPAN_MAX, NEXT_READS_MAX): a pass whose chunks are
   * mostly cleared slots for that long ends short of `most`, with the cursor after what it
   * read, and the next pass goes on from there. Never throws on what it reads: a chunk listed
   * but not held reads as cleared.
   */
  async next(most: number): Promise<KeptSlice> {
    const redis = this.store.redis;
    const per = this.perChunk;
    const from = Number((await redis.hget(this.stateKey, 'cursor')) ?? '0');
    const ids: string[] = [];
    const positions: number[] = [];
    // every position before `pos` has been read
    let pos = from;
    let more = false;
    let last = false;
    let span = Math.min(NEXT_SPAN_MAX, Math.ceil((most + 1) / per) + 1);
    for (let read = 0; read < NEXT_READS_MAX && !more && !last; read++) {
      const chunks = await redis.zrangebyscore(this.chunksKey, Math.floor(pos / per), '+inf', 'LIMIT', 0, span);
      last = chunks.length < span;
      if (chunks.length === 0) break;
      const values = await redis.hmgetBuffer(this.keptKey, ...chunks);
      for (let j = 0; j < chunks.length && !more; j++) {
        const base = Number(chunks[j]) * per;
        const value = values[j];
        // a chunk listed but not held reads as all cleared
        const slots = value ? Math.floor(value.length / 32) : per;
        for (let s = Math.max(0, pos - base); s < slots; s++) {
          const at = s * 32;
          if (!value || value.subarray(at, at + 32).equals(ZERO_ID)) continue;
          // one more than asked: whether any is left after these
          if (ids.length === most) {
            more = true;
            break;
          }
          ids.push(value.toString('hex', at, at + 32));
          positions.push(base + s);
        }
        if (!more) pos = Math.max(pos, base + slots);
      }
      span = Math.min(NEXT_SPAN_MAX, span * 2);
    }
    const cursor = more && positions.length > 0 ? positions.at(-1)! + 1 : pos;
    return { ids, positions, cursor, end: !more && last };
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

  /** Takes events retention forgot out of the walk, each at the position `next` gave it. Returns how many were taken out. */
  async drop(slots: ReadonlyArray<{ id: string; position: number }>): Promise<number> {
    if (slots.length === 0) return 0;
    const args = slots.flatMap((s) => {
      if (!Number.isSafeInteger(s.position) || s.position < 0) throw new Error(`relay upkeep: position ${s.position} of event ${s.id.slice(0, 64)} is not a whole number ≥ 0`);
      return [s.position, member(s.id)];
    });
    return Number(await runScript(this.store.redis, KEPT_DROP, [this.keptKey, this.chunksKey], [this.perChunk, ...args]));
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
    return Number((await this.store.redis.hget(this.keptKey, 'n')) ?? '0');
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
