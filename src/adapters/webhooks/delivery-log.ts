/**
 * Where webhook deliveries are recorded, per hook, under the daemon's key prefix:
 * `{prefix}:wh:<hook id>:log` (the latest outcomes, newest first, capped) and
 * `{prefix}:wh:<hook id>:totals` (counts and last times). Hook ids hash the URL, so a
 * URL's credentials or query never become part of a key or a report.
 */
import { createHash } from 'node:crypto';
import type { RedisClient as Redis } from '../redis/connection.js';
import { displayUrl } from '../config/display-url.js';

export { displayUrl };

export const LOG_LENGTH = 1000;

export interface DeliveryRecord {
  /** Stream id of the state change. */
  eventId: string;
  key: string;
  type: string;
  outcome: 'delivered' | 'failed';
  attempts: number;
  /** HTTP status of the last attempt; null when it got no answer. */
  httpStatus: number | null;
  error: string | null;
  at: string;
}

export interface HookOverview {
  id: string;
  /** Scheme, host and path only. */
  url: string;
  delivered: number;
  failed: number;
  lastDeliveredAt: string | null;
  lastFailedAt: string | null;
  recent: DeliveryRecord[];
}

export function hookId(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

export class WebhookLog {
  private readonly redis: Redis;
  private readonly base: string;

  /** `base` is the daemon's hash-tagged prefix (`StateKeys.base`). */
  constructor(redis: Redis, base: string) {
    this.redis = redis;
    this.base = base;
  }

  logKey(hook: string): string {
    return `${this.base}:wh:${hook}:log`;
  }

  totalsKey(hook: string): string {
    return `${this.base}:wh:${hook}:totals`;
  }

  async record(hook: string, rec: DeliveryRecord): Promise<void> {
    await this.redis
      .multi()
      .lpush(this.logKey(hook), JSON.stringify(rec))
      .ltrim(this.logKey(hook), 0, LOG_LENGTH - 1)
      .hincrby(this.totalsKey(hook), rec.outcome, 1)
      .hset(this.totalsKey(hook), rec.outcome === 'delivered' ? 'lastDeliveredAt' : 'lastFailedAt', rec.at)
      .exec();
  }

  async recent(hook: string, count = 20): Promise<DeliveryRecord[]> {
    const items = await this.redis.lrange(this.logKey(hook), 0, Math.max(0, count - 1));
    return items.map((t) => JSON.parse(t) as DeliveryRecord);
  }

  async overview(urls: readonly string[], count = 20): Promise<HookOverview[]> {
    return Promise.all(
      urls.map(async (url) => {
        const id = hookId(url);
        const [totals, recent] = await Promise.all([this.redis.hgetall(this.totalsKey(id)), this.recent(id, count)]);
        return {
          id,
          url: displayUrl(url),
          delivered: Number(totals.delivered ?? 0),
          failed: Number(totals.failed ?? 0),
          lastDeliveredAt: totals.lastDeliveredAt ?? null,
          lastFailedAt: totals.lastFailedAt ?? null,
          recent,
        };
      }),
    );
  }
}

/** One hook's overview over K shards' logs (redis.shards): totals summed, the latest times, the most recent deliveries of all. */
export function mergeHookOverviews(perShard: ReadonlyArray<readonly HookOverview[]>, count: number): HookOverview[] {
  if (perShard.length === 1) return [...perShard[0]!];
  const latest = (xs: Array<string | null>): string | null => xs.reduce<string | null>((a, b) => (b !== null && (a === null || b > a) ? b : a), null);
  return perShard[0]!.map((first, i) => {
    const all = perShard.map((list) => list[i]!);
    return {
      id: first.id,
      url: first.url,
      delivered: all.reduce((n, h) => n + h.delivered, 0),
      failed: all.reduce((n, h) => n + h.failed, 0),
      lastDeliveredAt: latest(all.map((h) => h.lastDeliveredAt)),
      lastFailedAt: latest(all.map((h) => h.lastFailedAt)),
      recent: all.flatMap((h) => h.recent).sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, count),
    };
  });
}
