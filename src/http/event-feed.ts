/**
 * The live feed of state changes: one reader per HTTP server blocks on the events stream
 * (XREAD BLOCK on its own connection) and fans each entry out to every SSE and WebSocket
 * client. A client that names the last stream id it saw gets the entries after it replayed
 * first (XRANGE), then the live ones, without gaps or repeats.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** One entry of the events stream (`data` as written by the state scripts). */
export interface StateEvent {
  type: 'accepted' | 'state' | 'rejected' | 'conflict';
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
}

/** What SSE and WebSocket clients receive: the event plus its stream id. */
export type FeedMessage = { id: string } & StateEvent;

export type Listener = (message: FeedMessage) => void;

export interface Subscription {
  close(): void;
}

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
  closed: boolean;
}

export interface EventFeedOptions {
  /** Most entries replayed for one `Last-Event-ID` (default 10 000). */
  maxReplay?: number;
  /** XREAD BLOCK timeout in ms (default 5000). */
  blockMs?: number;
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
    this.reader = redis.duplicate();
    this.reader.on('error', (err: Error) => {
      if (!this.closed) log.warn({ err: err.message }, 'event feed connection error');
    });
    this.stream = stream;
    this.log = log;
    this.maxReplay = options.maxReplay ?? 10_000;
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
        const res = (await this.reader.xread('COUNT', 1000, 'BLOCK', this.blockMs, 'STREAMS', this.stream, this.lastId)) as
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
        this.log.warn({ err: (err as Error).message }, 'event feed read failed; retrying');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private publish(message: FeedMessage): void {
    for (const s of this.subscribers) {
      if (s.buffer) s.buffer.push(message);
      else deliver(s, message, this.log);
    }
  }

  /**
   * Adds a listener. With `since` (a stream id), the entries after it are replayed first
   * (at most `maxReplay`); live entries that arrive meanwhile follow in order, once each.
   */
  async subscribe(listener: Listener, since?: string | null): Promise<Subscription> {
    const sub: Subscriber = { listener, buffer: since ? [] : null, closed: false };
    this.subscribers.add(sub);
    const subscription = {
      close: () => {
        sub.closed = true;
        this.subscribers.delete(sub);
      },
    };
    if (!since) return subscription;
    let cursor = since;
    let replayed = 0;
    try {
      while (replayed < this.maxReplay && !sub.closed) {
        const page = (await this.redis.xrange(this.stream, `(${cursor}`, '+', 'COUNT', Math.min(1000, this.maxReplay - replayed))) as RawEntry[];
        if (page.length === 0) break;
        for (const entry of page) {
          cursor = entry[0];
          replayed += 1;
          const message = decodeEntry(entry);
          if (message) deliver(sub, message, this.log);
        }
      }
    } finally {
      const held = sub.buffer ?? [];
      sub.buffer = null;
      for (const m of held) if (compareStreamIds(m.id, cursor) > 0) deliver(sub, m, this.log);
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
    log.warn({ err: (err as Error).message }, 'event listener failed');
  }
}
