/**
 * RelayOutbox: the events each relay still has to take, in Redis, one sorted set per relay
 * (`{prefix}:nostr:ob:<relay hash>`, event id scored by when it is due). The event itself is
 * stored once (`ev:<id>`, events.ts); an outbox holds only its id. Daemons take due events in groups
 * (outbox-take.lua) under a lease they renew while working, so a daemon that dies hands its
 * group back when the lease ends; an event leaves the outbox only once its relay answered
 * for good. The relay's rate (events a minute) and its `rate-limited:` pause live beside it,
 * so they hold across every daemon on the same Redis.
 */
import { createHash } from 'node:crypto';
import { OUTBOX_ADD, OUTBOX_TAKE, SET_RELAYS, type EventStore, type RelayReportRecord, type StoredEvent } from '../state/events.js';
import { decodeReport, encodeReport } from '../state/relay-reports.js';
import { runScript } from '../state/scripts.js';
import type { KeptWalk } from './upkeep-state.js';

/** Events handed to one outbox-add.lua call: bounds how long one call holds Redis. */
const ADD_CHUNK = 200;

/** Relay URL → its tag in key names, hashed once per URL (every outbox call names its keys). */
const tags = new Map<string, string>();

function relayTag(url: string): string {
  let tag = tags.get(url);
  if (tag === undefined) {
    tag = createHash('sha256').update(url).digest('hex').slice(0, 12);
    // a daemon has a handful of relays; a bound all the same
    if (tags.size >= 1024) tags.clear();
    tags.set(url, tag);
  }
  return tag;
}

/** What set-relays.lua returned for one event: its owner, this relay's report before, and every report after. */
export interface RecordedReports {
  subject: string | null;
  batch: string | null;
  previous: RelayReportRecord | undefined;
  reports: RelayReportRecord[];
  /** The event hash is gone (retention forgot it): nothing to move. */
  gone: boolean;
}

/** A group taken from one relay's outbox, or how long until one may be due (null: the outbox is empty). */
export type Taken = { ids: string[] } | { waitMs: number | null };

export class RelayOutbox {
  /** `walk`: relay upkeep's walk (UpkeepState.walk), where `add` notes each event the first time it is handed over; null: relay upkeep off. */
  constructor(
    private readonly events: EventStore,
    private readonly relays: readonly string[],
    private readonly walk: KeptWalk | null = null,
  ) {}

  key(url: string): string {
    return `${this.events.keys.base}:nostr:ob:${relayTag(url)}`;
  }

  private pauseKey(url: string): string {
    return `${this.events.keys.base}:nostr:pause:${relayTag(url)}`;
  }

  private rateKey(url: string): string {
    return `${this.events.keys.base}:nostr:rate:${relayTag(url)}`;
  }

  /** Events relay upkeep found lost on `url`, sent again although the relay answered them for good: event id → attempts spent. */
  private resendKey(url: string): string {
    return `${this.events.keys.base}:nostr:resend:${relayTag(url)}`;
  }

  /**
   * Hands events to `urls` (every relay by default), each relay only the events it has not
   * answered for good; records the relays on each event (`to`). An event already in an
   * outbox keeps its due time. With the walk, an event handed over for the first time (no
   * `to` yet) is put at the end of relay upkeep's walk in the same call, so one handed over
   * again keeps its one place. Returns the (event, relay) pairs queued.
   */
  async add(ids: readonly string[], nowMs: number, urls: readonly string[] = this.relays): Promise<number> {
    let queued = 0;
    const walk = this.walk ? [this.walk.kept, this.walk.chunks] : [];
    for (let i = 0; i < ids.length; i += ADD_CHUNK) {
      const chunk = ids.slice(i, i + ADD_CHUNK);
      const keys = [...urls.map((u) => this.key(u)), ...walk, ...chunk.map((id) => this.events.keys.event(id))];
      queued += Number(await runScript(this.events.redis, OUTBOX_ADD, keys, [urls.length, nowMs, this.walk?.perChunk ?? 0, ...(await this.events.registry.relayNumbers(urls)), ...chunk]));
    }
    return queued;
  }

