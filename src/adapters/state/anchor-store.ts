/**
 * AnchorStore: the durable state of every subject, in Redis under one key prefix, and the
 * one module that knows its key and field names (layout STATE_SCHEMA, docs/architecture.md).
 * Per subject: envelope (in its own Nostr event when it has one), digest, overall and
 * per-witness status, links to its Nostr event and its batches, and a timestamped history;
 * one index membership by overall status (plus the witness indexes while a witness is in
 * flight or failed) and counts per status; a stream of state changes for live consumers.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient as Redis } from '../redis/connection.js';
import { StateKeys, WITNESSES, type WitnessName } from './keys.js';
import { digestToken, keyToken } from './stream-entries.js';
import { decodeCursor, encodeCursor, listOrder, type Position } from './list-position.js';
import { SET_SUBJECT_EVENT, defineScripts, runScript, scriptCommand, type LuaScript } from './scripts.js';
import { SubjectStore } from './subjects.js';
import { BatchStore } from './batches.js';
import { SubjectIndexes } from './subject-indexes.js';
import { CLAIM_FIELDS, eventContent, packHash } from './subject-hash.js';
import { WITNESS_STATUSES } from '../../core/proof/format.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import { envelopeOfCanonical, packEnvelope, unpackEnvelope, type CompactMembers } from '../../core/envelope/compact.js';
import type { Envelope } from '../../core/envelope/envelope.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { UsageError } from '../../core/errors/errors.js';
import { LogKeys } from '../log/log-sequencer.js';
import { ChangeStream, EVENTS_MAXLEN } from './changes.js';


/**
 * The layout of the state this store reads and writes, kept in `{prefix}:schema`
 * (docs/architecture.md, "Where state lives"). Any other layout is refused at start
 * (openSchema): there are no readers of older layouts.
 */
export const STATE_SCHEMA = 6;

/** How a store found the layout under its prefix (AnchorStore.openSchema): `fresh` (no `:schema`), `current`; `recorded`: the schema key was written. */
export type SchemaOpening = { found: 'fresh' | 'current'; recorded: boolean };

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

function nowIso(ms: number): string {
  return formatAnchoredAt(new Date(ms));
}

export class AnchorStore {
  readonly keys: StateKeys;
  readonly redis: Redis;
  /** Every subject's record: accept, reject, witness moves, forget, one subject's reads. */
  readonly subjects: SubjectStore;
  /** The subjects as indexed and counted: list pages, counts, timeline, scans. */
  readonly indexes: SubjectIndexes;
  /** The witnesses' batches: inboxes, cuts, each batch's hash and witness fields, drops. */
  readonly batches: BatchStore;
  /** The stream of subject state changes and the reconciler's cursors. */
  readonly changes: ChangeStream;
  private readonly now: () => number;

  constructor(redis: Redis, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = new StateKeys(prefix);
    this.now = now;
    this.batches = new BatchStore(redis, this.keys, now);
    this.subjects = new SubjectStore(redis, this.keys, this.batches, now);
    this.indexes = new SubjectIndexes(redis, this.keys);
    this.changes = new ChangeStream(redis, this.keys);
    defineScripts(redis);
  }

  /**
   * Checks the layout under the prefix before anything is written. Layout STATE_SCHEMA: opened
   * as it is. No `:schema`: marked STATE_SCHEMA when `write` (the daemon; a client writes
   * nothing), unless keys only the development layout before `:schema` wrote are there
   * (StateKeys.unnumberedLayoutKeys). That, or another `:schema` value, is refused with a
   * UsageError (`redis_schema`, exit 2) whose one line says what was found and what to do.
   * Cost: one GET and one EXISTS round trip, whatever the state's size.
   */
  async openSchema(opts: { write: boolean }): Promise<SchemaOpening> {
    const k = this.keys;
    const raw = await this.redis.get(k.schema);
    if (raw === String(STATE_SCHEMA)) return { found: 'current', recorded: false };
    if (raw !== null) throw schemaRefusal(k, raw);
    const found = await this.unnumberedLayoutKey();
    if (found !== null) {
      throw new UsageError(`the state under redis.prefix ${k.base} has no layout version (${k.schema} is missing, ${found} is there): it was written by a development release before layouts were numbered, which this release (layout ${STATE_SCHEMA}) does not read; ${startAfresh(k)}`, 'redis_schema');
    }
    if (!opts.write) return { found: 'fresh', recorded: false };
    // NX: a second daemon opening at the same moment finds the key written and judges it
    if ((await this.redis.set(k.schema, String(STATE_SCHEMA), 'NX')) === 'OK') return { found: 'fresh', recorded: true };
    return this.openSchema({ write: false });
  }

  /** The first of StateKeys.unnumberedLayoutKeys that exists, or null (one pipeline of EXISTS). */
  private async unnumberedLayoutKey(): Promise<string | null> {
    const candidates = this.keys.unnumberedLayoutKeys;
    const pipe = this.redis.pipeline();
    for (const key of candidates) pipe.exists(key);
    const res = (await pipe.exec()) ?? [];
    for (let i = 0; i < candidates.length; i++) {
      const [err, n] = res[i] ?? [null, 0];
      if (err) throw err;
      if (Number(n) > 0) return candidates[i]!;
    }
    return null;
  }

  /** Runs one of the state's scripts (SCRIPTS) for a module that owns its keys (the Nostr relay outboxes). */
  runScript(script: LuaScript, keys: string[], args: Array<string | number | Buffer>): Promise<unknown> {
    return this.run(script, keys, args);
  }

  private run(script: LuaScript, keys: string[], args: Array<string | number | Buffer>): Promise<unknown> {
    return runScript(this.redis, script, keys, args);
  }

  // ---- Nostr events and relay reports

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

/** What an operator does with a prefix holding a layout this release does not read. */
function startAfresh(k: StateKeys): string {
  return `to start afresh, delete the keys under ${k.base} (redis-cli --scan --pattern '${k.base}*' | xargs redis-cli unlink) or set redis.prefix to a new prefix`;
}

/** The one line refusing a `:schema` value other than STATE_SCHEMA: older, newer, or not ours. */
function schemaRefusal(k: StateKeys, raw: string): UsageError {
  const n = /^[0-9]{1,6}$/.test(raw) ? Number(raw) : NaN;
  const what = !Number.isInteger(n)
    ? `has an unknown layout version ${JSON.stringify(raw.slice(0, 40))} in ${k.schema} (this release reads layout ${STATE_SCHEMA}): it was not written by aer1-anchor; set redis.prefix to a prefix of its own`
    : n > STATE_SCHEMA
      ? `is layout ${n} (${k.schema}), newer than this release (layout ${STATE_SCHEMA}): run the release that wrote it, or set redis.prefix to a prefix of its own`
      : `is layout ${n} (${k.schema}), written by an earlier development release; this release reads only layout ${STATE_SCHEMA} and does not convert older ones; ${startAfresh(k)}`;
  return new UsageError(`the state under redis.prefix ${k.base} ${what}`, 'redis_schema');
}



