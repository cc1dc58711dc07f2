/**
 * The dev relay's event store: an `EventRepository` for @nostr-relay/core kept in memory
 * (optionally replayed from and appended to a JSON-lines file), so that installing the
 * project compiles nothing natively. Its answers follow @nostr-relay/event-repository-sqlite
 * 0.0.40, read from its source: the same duplicate and replacement rules, the same filter
 * semantics (quirks included, e.g. an empty `ids` or `kinds` list is no constraint, more
 * than two `#` tag filters without `ids` match nothing), newest first, at most 100 events
 * per filter unless a limit is given (capped at 1000). Full-text `search` is not offered.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { EventRepository, EventType, EventUtils } from '@nostr-relay/common';
import type { Event, EventRepositoryUpsertResult, Filter } from '@nostr-relay/common';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT_MULTIPLIER = 10;
const HEX64 = /^[a-fA-F0-9]{64}$/;

export interface MemoryEventRepositoryOptions {
  /** JSON-lines file the events are replayed from at `init` and appended to. */
  file?: string;
  /** Events per filter without a `limit` (default 100); a limit is capped at ten times it. */
  defaultLimit?: number;
}

interface StoredEvent {
  event: Event;
  /** The pubkey, or the delegator of a valid NIP-26 delegation (as the sqlite `author` column). */
  author: string;
  /** '' for replaceable kinds, the `d` tag for parameterized replaceable ones, else null. */
  dTag: string | null;
  /** Single-letter tags as `name:value`. */
  tags: Set<string>;
}

/** A line of the events file: a stored event, or a deletion request that was applied. */
type FileLine = { event: Event } | { deletion: Event };

/** Newest first; equal times by id, so the order is total (sqlite leaves ties unordered). */
function newestFirst(a: StoredEvent, b: StoredEvent): number {
  return b.event.created_at - a.event.created_at || idOrder(a, b);
}

function idOrder(a: StoredEvent, b: StoredEvent): number {
  return a.event.id < b.event.id ? -1 : a.event.id > b.event.id ? 1 : 0;
}

/** A fresh object in NIP-01 field order, as the sqlite repository's `toEvent` builds it. */
function copyOf(e: Event): Event {
  return {
    id: e.id,
    pubkey: e.pubkey,
    created_at: e.created_at,
    kind: e.kind,
    tags: e.tags.map((t) => [...t]),
    content: e.content,
    sig: e.sig,
  };
}

function genericTagsOf(event: Event): Set<string> {
  const tags = new Set<string>();
  for (const [name, value] of event.tags) if (name !== undefined && /^[a-zA-Z]$/.test(name)) tags.add(`${name}:${value}`);
  return tags;
}

type TagFilters = Record<string, unknown>;

/** The `#x` filters as `x:value` lists, values also under `&x` removed, empty ones dropped, shortest first. */
function orTagFilters(filter: Filter): string[][] {
  const f = filter as TagFilters;
  return Object.keys(f)
    .filter((key) => key.startsWith('#') && Array.isArray(f[key]) && (f[key] as unknown[]).length > 0)
    .map((key) => {
      const name = key[1];
      const and = f[`&${name}`];
      const values = (f[key] as string[]).filter((v) => !(Array.isArray(and) && and.includes(v)));
      return values.map((v) => `${name}:${v}`);
    })
    .filter((tags) => tags.length > 0)
    .sort((a, b) => a.length - b.length);
}

/** The `&x` filters (NIP-ND): every value must be present. */
function andTagFilters(filter: Filter): Array<{ name: string; values: string[] }> {
  const f = filter as TagFilters;
  return Object.keys(f)
    .filter((key) => key.startsWith('&') && Array.isArray(f[key]) && (f[key] as unknown[]).length > 0)
    .map((key) => ({ name: key.slice(1), values: f[key] as string[] }));
}