  /**
   * Hands events `url` answered for good (accepted) but no longer holds back to its outbox,
   * due now, to be sent again as they are (relay upkeep). Returns how many were not already
   * waiting to be sent again.
   */
  async resend(url: string, ids: readonly string[], nowMs: number): Promise<number> {
    if (ids.length === 0) return 0;
    const pipe = this.events.redis.multi();
    for (const id of ids) pipe.hsetnx(this.resendKey(url), id, '0');
    pipe.zadd(this.key(url), 'NX', ...ids.flatMap((id) => [nowMs, id]));
    const res = (await pipe.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    // the first ids.length answers are HSETNX's: 1 for an event not already waiting
    return res.slice(0, ids.length).filter(([, v]) => v === 1).length;
  }

  /** Records the attempts spent sending events again that are still to be sent (a retry's backoff). */
  async resendTried(url: string, items: ReadonlyArray<{ id: string; attempts: number }>): Promise<void> {
    if (items.length === 0) return;
    await this.events.redis.hset(this.resendKey(url), ...items.flatMap((it) => [it.id, String(it.attempts)]));
  }

  /** The next due events on `url`, at most `most`, leased for `leaseMs`, within `ratePerMinute`. */
  async take(url: string, nowMs: number, most: number, leaseMs: number, ratePerMinute: number): Promise<Taken> {
    const res = (await runScript(this.events.redis, OUTBOX_TAKE, [this.key(url), this.pauseKey(url), this.rateKey(url)], [nowMs, most, leaseMs, ratePerMinute])) as Array<number | string>;
    const head = Number(res[0]);
    if (head === 0) return { ids: res.slice(1).map(String) };
    return { waitMs: head < 0 ? null : head };
  }

  /** Extends the lease of events still being worked on (only those still in the outbox). */
  async renew(url: string, ids: readonly string[], untilMs: number): Promise<void> {
    if (ids.length === 0) return;
    await this.events.redis.zadd(this.key(url), 'XX', 'GT', ...ids.flatMap((id) => [untilMs, id]));
  }

  /** Sets when each event is due again on `url` (a retry's backoff, a pause), if still queued. */
  async later(url: string, due: ReadonlyArray<{ id: string; atMs: number }>): Promise<void> {
    if (due.length === 0) return;
    await this.events.redis.zadd(this.key(url), 'XX', ...due.flatMap((d) => [d.atMs, d.id]));
  }

  /** Removes events their relay answered for good (and, sent again, answered again). */
  async done(url: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const res = await this.events.redis.multi().zrem(this.key(url), ...ids).hdel(this.resendKey(url), ...ids).exec();
    for (const [err] of res ?? []) if (err) throw err;
  }

  /** Pauses `url` for every daemon (a `rate-limited:` answer). */
  async pause(url: string, ms: number): Promise<void> {
    await this.events.redis.set(this.pauseKey(url), '1', 'PX', Math.max(1, Math.round(ms)));
  }

  /** Whether the event waits in `url`'s outbox. */
  async holds(url: string, id: string): Promise<boolean> {
    return (await this.events.redis.zscore(this.key(url), id)) !== null;
  }

  /** Events waiting per relay (due now, later, or leased). */
  async sizes(): Promise<Map<string, number>> {
    const pipe = this.events.redis.pipeline();
    for (const url of this.relays) pipe.zcard(this.key(url));
    const res = (await pipe.exec()) ?? [];
    return new Map(this.relays.map((url, i) => {
      const [err, n] = res[i] ?? [null, 0];
      if (err) throw err;
      return [url, Number(n)];
    }));
  }

  /**
   * For each event: what its hash holds to publish (its JSON; a subject's own event rebuilt,
   * or why it cannot be), this relay's report and, when relay upkeep hands it back to be sent
   * again, the attempts spent on that so far (null: not sent again). One pipelined HMGET per
   * event (EventStore.readEvents) and one of the resend hash.
   */
  async read(url: string, ids: readonly string[]): Promise<Array<{ event: StoredEvent; report: RelayReportRecord | undefined; resend: number | null }>> {
    const [n] = await this.events.registry.relayNumbers([url]);
    const [rows, resends] = await Promise.all([this.events.readEvents(ids, ids.map(() => [`r:${n}`])), this.events.redis.hmget(this.resendKey(url), ...ids)]);
    return ids.map((_, i) => {
      const { event, values } = rows[i]!;
      const report = values[0] ?? null;
      const resend = resends[i] ?? null;
      return { event, report: report ? decodeReport(url, report) : undefined, resend: resend === null ? null : Number(resend) };
    });
  }

  /** Records `url`'s reports on many events in one script call (set-relays.lua). */
  async record(url: string, items: ReadonlyArray<{ id: string; report: RelayReportRecord }>): Promise<RecordedReports[]> {
    if (items.length === 0) return [];
    const [n] = await this.events.registry.relayNumbers([url]);
    const flat = (await runScript(this.events.redis, SET_RELAYS, items.map((it) => this.events.keys.event(it.id)), [n!, ...items.flatMap((it) => [encodeReport(it.report), it.report.status])])) as Array<string | number>;
    const rows: Array<{ subject: string; batch: string; previous: string; reports: Array<[number, string]>; gone: boolean }> = [];
    let at = 0;
    for (let i = 0; i < items.length; i++) {
      const [subject, batch, previous, count] = [String(flat[at]), String(flat[at + 1]), String(flat[at + 2]), Number(flat[at + 3])];
      at += 4;
      const reports: Array<[number, string]> = [];
      for (let j = 0; j < count; j++, at += 2) reports.push([Number(flat[at]), String(flat[at + 1])]);
      rows.push({ subject, batch, previous, reports, gone: count < 0 });
    }
    const urls = await this.events.registry.relayUrls(rows.flatMap((r) => r.reports.map(([m]) => m)));
    let u = 0;
    return rows.map((r) => ({
      subject: r.subject || null,
      batch: r.batch || null,
      previous: r.previous ? decodeReport(url, r.previous) : undefined,
      reports: r.reports.map(([m, v]) => decodeReport(urls[u++] ?? `(relay number ${m}, not in the registry)`, v)),
      gone: r.gone,
    }));
  }
}
