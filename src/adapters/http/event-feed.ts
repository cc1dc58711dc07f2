/**
 * The live feed of state changes: one reader per HTTP server blocks on the events stream
 * (XREAD BLOCK on its own connection) and fans each entry out to every SSE and WebSocket
 * client. A client that names the last stream id it saw gets the entries after it replayed
 * first (XRANGE, in pages it must take before the next is read, at most `maxReplay`), then
 * the live ones, without gaps or repeats.
 */
import { duplicateClient, type RedisClient as Redis } from '../redis/connection.js';
import type { Logger } from 'pino';
import { configDefault } from '../config/schema.js';

/** One entry of the events stream (`data` as written by the state scripts). */
export interface StateEvent {
  type: 'accepted' | 'state' | 'rejected' | 'conflict' | 'retired' | 'proof';
  key: string;
  status: string;
  at: string;
  witness?: string;
  from?: string;
  to?: string;
  previous?: string;
  detail?: string;
  reason?: string;
  digest?: string;
  /** `proof` entries (retention handing a proof to the webhooks): the aer1-anchor-proof-v1. */
  proof?: Record<string, unknown>;
}

/** What SSE and WebSocket clients receive: the event plus its stream id. */
export type FeedMessage = { id: string } & StateEvent;

export type Listener = (message: FeedMessage) => void;

const STREAM_ID = /^(\d{1,20})(?:-(\d{1,20}))?$/;

/** Parses a stream id (`ms-seq`, or `ms` meaning `ms-0`); null when it is not one. */
export function parseStreamId(text: string): [bigint, bigint] | null {
  const m = STREAM_ID.exec(text.trim());
  if (!m) return null;
  return [BigInt(m[1]!), BigInt(m[2] ?? '0')];
}

export function compareStreamIds(a: string, b: string): number {
  const x = parseStreamId(a);
  const y = parseStreamId(b);
  if (!x || !y) throw new Error(`not a stream id: ${x ? b : a}`);
  if (x[0] !== y[0]) return x[0] < y[0] ? -1 : 1;
  if (x[1] !== y[1]) return x[1] < y[1] ? -1 : 1;
  return 0;
}

type RawEntry = [id: string, fields: string[]];

/** Decodes one stream entry; null for an entry without a JSON `data` field. */
export function decodeEntry(entry: RawEntry): FeedMessage | null {
  const [id, fields] = entry;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== 'data') continue;
    try {
      const event = JSON.parse(fields[i + 1]!) as StateEvent;
      if (typeof event !== 'object' || event === null || typeof event.key !== 'string') return null;
      return { id, ...event };
    } catch {
      return null;
    }
  }
  return null;
}

interface Subscriber {
  listener: Listener;
  /** Live messages held back while the subscriber's replay runs. */
  buffer: FeedMessage[] | null;
  /** More live messages arrived during the replay than it may hold: the replay is cut. */
  overflow: boolean;
  closed: boolean;
}

/**
 * Entries read and sent at once, live or replayed: what one client is written in one turn of
 * the event loop stays far below its buffer bound, so a burst drops only clients that do not
 * read. A replay's next page also waits until the client took the last.
 */
const FEED_PAGE = 100;

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
  /** The last stream id the replay covered (the `since` given when nothing was replayed). */
  readonly resumeFrom: string | null;
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

export class EventFeed {
  private readonly redis: Redis;
  private readonly reader: Redis;
  private readonly stream: string;
  private readonly log: Logger;
  private readonly subscribers = new Set<Subscriber>();
  private readonly maxReplay: number;
  private readonly blockMs: number;
  private lastId = '0-0';
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

  /** Starts reading after the stream's current last entry. */
  async start(): Promise<void> {
    const last = (await this.redis.xrevrange(this.stream, '+', '-', 'COUNT', 1)) as RawEntry[];
    this.lastId = last[0]?.[0] ?? '0-0';
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        const res = (await this.reader.xread('COUNT', FEED_PAGE, 'BLOCK', this.blockMs, 'STREAMS', this.stream, this.lastId)) as
          | Array<[string, RawEntry[]]>
          | null;
        for (const [, entries] of res ?? []) {
          for (const entry of entries) {
            this.lastId = entry[0];
            const message = decodeEntry(entry);
            if (message) this.publish(message);
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
      if (!s.buffer) deliver(s, message, this.log);
      else if (s.buffer.length < this.maxReplay) s.buffer.push(message);
      else s.overflow = true;
    }
  }

  /**
   * Adds a listener. With `since` (a stream id), the entries after it are replayed first,
   * a page at a time, each page once `room()` says the client took the last one (false: it
   * is gone; stop). Live entries that arrive meanwhile follow in order, once each. At most
   * `maxReplay` entries are replayed; with more left, the subscription comes back `cut`.
   */
  async subscribe(listener: Listener, since?: string | null, room?: () => Promise<boolean>): Promise<Subscription> {
    const sub: Subscriber = { listener, buffer: since ? [] : null, overflow: false, closed: false };
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
    let replayed = 0;
    let from = since;
    // the client went away or stopped taking what it was sent (it was closed)
    let gone = false;
    try {
      while (replayed < this.maxReplay && !sub.closed) {
        if (replayed > 0 && room && !(await room())) {
          gone = true;
          break;
        }
        if (sub.closed) break;
        const page = (await this.redis.xrange(this.stream, `(${from}`, '+', 'COUNT', Math.min(FEED_PAGE, this.maxReplay - replayed))) as RawEntry[];
        if (page.length === 0) break;
        for (const entry of page) {
          from = entry[0];
          replayed += 1;
          const message = decodeEntry(entry);
          if (message) deliver(sub, message, this.log);
        }
      }
      cursor = from;
      if (!gone && !sub.closed && (sub.overflow || (replayed >= this.maxReplay && (await this.redis.xrange(this.stream, `(${from}`, '+', 'COUNT', 1)).length > 0))) {
        cut = true;
      }
    } finally {
      const held = sub.buffer ?? [];
      sub.buffer = null;
      if (cut || gone) close();
      else for (const m of held) if (compareStreamIds(m.id, from) > 0) deliver(sub, m, this.log);
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
