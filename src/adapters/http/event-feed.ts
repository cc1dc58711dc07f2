/**
 * The live feed of state changes: one reader per HTTP server blocks on the events stream
 * (XREAD BLOCK on its own connection), expands each entry into its subject events (a packed
 * entry holds a whole call's: src/adapters/state/stream-entries.ts) and fans them out to
 * every SSE and WebSocket client. A client that names the last event id it saw (an entry's,
 * or one inside a packed entry) gets the events after it replayed first (XRANGE, in pages it
 * must take before the next is read, at most `maxReplay` subject events), then the live
 * ones, without gaps or repeats.
 */
import { duplicateClient, type RedisClient as Redis } from '../redis/connection.js';
import type { Logger } from 'pino';
import { configDefault } from '../config/schema.js';
import { compareEventIds, expandEntry, formatEventId, parseEventId, type RawEntry, type StateEvent } from '../state/stream-entries.js';

export type { StateEvent } from '../state/stream-entries.js';

/** What SSE and WebSocket clients receive: one subject's event plus its event id (docs/http.md, Event ids). */
export type FeedMessage = { id: string } & StateEvent;

export type Listener = (message: FeedMessage) => void;

/**
 * Parses an event id: `ms-seq` (a stream entry, all of it), `ms` (meaning `ms-0`) or
 * `ms-seq.i` (subject event i of a packed entry); null when it is none of them.
 */
export function parseStreamId(text: string): [bigint, bigint] | [bigint, bigint, number] | null {
  const id = parseEventId(text);
  if (!id) return null;
  return id[2] === null ? [id[0], id[1]] : [id[0], id[1], id[2]];
}

/** The id in its canonical form (`ms-seq` or `ms-seq.i`); null when it is not one. */
export function normalizeStreamId(text: string): string | null {
  const id = parseEventId(text);
  return id ? formatEventId(id) : null;
}

/** Event ids in stream order (a plain entry id after every subject event of its entry). */
export const compareStreamIds = compareEventIds;

/** The subject events of one stream entry, in order (none for an entry without a JSON `data` field of ours). */
export function decodeEntry(entry: RawEntry): FeedMessage[] {
  return expandEntry(entry).map(({ id, event }) => ({ id, ...event }));
}

interface Subscriber {
  listener: Listener;
  /** Live messages held back while the subscriber's replay runs. */
  buffer: FeedMessage[] | null;
  /** More live messages arrived during the replay than it may hold: the replay is cut. */
  overflow: boolean;
  closed: boolean;
  /** After a replay: the last event id it sent (live events up to it were sent already). */
  after: string | null;
}

/**
 * Subject events sent at once, live or replayed (and stream entries read at once): what one
 * client is written in one turn of the event loop stays far below its buffer bound, so a
 * burst drops only clients that do not read. A packed entry holds up to a few hundred: the
 * live feed yields to the event loop after each page of events, and a replay waits until the
 * client took the last page before it sends the next.
 */
export const FEED_PAGE = 100;

export interface EventFeedOptions {
  /** Most entries replayed to one subscriber (default: `http.maxReplay`'s). */
  maxReplay?: number;
  /** XREAD BLOCK timeout in ms (default 5000). */
  blockMs?: number;
}

/** A subscriber's handle. */
export interface Subscription {
  close(): void;
  /**
   * Set when the replay stopped at `maxReplay` with entries left after it: the client has
   * everything up to `resumeFrom` and should reconnect from there; nothing live follows.
   */
  readonly cut: boolean;
  /** The last event id the replay covered (the `since` given when nothing was replayed). */
  readonly resumeFrom: string | null;
}

/** What SSE and WebSocket clients follow: one shard's feed (`EventFeed`), or every shard's as one (`MergedFeed`). */
export interface Feed {
  subscribe(listener: Listener, since?: string | null, room?: () => Promise<boolean>): Promise<Subscription>;
}

/** JSON text of a message, made once however many clients it goes to. */
const texts = new WeakMap<FeedMessage, string>();
export function messageText(message: FeedMessage): string {
  let text = texts.get(message);
  if (text === undefined) {
    text = JSON.stringify(message);
    texts.set(message, text);
  }
  return text;
}

