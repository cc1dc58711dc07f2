/**
 * The webhook fan-out of one shard: the live feed (LiveFeed over the shard's EventFeed, the
 * engine SSE and WebSocket clients follow, so a change has the same event id everywhere)
 * from a durable cursor, each page of changes added to every hook's queue and only then the
 * cursor moved past it.
 *
 * - **Cursor** (`<base>:wh:cursor`): the event id of the last change every hook's queue has.
 *   A fan-out resumes after it (from inside a packed entry too), so a daemon that stops or
 *   dies anywhere loses nothing: what it added past the cursor is added again, which BullMQ
 *   ignores for a job id it still holds (finished jobs are kept `DEDUPE_KEEP_S`, deliverer.ts).
 *   Set at the stream's end by the shard's first start: a new installation sends what comes after.
 * - **Lease** (`<base>:wh:lease`): one daemon fans a shard out at a time; the others wait
 *   and take over once the lease ends (`leaseMs` after its holder stopped renewing it, at
 *   once after a clean stop). The cursor is written only while the lease is held, in the
 *   script that renews it, so a daemon that lost the lease cannot move it.
 * - **Pace**: a replay goes a page at a time, each page added before the next is read; live
 *   changes are added as they come. A fan-out that falls more than `MAX_PENDING` changes
 *   behind live goes back to replaying from its cursor, so its memory stays bounded.
 */
import type { Logger } from 'pino';
import type { RedisClient as Redis } from '../redis/connection.js';
import { Lease } from '../redis/lease.js';
import { backoffDelay } from '../../core/retry/backoff.js';
import { Pause } from '../../core/retry/pause.js';
import { EventFeed, eventBody, type FeedMessage } from '../feed/event-feed.js';
import { LiveFeed } from '../feed/live-feed.js';

/** One change as a hook's queue holds it: its event id and its JSON (docs/http.md, Webhooks). */
export interface DeliveryJob {
  eventId: string;
  body: string;
}

/** The fan-out's keys under a shard's hash-tagged base (beside the hooks' `:wh:<hook id>:…`). */
export function fanOutKeys(base: string): { cursor: string; lease: string } {
  return { cursor: `${base}:wh:cursor`, lease: `${base}:wh:lease` };
}

/** Live changes held before the fan-out adds them; past it, it replays from its cursor instead. */
export const MAX_PENDING = 5000;
/** Changes one replay sends before it starts again from the cursor (the feed's replay bound). */
const REPLAY_MAX = 10_000;

export interface FanOutOptions {
  /** Connection for the stream reads, the cursor and the lease (the live reader duplicates it). */
  redis: Redis;
  /** The events stream key (`StateKeys.events`). */
  stream: string;
  /** The shard's hash-tagged key prefix (`StateKeys.base`). */
  base: string;
  log: Logger;
  /** Adds changes to every hook's queue, in order, idempotently by event id. */
  add: (changes: readonly DeliveryJob[]) => Promise<void>;
  /** Put before every event id (`<shard>/` with redis.shards K > 1). */
  eventIdPrefix: string;
  /** How long a lease lasts unrenewed: a dead daemon's fan-out is taken over after this (default 30 000 ms). */
  leaseMs?: number;
  /** XREAD BLOCK timeout of the live reader (default 5000 ms). */
  blockMs?: number;
  /** Live changes held before it replays from its cursor instead (default MAX_PENDING). */
  maxPending?: number;
}

export class FanOut {
  private readonly keys: { cursor: string; lease: string };
  private readonly lease: Lease;
  private readonly events: EventFeed;
  private readonly feed: LiveFeed;
  private stopped = false;
  private loop: Promise<void> | null = null;
  /** The loop's wait: ended early by a stop, and by a live change while it follows. */
  private readonly pause = new Pause();

  constructor(private readonly o: FanOutOptions) {
    this.keys = fanOutKeys(o.base);
    this.lease = new Lease(o.redis, this.keys.lease, o.leaseMs ?? 30_000);
    this.events = new EventFeed(o.redis, o.stream, o.log, { blockMs: o.blockMs ?? 5000 });
    this.feed = new LiveFeed([this.events], o.log, { maxReplay: REPLAY_MAX });
  }

  /** Starts following; every change after the return is fanned out (the first start of a shard sets the cursor at the stream's end). */
  async start(): Promise<void> {
    await this.events.start();
    await this.firstCursor();
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let errors = 0;
    while (!this.stopped) {
      try {
        if (await this.lease.hold()) await this.follow();
        else await this.pause.for(this.renewEveryMs);
        errors = 0;
      } catch (err) {
        if (this.stopped) break;
        errors += 1;
        const delay = backoffDelay(errors, 500, 10_000);
        this.o.log.warn({ err, retryInMs: delay }, 'webhook fan-out failed; retrying from its cursor');
        await this.pause.for(delay);
      }
    }
  }

  private get renewEveryMs(): number {
    return Math.max(10, Math.floor(this.lease.ms / 3));
  }

  /**
   * Holding the lease: replays from the cursor and follows live, adding each page and moving
   * the cursor past it. Returns when the lease is lost, the replay bound or `MAX_PENDING` is
   * reached (the caller starts again from the cursor) or the fan-out stops; throws when Redis does.
   */
  private async follow(): Promise<void> {
    let cursor = await this.o.redis.get(this.keys.cursor);
    if (cursor === null) {
      await this.firstCursor();
      cursor = await this.o.redis.get(this.keys.cursor);
      if (cursor === null) return;
    }
    const pending: FeedMessage[] = [];
    // past MAX_PENDING the rest is left to the next replay: nothing after a change left out is added
    let overflow = false;
    let held = true;
    const flush = async (): Promise<boolean> => {
      if (pending.length === 0) return held;
      const page = pending.splice(0);
      await this.o.add(page.map((m) => ({ eventId: this.o.eventIdPrefix + m.id, body: eventBody(m) })));
      held = await this.lease.setWhileHeld(this.keys.cursor, page.at(-1)!.id);
      return held;
    };
    const sub = await this.feed.subscribe(
      (m) => {
        if (overflow || pending.length >= (this.o.maxPending ?? MAX_PENDING)) overflow = true;
        else pending.push(m);
        this.pause.end();
      },
      cursor,
      async () => !this.stopped && (await flush()),
    );
    try {
      if (!held || this.stopped) return;
      if (sub.cut) {
        await flush();
        return;
      }
      let renewed = Date.now();
      while (!this.stopped && !overflow) {
        if (pending.length === 0) await this.pause.for(this.renewEveryMs);
        if (!(await flush())) return;
        if (Date.now() - renewed >= this.renewEveryMs) {
          if (!(await this.lease.hold())) return;
          renewed = Date.now();
        }
      }
      if (!this.stopped) await flush();
    } finally {
      sub.close();
    }
  }

  /** A shard's first fan-out starts at the stream's end: the cursor is set there unless it is set already. */
  private async firstCursor(): Promise<void> {
    await this.o.redis.set(this.keys.cursor, await this.events.end(), 'NX');
  }

  /** Stops following and lets the lease go, so another daemon takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.pause.end();
    await this.loop;
    await this.lease.release().catch(() => undefined);
    await this.events.close();
  }
}
