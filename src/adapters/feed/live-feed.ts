/**
 * The live feed, the one engine behind `/v1/events` (SSE), `/v1/ws` (WebSocket) and the
 * webhook fan-out (src/adapters/webhooks/fan-out.ts), for one shard or K: it replays what a
 * client missed and then follows the shards' readers (EventFeed, event-feed.ts, one per
 * events stream). A message's id is a *position*: every
 * shard's event id, shard 0's first, comma-separated (`1700000000000-3.17,1700000000002-0,0-0`),
 * the last event of that shard the client was sent (or where it started). Over one shard (K = 1,
 * or `?shard=i`) a position is that shard's event id itself. Resuming from it replays each shard
 * after its own id (from inside a packed entry too), so a client loses and repeats nothing in any
 * shard, however the shards were interleaved. A replay takes the streams in (entry ms, shard)
 * order, a page at a time as the client takes them, at most `maxReplay` events in all; live
 * events go out as each shard's reader gets them (in order within a shard).
 */
import type { Logger } from 'pino';
import { configDefault } from '../config/schema.js';
import { compareEventIds, formatEventId, parseEventId, type RawEntry } from '../state/stream-entries.js';
import { FEED_PAGE, decodeEntry, withId, type EventFeed, type FeedMessage, type Listener } from './event-feed.js';

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

/** What SSE and WebSocket clients and the webhook fan-out follow: a LiveFeed over one shard's reader or K. */
export interface Feed {
  subscribe(listener: Listener, since?: string | null, room?: () => Promise<boolean>): Promise<Subscription>;
}

/** A position's shard ids (canonical), or what is wrong with the text. */
export function parseFeedPosition(text: string, shards: number): string[] | { problem: string } {
  // bounded: never more than K + 1 parts, each parsed by a bounded pattern
  const parts = text.trim().split(',', shards + 1);
  if (parts.length !== shards) return { problem: parts.length > shards ? `it has more than ${shards} parts` : `it has ${parts.length} part${parts.length === 1 ? '' : 's'}, not ${shards}` };
  const ids: string[] = [];
  for (const [i, part] of parts.entries()) {
    const id = parseEventId(part);
    if (!id) return { problem: `shard ${i}'s part ${JSON.stringify(part.slice(0, 64))} is not an event id` };
    ids.push(formatEventId(id));
  }
  return ids;
}

/** A shard's replay: entries read and not sent yet, the head entry's events left, where the next read starts. */
interface ShardReplay {
  feed: EventFeed;
  entries: RawEntry[];
  events: FeedMessage[];
  /** The ms of the head entry's id: the merge order. */
  ms: bigint;
  from: string;
  /** Resuming inside a packed entry: its id and the event id given (events up to it are skipped). */
  inside: [entry: string, after: string] | null;
  /** The stream had nothing after `from`: what comes later arrives live. */
  done: boolean;
}

export class LiveFeed implements Feed {
  private readonly feeds: readonly EventFeed[];
  private readonly log: Logger;
  private readonly maxReplay: number;

  constructor(feeds: readonly EventFeed[], log: Logger, options: { maxReplay?: number } = {}) {
    this.feeds = feeds;
    this.log = log;
    this.maxReplay = options.maxReplay ?? configDefault('http.maxReplay');
  }