/** The message under another id (a merged feed's position); its JSON is the original's with the id swapped. */
export function withId(message: FeedMessage, id: string): FeedMessage {
  const out = { ...message, id };
  // decodeEntry puts `id` first: the text is `{"id":<id>` and then the rest, made once
  texts.set(out, `{"id":${JSON.stringify(id)}${messageText(message).slice(6 + JSON.stringify(message.id).length)}`);
  return out;
}

export class EventFeed implements Feed {
  private readonly redis: Redis;
  private readonly reader: Redis;
  private readonly stream: string;
  private readonly log: Logger;
  private readonly subscribers = new Set<Subscriber>();
  private readonly maxReplay: number;
  private readonly blockMs: number;
  private lastId = '0-0';
  private published = '0-0';
  private closed = false;
  private loop: Promise<void> | null = null;

  constructor(redis: Redis, stream: string, log: Logger, options: EventFeedOptions = {}) {
    this.redis = redis;
    this.reader = duplicateClient(redis);
    this.reader.on('error', (err: Error) => {
      if (!this.closed) log.warn({ err }, 'event feed connection error');
    });
    this.stream = stream;
    this.log = log;
    this.maxReplay = options.maxReplay ?? configDefault('http.maxReplay');
    this.blockMs = options.blockMs ?? 5000;
  }

  get size(): number {
    return this.subscribers.size;
  }

  /**
   * The id of the last event handed to the listeners (or of the last entry read whole): a
   * listener added now without `since` gets exactly the events after it.
   */
  get position(): string {
    return this.published;
  }

  /** The stream's last entry id ('0-0' when it is empty). */
  async end(): Promise<string> {
    const [tail] = (await this.redis.xrevrange(this.stream, '+', '-', 'COUNT', 1)) as RawEntry[];
    return tail?.[0] ?? '0-0';
  }

  /** Up to `count` entries from entry id `from` (`(from`: after it), in stream order. */
  async entries(from: string, count: number): Promise<RawEntry[]> {
    return (await this.redis.xrange(this.stream, from, '+', 'COUNT', count)) as RawEntry[];
  }

