/**
 * ChangeStream: the stream of subject state changes (`{prefix}:events`, with its tally
 * `:events:n`) that the subject scripts write as they change a subject (stream-lib.lua's
 * add_events) and the live feed, webhooks and retention read (stream-entries.ts expands its
 * entries); and the reconciler's saved positions in the indexes it walks (`:reconcile`).
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys } from './keys.js';

/** Subject events the stream is kept near (its tally trims it; stream-lib.lua). */
export const EVENTS_MAXLEN = 100_000;

export class ChangeStream {
  constructor(private readonly redis: Redis, private readonly keys: StateKeys) {}

  /** The stream's key (XREAD / XRANGE it; entries as stream-entries.ts reads them). */
  get stream(): string {
    return this.keys.events;
  }

  /** The stream's tally (stream-lib.lua), handed with the stream to the scripts that add to it. */
  get tally(): string {
    return this.keys.eventTally;
  }

  /** The reconciler's saved position in one index (null: start). */
  async reconcileCursor(name: string): Promise<string | null> {
    return this.redis.hget(this.keys.reconcile, name);
  }

  async setReconcileCursor(name: string, cursor: string | null): Promise<void> {
    if (cursor === null) await this.redis.hdel(this.keys.reconcile, name);
    else await this.redis.hset(this.keys.reconcile, name, cursor);
  }
}