export class MemoryEventRepository extends EventRepository {
  private readonly byId = new Map<string, StoredEvent>();
  private readonly byTag = new Map<string, Set<string>>();
  /** `author kind d` → id of the replaceable event that holds that address. */
  private readonly byAddress = new Map<string, string>();
  /** Every event, newest first. */
  private readonly ordered: StoredEvent[] = [];
  private readonly file: string | undefined;
  private readonly defaultLimit: number;
  private readonly maxLimit: number;
  private loaded = false;

  constructor(options: MemoryEventRepositoryOptions = {}) {
    super();
    this.file = options.file;
    this.defaultLimit = options.defaultLimit ?? DEFAULT_LIMIT;
    this.maxLimit = this.defaultLimit * MAX_LIMIT_MULTIPLIER;
  }

  /** Replays the events file, when there is one. A torn last line (a crash mid-write) is ignored. */
  async init(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    if (this.file === undefined || !existsSync(this.file)) return;
    const lines = readFileSync(this.file, 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i]!;
      if (text === '') continue;
      let line: FileLine;
      try {
        line = JSON.parse(text) as FileLine;
      } catch (err) {
        if (i === lines.length - 1) break;
        throw new Error(`${this.file}:${i + 1}: not a JSON line (${(err as Error).message})`);
      }
      if ('event' in line) this.store(line.event);
      else this.delete(line.deletion);
    }
  }

  isSearchSupported(): boolean {
    return false;
  }

  upsert(event: Event): EventRepositoryUpsertResult {
    const stored = this.store(event);
    if (stored) this.append({ event: copyOf(event) });
    return { isDuplicate: !stored };
  }

  find(filter: Filter): Event[] {
    const limit = filter.limit === undefined ? this.defaultLimit : Math.min(filter.limit, this.maxLimit);
    if (limit === 0) return [];
    const orTags = orTagFilters(filter);
    const ids = filter.ids?.length ? filter.ids : undefined;
    // the sqlite repository refuses this as "too complex"; with ids it uses the first two
    if (ids === undefined && orTags.length > 2) return [];
    const [first, second] = orTags;
    const andTags = andTagFilters(filter);
    const authors = filter.authors?.length ? new Set(filter.authors) : undefined;
    const kinds = filter.kinds?.length ? new Set(filter.kinds) : undefined;

    let candidates: StoredEvent[];
    if (ids !== undefined) candidates = this.lookup(new Set(ids));
    else if (first !== undefined) candidates = this.lookup(new Set(first.flatMap((tag) => [...(this.byTag.get(tag) ?? [])])));
    else candidates = this.ordered;

    const out: Event[] = [];
    for (const s of candidates) {
      if (limit > 0 && out.length >= limit) break;
      const e = s.event;
      if (first !== undefined && !first.some((tag) => s.tags.has(tag))) continue;
      if (second !== undefined && !second.some((tag) => s.tags.has(tag))) continue;
      // `COUNT(DISTINCT tag) = values.length`: a repeated value can never be matched
      if (!andTags.every(({ name, values }) => new Set(values.filter((v) => s.tags.has(`${name}:${v}`))).size === values.length)) continue;
      if (filter.since && e.created_at < filter.since) continue;
      if (filter.until && e.created_at > filter.until) continue;
      if (authors !== undefined && !authors.has(s.author)) continue;
      if (kinds !== undefined && !kinds.has(e.kind)) continue;
      out.push(copyOf(e));
    }
    return out;
  }

  override async deleteByDeletionRequest(event: Event): Promise<void> {
    if (this.delete(event) > 0) this.append({ deletion: copyOf(event) });
  }

  async destroy(): Promise<void> {
    // nothing to release: the file is appended synchronously, line by line
  }

  /**
   * Loses the events with these ids from storage, as a relay pruning its database does: no
   * deletion request, nothing told to anyone (an events file still holds them). Returns how
   * many were held.
   */
  lose(ids: Iterable<string>): number {
    let n = 0;
    for (const id of ids) {
      const s = this.byId.get(id);
      if (!s) continue;
      this.remove(s);
      n++;
    }
    return n;
  }

  /** True when an event with this id is stored. */
  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Number of events stored. */
  count(): number {
    return this.byId.size;
  }

  /** Every stored event, oldest first, then by id. */
  all(): Event[] {
    return [...this.ordered].sort((a, b) => a.event.created_at - b.event.created_at || idOrder(a, b)).map((s) => copyOf(s.event));
  }

  /** Stores the event unless it is a duplicate (same id, or an older or equal replaceable). */
  private store(event: Event): boolean {
    if (this.byId.has(event.id)) return false;
    const author = EventUtils.getAuthor(event);
    const dTag = EventUtils.extractDTagValue(event);
    if (dTag !== null) {
      const address = `${author} ${event.kind} ${dTag}`;
      const held = this.byId.get(this.byAddress.get(address) ?? '');
      if (held) {
        // replaced only by a newer event, or an equally old one with a smaller id
        const newer = held.event.created_at < event.created_at || (held.event.created_at === event.created_at && held.event.id > event.id);
        if (!newer) return false;
        this.remove(held);
      }
      this.byAddress.set(address, event.id);
    }
    const stored: StoredEvent = { event: copyOf(event), author, dTag, tags: genericTagsOf(event) };
    this.byId.set(event.id, stored);
    for (const tag of stored.tags) {
      let set = this.byTag.get(tag);
      if (!set) this.byTag.set(tag, (set = new Set()));
      set.add(event.id);
    }
    this.ordered.splice(this.indexOf(stored), 0, stored);
    return true;
  }

  /** Applies a kind-5 request: the author's events named by `e` ids or `a` coordinates. */
  private delete(request: Event): number {
    const author = EventUtils.getAuthor(request);
    const ids = new Set<string>();
    const addresses = new Set<string>();
    for (const [name, value] of request.tags) {
      if (typeof value !== 'string') continue;
      if (name === 'e' && HEX64.test(value)) ids.add(value);
      else if (name === 'a') {
        const [kindText, pubkey, d] = value.split(':');
        const kind = parseInt(kindText ?? '', 10);
        if (Number.isNaN(kind) || pubkey === undefined || !HEX64.test(pubkey) || pubkey !== author || d === undefined) continue;
        const type = EventUtils.getType(kind);
        if (type !== EventType.REPLACEABLE && type !== EventType.PARAMETERIZED_REPLACEABLE) continue;
        addresses.add(`${kind} ${d}`);
      }
    }
    const doomed = [...this.byId.values()].filter(
      (s) => s.author === author && (ids.has(s.event.id) || (s.dTag !== null && addresses.has(`${s.event.kind} ${s.dTag}`))),
    );
    for (const s of doomed) this.remove(s);
    return doomed.length;
  }

  private remove(s: StoredEvent): void {
    this.byId.delete(s.event.id);
    for (const tag of s.tags) {
      const set = this.byTag.get(tag);
      set?.delete(s.event.id);
      if (set?.size === 0) this.byTag.delete(tag);
    }
    if (s.dTag !== null) {
      const address = `${s.author} ${s.event.kind} ${s.dTag}`;
      if (this.byAddress.get(address) === s.event.id) this.byAddress.delete(address);
    }
    const i = this.indexOf(s);
    if (this.ordered[i] === s) this.ordered.splice(i, 1);
  }

  /** Where `s` is, or would go, in `ordered` (binary search). */
  private indexOf(s: StoredEvent): number {
    let lo = 0;
    let hi = this.ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (newestFirst(this.ordered[mid]!, s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The stored events with these ids, newest first. */
  private lookup(ids: Set<string>): StoredEvent[] {
    const found: StoredEvent[] = [];
    for (const id of ids) {
      const s = this.byId.get(id);
      if (s) found.push(s);
    }
    return found.sort(newestFirst);
  }

  private append(line: FileLine): void {
    if (this.file !== undefined) appendFileSync(this.file, `${JSON.stringify(line)}\n`);
  }
}