  /** Starts reading after the stream's current last entry. */
  async start(): Promise<void> {
    this.lastId = await this.end();
    this.published = this.lastId;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let published = 0;
    while (!this.closed) {
      try {
        const res = (await this.reader.xread('COUNT', FEED_PAGE, 'BLOCK', this.blockMs, 'STREAMS', this.stream, this.lastId)) as
          | Array<[string, RawEntry[]]>
          | null;
        for (const [, entries] of res ?? []) {
          for (const entry of entries) {
            this.lastId = entry[0];
            for (const message of decodeEntry(entry)) {
              if (++published % FEED_PAGE === 0) await new Promise((r) => setImmediate(r));
              this.publish(message);
              this.published = message.id;
            }
            this.published = entry[0];
          }
        }
      } catch (err) {
        if (this.closed) break;
        this.log.warn({ err }, 'event feed read failed; retrying');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private publish(message: FeedMessage): void {
    for (const s of this.subscribers) {
      if (!s.buffer) {
        // the live reader may still be behind what a finished replay sent: those go once
        if (s.after !== null) {
          if (compareEventIds(message.id, s.after) <= 0) continue;
          s.after = null;
        }
        deliver(s, message, this.log);
      }
      else if (s.buffer.length < this.maxReplay) s.buffer.push(message);
      else s.overflow = true;
    }
  }

  /**
   * Adds a listener. With `since` (an event id: `ms-seq`, or `ms-seq.i` inside a packed
   * entry), the subject events after it are replayed first, a page of entries at a time, each
   * page once `room()` says the client took the last one (false: it is gone; stop). Live
   * events that arrive meanwhile follow in order, once each. At most `maxReplay` subject
   * events are replayed; with more left (in the same entry or after), the subscription comes
   * back `cut`, its `resumeFrom` the last event id sent.
   */
  async subscribe(listener: Listener, since?: string | null, room?: () => Promise<boolean>): Promise<Subscription> {
    const sub: Subscriber = { listener, buffer: since ? [] : null, overflow: false, closed: false, after: null };
    this.subscribers.add(sub);
    let cut = false;
    let cursor = since ?? null;
    const close = (): void => {
      sub.closed = true;
      this.subscribers.delete(sub);
    };
    const subscription: Subscription = {
      close,
      get cut() {
        return cut;
      },
      get resumeFrom() {
        return cursor;
      },
    };
    if (!since) return subscription;
    // a subscribe that fails (a bad id, Redis refusing a read) leaves no subscriber behind
    if (!parseEventId(since)) {
      close();
      throw new Error(`not an event id: ${since}`);
    }
    // An id past the stream's end (another shard's, a Redis since flushed, a clock ahead) resumes
    // from the end: kept as it is, it would hold back every live event until ids pass it.
    const end = await this.end().catch((err: unknown) => {
      close();
      throw err;
    });
    if (compareEventIds(since, end) > 0) {
      since = end;
      cursor = end;
    }
    const start = parseEventId(since)!;
    // subject events replayed; `from`: the last entry replayed whole (the next page starts after it)
    let replayed = 0;
    let from = `${start[0]}-${start[1]}`;
    // the client went away or stopped taking what it was sent (it was closed)
    let gone = false;
    // the replay stopped inside an entry: its other events are left for the next connection
    let cutInside = false;
    // events sent since the client last had room: a page of them at most before it is asked again
    let unasked = 0;
    let finished = false;
    /** Replays an entry's events after `after` (all with null); false once it stops inside (maxReplay, the client gone or closed). */
    const replay = async (entry: RawEntry, after: string | null): Promise<boolean> => {
      for (const message of decodeEntry(entry)) {
        // (a sub-event id naming an entry of one event: that event was not taken apart, so it counts as seen)
        if (after !== null && (message.id === entry[0] || compareEventIds(message.id, after) <= 0)) continue;
        if (replayed >= this.maxReplay) {
          cutInside = true;
          return false;
        }
        if (unasked >= FEED_PAGE) {
          unasked = 0;
          if (room && !(await room())) gone = true;
          if (gone || sub.closed) return false;
        }
        replayed += 1;
        unasked += 1;
        cursor = message.id;
        deliver(sub, message, this.log);
      }
      cursor = entry[0];
      return true;
    };
    try {
      // resuming inside a packed entry: the rest of it first
      let stopped = false;
      if (start[2] !== null) {
        const [entry] = (await this.redis.xrange(this.stream, from, from, 'COUNT', 1)) as RawEntry[];
        if (entry) stopped = !(await replay(entry, since));
        else cursor = from;
      }
      while (!stopped && replayed < this.maxReplay && !sub.closed) {
        const page = (await this.redis.xrange(this.stream, `(${from}`, '+', 'COUNT', Math.min(FEED_PAGE, this.maxReplay - replayed))) as RawEntry[];
        if (page.length === 0) break;
        for (const entry of page) {
          if (!(await replay(entry, null))) {
            stopped = true;
            break;
          }
          from = entry[0];
        }
      }
      if (!gone && !sub.closed && (cutInside || sub.overflow || (replayed >= this.maxReplay && (await this.redis.xrange(this.stream, `(${from}`, '+', 'COUNT', 1)).length > 0))) {
        cut = true;
      }
      finished = true;
    } finally {
      const held = sub.buffer ?? [];
      sub.buffer = null;
      if (cut || gone || !finished) close();
      else {
        const last = cursor ?? from;
        for (const m of held) if (compareEventIds(m.id, last) > 0) deliver(sub, m, this.log);
        sub.after = held.length > 0 && compareEventIds(held[held.length - 1]!.id, last) > 0 ? held[held.length - 1]!.id : last;
      }
    }
    return subscription;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    this.reader.disconnect();
    await this.loop;
  }
}

function deliver(sub: Subscriber, message: FeedMessage, log: Logger): void {
  if (sub.closed) return;
  try {
    sub.listener(message);
  } catch (err) {
    log.warn({ err }, 'event listener failed');
  }
}
