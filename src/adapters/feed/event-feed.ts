/**
 * One shard's events stream, read live: one reader per stream blocks on it for the HTTP
 * server and one for the webhook fan-out (XREAD BLOCK on its own connection), expands each
 * entry into its subject events (a packed entry holds a whole call's:
 * src/adapters/state/stream-entries.ts) and hands them to its listeners; `end` and `entries`
 * read the stream for replays through `reads` (the server's is a connection whose commands
 * fail rather than wait: src/adapters/http/request-redis.ts). The live reader waits out an
 * outage, retrying with a bounded backoff, and goes on from the last id it read. Nobody
 * subscribes here: LiveFeed (live-feed.ts) is the one engine that replays and follows one
 * shard or K, for SSE and WebSocket clients and the webhook fan-out.
 */
import { duplicateClient, type RedisClient as Redis } from '../redis/connection.js';
import type { Logger } from 'pino';
import { backoffDelay } from '../../core/retry/backoff.js';
import { Pause } from '../../core/retry/pause.js';
import { compareEventIds, expandEntry, formatEventId, parseEventId, type RawEntry, type StateEvent } from '../state/stream-entries.js';

export type { StateEvent } from '../state/stream-entries.js';

/** What SSE and WebSocket clients receive (and webhooks send, without the id): one subject's event plus its event id (docs/http.md, Event ids). */
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

/** Each message's event as its own JSON, without the id: what a webhook sends. */
const bodies = new WeakMap<FeedMessage, string>();

/** The subject events of one stream entry, in order (none for an entry without a JSON `data` field of ours). */
export function decodeEntry(entry: RawEntry): FeedMessage[] {
  return expandEntry(entry).map(({ id, event, text }) => {
    const message = { id, ...event };
    bodies.set(message, text);
    return message;
  });
}

/** The event without its id: for a one-subject entry the stream's JSON byte for byte, in a packed entry the subject's own event. */
export function eventBody(message: FeedMessage): string {
  let body = bodies.get(message);
  if (body === undefined) {
    const { id: _, ...event } = message;
    body = JSON.stringify(event);
  }
  return body;
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
  /** XREAD BLOCK timeout in ms (default 5000). */
  blockMs?: number;
  /** The connection `end` and `entries` (the replays) read through (default: the one given). */
  reads?: Redis;
}

/** Longest `close()` waits for the live reader's read in flight to settle. */
const CLOSE_WAIT_MS = 2000;

/** The live reader's waits after failed reads: 0.5 s doubling to 10 s. */
const RETRY_INITIAL_MS = 500;
const RETRY_MAX_MS = 10_000;

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

/** The message under another id (a position over K shards); its JSON is the original's with the id swapped. */
export function withId(message: FeedMessage, id: string): FeedMessage {
  const out = { ...message, id };
  const body = bodies.get(message);
  if (body !== undefined) bodies.set(out, body);
  // decodeEntry puts `id` first: the text is `{"id":<id>` and then the rest, made once
  texts.set(out, `{"id":${JSON.stringify(id)}${messageText(message).slice(6 + JSON.stringify(message.id).length)}`);
  return out;
}

export class EventFeed {
  private readonly redis: Redis;
  private readonly reader: Redis;
  /** The reader's connection is down (its error was logged; the next is not until it is back). */
  private readerDown = false;
  private readonly stream: string;
  private readonly log: Logger;
  private readonly listeners = new Set<Listener>();
  private readonly blockMs: number;
  private lastId = '0-0';
  private published = '0-0';
  private closed = false;
  private loop: Promise<void> | null = null;
  /** Ends the live reader's wait before a retry (on close). */
  private readonly pause = new Pause();

  constructor(redis: Redis, stream: string, log: Logger, options: EventFeedOptions = {}) {
    this.redis = options.reads ?? redis;
    this.reader = duplicateClient(redis);
    // ioredis reports every failed reconnect: one line when the connection goes, one when it is back
    this.reader.on('error', (err: Error) => {
      if (this.closed || this.readerDown) return;
      this.readerDown = true;
      log.warn({ stream, cause: err.message }, 'event feed connection lost; live clients get nothing until it is back');
    });
    this.reader.on('ready', () => {
      if (!this.readerDown) return;
      this.readerDown = false;
      log.info({ stream }, 'event feed connection back');
    });
    this.stream = stream;
    this.log = log;
    this.blockMs = options.blockMs ?? 5000;
  }

  /** Live listeners (a LiveFeed subscription holds one per shard). */
  get size(): number {
    return this.listeners.size;
  }

  /**
   * The id of the last event handed to the listeners (or of the last entry read whole): a
   * listener added now gets exactly the events after it.
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
    let failures = 0;
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
        if (failures > 0) this.log.info({ stream: this.stream, failures }, 'event feed reading again');
        failures = 0;
      } catch (err) {
        if (this.closed) break;
        failures += 1;
        const retryInMs = backoffDelay(failures, RETRY_INITIAL_MS, RETRY_MAX_MS);
        // the first failure of a run of them is worth a warning; the retries are not
        const fields = { stream: this.stream, cause: (err as Error).message, failures, retryInMs };
        if (failures === 1) this.log.warn(fields, 'event feed read failed; retrying');
        else this.log.debug(fields, 'event feed read failed again; retrying');
        await this.pause.for(retryInMs);
      }
    }
  }

  /** Adds a live listener (the events after `position`, as read); returns what removes it. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private publish(message: FeedMessage): void {
    for (const listener of this.listeners) {
      try {
        listener(message);
      } catch (err) {
        this.log.warn({ err }, 'event listener failed');
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.reader.disconnect();
    this.pause.end();
    // a cluster client may never settle the XREAD it had in flight to a lost master: shutdown waits a bounded time, the loop ends when it does
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loop, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
  }
}
