/**
 * EventStore: the signed Nostr events in Redis (`{prefix}:ev:<id>`: the event's JSON, its
 * owner, the relays it was handed to, each relay's report and the copy a relay was sent),
 * a subject's link to its own event (set-subject-event.lua), and the auto mode's count of
 * events recently queued. The relay outboxes beside them (nostr/relay-outbox.ts) run this
 * family's outbox-add, outbox-take and set-relays scripts.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys } from './keys.js';
import { DIR, defineScripts, load, scriptCommand } from './scripts.js';
import { CLAIM_FIELDS, eventContent, packHash } from './subject-hash.js';

/** Auto mode: links a subject's own event, first stored copy wins. */
export const SET_SUBJECT_EVENT = load(DIR, 'set-subject-event');
/** Nostr relay outboxes: hands events to the relays (outbox-add), the next group due on one relay (outbox-take). */
export const OUTBOX_ADD = load(DIR, 'outbox-add');
export const OUTBOX_TAKE = load(DIR, 'outbox-take');
/** One relay's reports on many events, never downgrading an acceptance. */
export const SET_RELAYS = load(DIR, 'set-relays');

export interface RelayReportRecord {
  url: string;
  status: string;
  message: string;
  at: string;
  attempts?: number;
  prefix?: string;
  /** The relay has answered for good (accepted, stored, refused without retry, or given up). */
  final?: boolean;
  /** The id of the copy this relay was sent instead of the event (NIP-13 proof of work, or re-dated for its created_at window). */
  copyId?: string;
  /** Leading zero bits (NIP-13) of what was sent or asked, when proof of work was involved. */
  pow?: number;
}


export class EventStore {
  constructor(readonly redis: Redis, readonly keys: StateKeys) {
    defineScripts(redis, [SET_SUBJECT_EVENT, OUTBOX_ADD, OUTBOX_TAKE, SET_RELAYS]);
  }

  async eventJson(eventId: string): Promise<string | null> {
    return this.redis.hget(this.keys.event(eventId), 'json');
  }

  async storeEvent(eventId: string, json: string, owner: { subject?: string; batch?: string }): Promise<void> {
    const fields: string[] = ['json', json];
    if (owner.subject) fields.push('subject', owner.subject);
    if (owner.batch) fields.push('batch', owner.batch);
    await this.redis.hset(this.keys.event(eventId), ...fields);
  }

  /**
   * Auto mode: links each subject to its own signed event unless it has one already (the
   * first stored copy wins). Returns, per item, the id of the subject's event in force, or
   * null when the subject is gone. Pipelined.
   */
  async setSubjectEvents(items: ReadonlyArray<{ key: string; id: string; json: string; envelope?: string }>): Promise<Array<string | null>> {
    if (items.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const it of items) {
      // the event's content is the envelope its claims rebuild: once linked, the event keeps it (the claims go)
      const drop = it.envelope !== undefined && eventContent(it.json) === it.envelope ? Object.values(CLAIM_FIELDS) : [];
      scriptCommand(pipe, SET_SUBJECT_EVENT)('3', this.keys.subject(it.key), this.keys.event(it.id), this.keys.envelope(it.key), it.id, it.json, it.key, packHash(it.id), ...drop);
    }
    const res = (await pipe.exec()) ?? [];
    return res.map(([err, v]) => {
      if (err) throw err;
      return typeof v === 'string' ? v : null;
    });
  }

  /** Nostr auto mode: notes an event queued for the relays at `nowMs` (once per event), forgetting those older than the horizon. */
  async noteNostrQueued(eventId: string, nowMs: number, horizonMs: number): Promise<void> {
    await this.redis.multi().zadd(this.keys.nostrRecent, 'NX', nowMs, eventId).zremrangebyscore(this.keys.nostrRecent, '-inf', `(${nowMs - horizonMs}`).exec();
  }

  /** Nostr auto mode: how many events were queued for the relays within the horizon before `nowMs`. */
  async recentNostrQueued(nowMs: number, horizonMs: number): Promise<number> {
    const [, count] = (await this.redis.multi().zremrangebyscore(this.keys.nostrRecent, '-inf', `(${nowMs - horizonMs}`).zcard(this.keys.nostrRecent).exec()) ?? [];
    if (count?.[0]) throw count[0];
    return Number(count?.[1] ?? 0);
  }

  /** The copy of the event one relay was sent instead of it (proof of work, re-dated), as JSON, or null. */
  async relayCopy(eventId: string, url: string): Promise<string | null> {
    return this.redis.hget(this.keys.event(eventId), `copy:${url}`);
  }

  async setRelayCopy(eventId: string, url: string, json: string): Promise<void> {
    await this.redis.hset(this.keys.event(eventId), `copy:${url}`, json);
  }

  async eventOwner(eventId: string): Promise<{ subject: string | null; batch: string | null }> {
    const [subject, batch] = await this.redis.hmget(this.keys.event(eventId), 'subject', 'batch');
    return { subject: subject ?? null, batch: batch ?? null };
  }

  async relayReports(eventId: string): Promise<RelayReportRecord[]> {
    return (await this.eventRelays(eventId)).reports;
  }

  /**
   * The relays the event went to, as the state records them: the ones it was handed to, in
   * that order, then any other relay that reported on it (a report with no hand-over
   * recorded); and every report.
   */
  async eventRelays(eventId: string): Promise<{ relays: string[]; reports: RelayReportRecord[] }> {
    const h = await this.redis.hgetall(this.keys.event(eventId));
    const relays: string[] = [];
    const reports: RelayReportRecord[] = [];
    for (const [f, v] of Object.entries(h)) {
      if (f === 'to') relays.push(...(JSON.parse(v) as string[]));
      else if (f.startsWith('r:')) reports.push(JSON.parse(v) as RelayReportRecord);
    }
    for (const r of reports) if (!relays.includes(r.url)) relays.push(r.url);
    return { relays, reports };
  }
}