  /**
   * Adds a listener to every shard's reader. With `since` (a position), each shard's events
   * after its id are replayed first, merged, a page at a time as `room()` allows (false: the
   * client is gone; stop), at most `maxReplay` in all; live events held meanwhile follow, once
   * each. With more left, the subscription comes back `cut`, its `resumeFrom` the position
   * reached (the last message's id). A read that fails closes the subscription and throws.
   */
  async subscribe(listener: Listener, since: string | null = null, room?: () => Promise<boolean>): Promise<Subscription> {
    let start: string[];
    if (since === null) start = this.feeds.map((f) => f.position);
    else {
      const parsed = parseFeedPosition(since, this.feeds.length);
      if (!Array.isArray(parsed)) throw new Error(`not a feed position: ${parsed.problem}`);
      start = parsed;
    }
    const position = [...start];
    let holding = since !== null;
    const held: Array<[shard: number, message: FeedMessage]> = [];
    let overflow = false;
    let closed = false;
    let cut = false;
    // per shard: a live event may repeat what the replay sent until one passes the position
    const caught = this.feeds.map(() => false);
    const send = (shard: number, message: FeedMessage): void => {
      if (closed) return;
      position[shard] = message.id;
      try {
        listener(withId(message, position.join(',')));
      } catch (err) {
        this.log.warn({ err }, 'event listener failed');
      }
    };
    const onLive = (shard: number, message: FeedMessage): void => {
      if (closed) return;
      if (holding) {
        if (held.length < this.maxReplay) held.push([shard, message]);
        else overflow = true;
        return;
      }
      if (!caught[shard]) {
        if (compareEventIds(message.id, position[shard]!) <= 0) return;
        caught[shard] = true;
      }
      send(shard, message);
    };
    // added in the turn the positions were read: nothing falls between
    const unlisten = this.feeds.map((f, i) => f.listen((m) => onLive(i, m)));
    const close = (): void => {
      closed = true;
      for (const u of unlisten) u();
    };
    const subscription: Subscription = {
      close,
      get cut() {
        return cut;
      },
      get resumeFrom() {
        return position.join(',');
      },
    };
    if (since === null) return subscription;

    let gone = false;
    let finished = false;
    try {
      const shards = await Promise.all(this.feeds.map((feed, i) => this.replayFrom(feed, position, i)));
      let replayed = 0;
      // events sent since the client last had room: a page of them at most before it is asked again
      let unasked = 0;
      while (!closed) {
        let best = -1;
        for (const [i, shard] of shards.entries()) {
          if (await nextEvent(shard) && (best < 0 || shard.ms < shards[best]!.ms)) best = i;
        }
        if (best < 0) break;
        if (replayed >= this.maxReplay || overflow) {
          cut = true;
          break;
        }
        if (unasked >= FEED_PAGE) {
          unasked = 0;
          if (room && !(await room())) gone = true;
          if (gone || closed) break;
        }
        replayed += 1;
        unasked += 1;
        send(best, shards[best]!.events.shift()!);
      }
      if (overflow && !closed && !gone) cut = true;
      finished = true;
    } finally {
      if (!finished || cut || gone) close();
      else {
        holding = false;
        // what arrived live during the replay, in the replay's order, after what it sent
        const ms = (id: string): bigint => parseEventId(id)![0];
        held.sort((a, b) => (ms(a[1].id) < ms(b[1].id) ? -1 : ms(a[1].id) > ms(b[1].id) ? 1 : a[0] - b[0]));
        for (const [shard, message] of held) onLive(shard, message);
        held.length = 0;
      }
    }
    return subscription;
  }

  /** Where shard i's replay starts: after `position[i]`, or after the stream's end if that is past it. */
  private async replayFrom(feed: EventFeed, position: string[], i: number): Promise<ShardReplay> {
    const end = await feed.end();
    // an id past the stream's end (another shard's, a Redis since flushed, a clock ahead) resumes
    // from the end: kept as it is, it would hold back every live event until ids pass it
    if (compareEventIds(position[i]!, end) > 0) position[i] = end;
    const id = parseEventId(position[i]!)!;
    const entry = `${id[0]}-${id[1]}`;
    return { feed, entries: [], events: [], ms: 0n, from: id[2] === null ? `(${entry}` : entry, inside: id[2] === null ? null : [entry, position[i]!], done: false };
  }
}

/** Reads the shard's next entries until an event is at its head; false when its stream has none left. */
async function nextEvent(shard: ShardReplay): Promise<boolean> {
  while (shard.events.length === 0 && !shard.done) {
    if (shard.entries.length === 0) {
      shard.entries = await shard.feed.entries(shard.from, FEED_PAGE);
      if (shard.entries.length === 0) {
        shard.done = true;
        break;
      }
    }
    const entry = shard.entries.shift()!;
    shard.from = `(${entry[0]}`;
    shard.ms = parseEventId(entry[0])![0];
    const after = shard.inside !== null && shard.inside[0] === entry[0] ? shard.inside[1] : null;
    shard.inside = null;
    // (a sub-event id naming an entry of one event: that event was not taken apart, so it counts as seen)
    shard.events = decodeEntry(entry).filter((m) => after === null || !(m.id === entry[0] || compareEventIds(m.id, after) <= 0));
  }
  return shard.events.length > 0;
}
