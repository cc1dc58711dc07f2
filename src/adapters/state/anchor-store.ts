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
import { CUT_BATCH, DROP_BATCH, FIX_EVENT_IDS, MARK_SENT, SET_RELAY, SET_SUBJECT_EVENT, defineScripts, runScript, scriptCommand, type LuaScript } from './scripts.js';
import { SubjectStore } from './subjects.js';
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

export interface BatchInfo {
  witness: WitnessName;
  id: string;
  size: number;
  createdMs: number;
  anchoredAt: string;
  digests: Buffer[];
  fields: Record<string, string>;
}

/**
 * An OTS batch's own state beside its digests, as its witness reads it (the field names are
 * AnchorStore's). Written with OtsBatchUpdate.
 */
export interface OtsBatchState {
  /** Held by enough calendars: its subjects went pending on OTS. */
  submitted: boolean;
  /** Times the batch was sent back to the calendars (answers committing to another root dropped). */
  round: number;
  /** The upgrade poll in force; null before the first. */
  poll: number | null;
  /** The root (hex) the stored answers were taken on; null when none is recorded. */
  root: string | null;
  /** The root timestamp with every calendar's answer merged under it, serialized, base64; null for none. */
  ts: string | null;
  /** The event tree's root R_e (hex), '' when the batch has none, undefined while not fixed yet (NIP-03). */
  eventsRoot: string | undefined;
  /** The earliest verified Bitcoin block, JSON; null while none. */
  bitcoin: string | null;
  /** NIP-03 publishing of the batch: 'done' once finished; null before. */
  nip03: string | null;
  /** Each calendar's state (CalendarState as JSON), by its configured URL. */
  calendars: Record<string, string>;
}

/** What one write changes of an OTS batch's state: `root` and `ts` null clear them. */
export interface OtsBatchUpdate {
  submitted?: boolean;
  round?: number;
  poll?: number;
  root?: string | null;
  ts?: string | null;
  bitcoin?: string;
  calendars?: Record<string, string>;
}

/** The batch hash fields behind OtsBatchState (`cal:<url>` for each calendar). */
const OTS_FIELD = { submitted: 'submitted', round: 'round', poll: 'poll', root: 'root', ts: 'ts', eventsRoot: 'events_root', eventIds: 'event_ids', bitcoin: 'bitcoin', nip03: 'nip03' } as const;
const CALENDAR_FIELD = 'cal:';
/** A Nostr batch's fields besides its digests: its signed event and the mode decided. */
const NOSTR_FIELD = { event: 'event', mode: 'mode' } as const;

function otsStateOf(fields: Record<string, string>): OtsBatchState {
  const calendars: Record<string, string> = {};
  for (const [f, v] of Object.entries(fields)) if (f.startsWith(CALENDAR_FIELD)) calendars[f.slice(CALENDAR_FIELD.length)] = v;
  const poll = fields[OTS_FIELD.poll];
  return {
    submitted: fields[OTS_FIELD.submitted] === '1',
    round: Number(fields[OTS_FIELD.round] ?? 0),
    poll: poll === undefined ? null : Number(poll),
    root: fields[OTS_FIELD.root] || null,
    ts: fields[OTS_FIELD.ts] || null,
    eventsRoot: fields[OTS_FIELD.eventsRoot],
    bitcoin: fields[OTS_FIELD.bitcoin] || null,
    nip03: fields[OTS_FIELD.nip03] ?? null,
    calendars,
  };
}

function otsFieldsOf(u: OtsBatchUpdate): Record<string, string> {
  const out: Record<string, string> = {};
  if (u.submitted !== undefined) out[OTS_FIELD.submitted] = u.submitted ? '1' : '0';
  if (u.round !== undefined) out[OTS_FIELD.round] = String(u.round);
  if (u.poll !== undefined) out[OTS_FIELD.poll] = String(u.poll);
  if (u.root !== undefined) out[OTS_FIELD.root] = u.root ?? '';
  if (u.ts !== undefined) out[OTS_FIELD.ts] = u.ts ?? '';
  if (u.bitcoin !== undefined) out[OTS_FIELD.bitcoin] = u.bitcoin;
  for (const [url, state] of Object.entries(u.calendars ?? {})) out[`${CALENDAR_FIELD}${url}`] = state;
  return out;
}

/** What a proof takes from a subject's batch besides its digests (export.ts). */
export interface ProofBatchFields {
  /** Nostr: the batch's signed event (JSON) and the mode auto mode decided for it. */
  event: string | null;
  mode: string | null;
  /** OTS: the root timestamp (base64), the verified block (JSON), each calendar's state (JSON) by URL. */
  ts: string | null;
  bitcoin: string | null;
  /** OTS: held by enough calendars (the calendars it went to are then only those recorded). */
  submitted: boolean;
  calendars: Record<string, string>;
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
  /** The stream of subject state changes and the reconciler's cursors. */
  readonly changes: ChangeStream;
  private readonly now: () => number;

  constructor(redis: Redis, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = new StateKeys(prefix);
    this.now = now;
    this.subjects = new SubjectStore(redis, this.keys, this, now);
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

  /**
   * Drops up to `limit` batches per witness none of whose subjects is left in Redis (forget.lua
   * lists them), each in one drop-batch.lua call with every key of its own: hash, key list,
   * transition list, its Nostr batch event or NIP-03 attestations. A confirmed OTS batch with
   * work left (batchesWithWork) waits for a later call. Returns the batches dropped. Safe to
   * repeat; retention calls it on every pass, so a crash between forget and drop is resumed.
   */
  async dropEmptiedBatches(limit = 100): Promise<number> {
    const k = this.keys;
    let dropped = 0;
    for (const w of WITNESSES) {
      const ids = await this.redis.srandmember(k.emptiedBatches(w), limit);
      for (const id of ids) {
        for (let attempt = 0; attempt < 3; attempt++) {
          const events = await this.batchEventIdsOwned(w, id);
          const res = Number(await this.run(DROP_BATCH, [k.emptiedBatches(w), k.openBatches(w), k.batchesWithWork(w), k.batch(w, id), k.batchKeys(w, id), k.batchHistory(w, id), k.nostrRecent, ...events.map((e) => k.event(e))], [id, w, ...events]));
          if (res === 1) dropped++;
          if (res !== 2) break;
        }
      }
    }
    return dropped;
  }

  /** The Nostr events a batch owns: its batch event (Nostr), or the NIP-03 attestations signed for it (OTS). */
  private async batchEventIdsOwned(witness: WitnessName, id: string): Promise<string[]> {
    const b = this.keys.batch(witness, id);
    if (witness === 'nostr') {
      const json = await this.redis.hget(b, 'event');
      if (!json) return [];
      try {
        const ev = JSON.parse(json) as { id?: unknown };
        return typeof ev.id === 'string' ? [ev.id] : [];
      } catch {
        return [];
      }
    }
    const names = (await this.redis.hkeys(b)).filter((f) => f.startsWith('nip03:'));
    if (names.length === 0) return [];
    const values = await this.redis.hmget(b, ...names);
    return [...new Set(values.filter((v): v is string => typeof v === 'string'))];
  }

  /**
   * Notes whether a confirmed batch still has work after its subjects' confirmation (upgrade
   * polls of calendars still pending, NIP-03 attestations): the reconciler re-creates that
   * work from this set when its job is lost, and a batch in it is not dropped.
   */
  async setBatchWork(witness: WitnessName, id: string, left: boolean): Promise<void> {
    if (left) await this.redis.sadd(this.keys.batchesWithWork(witness), id);
    else await this.redis.srem(this.keys.batchesWithWork(witness), id);
  }

  /** One page of the confirmed batches with work left (SSCAN: `cursor` '0' to start; `next` '0' once walked). */
  async scanBatchesWithWork(witness: WitnessName, cursor: string, count: number): Promise<{ ids: string[]; next: string }> {
    const [next, ids] = await this.redis.sscan(this.keys.batchesWithWork(witness), cursor, 'COUNT', count);
    return { ids, next };
  }

  /** True when the subject waits in the witness's inbox. */
  async inInbox(witness: WitnessName, key: string): Promise<boolean> {
    return (await this.redis.lpos(this.keys.inbox(witness), key)) !== null;
  }

  /** Puts a subject (back) into a witness's inbox; a subject already batched is skipped by the cut. */
  async addToInbox(witness: WitnessName, key: string): Promise<void> {
    await this.redis.rpush(this.keys.inbox(witness), key);
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

  /** Records one relay's report (never downgrading an acceptance); returns every relay's report. */
  async setRelayReport(eventId: string, report: RelayReportRecord): Promise<RelayReportRecord[]> {
    const flat = (await this.run(SET_RELAY, [this.keys.event(eventId)], [report.url, JSON.stringify(report), report.status])) as string[];
    const out: RelayReportRecord[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push(JSON.parse(flat[i + 1]!) as RelayReportRecord);
    return out;
  }

  async relayReports(eventId: string): Promise<RelayReportRecord[]> {
    return (await this.eventRelays(eventId)).reports;
  }

  /**
   * Records that the event was handed to these relays (a publish job queued for each), so
   * the subject's view lists where it was actually sent, whatever the config says later.
   */
  async markRelaysSent(eventId: string, urls: readonly string[]): Promise<void> {
    if (urls.length === 0) return;
    await this.run(MARK_SENT, [this.keys.event(eventId)], [...urls]);
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

  // ---- Batches

  async inboxLength(witness: WitnessName): Promise<number> {
    return this.redis.llen(this.keys.inbox(witness));
  }

  /**
   * Cuts the next batch of up to `max` subjects; null when none wait. Ids are `<sequence>-<random>`.
   * Reads the inbox head and the sequence, then proposes the cut to the script (which checks
   * both did not move); another daemon cutting at the same moment makes it read again.
   */
  async cutBatch(witness: WitnessName, max: number): Promise<{ id: string; size: number } | null> {
    const k = this.keys;
    for (let attempt = 0; attempt < CUT_TRIES; attempt++) {
      const [[headErr, head], [seqErr, seqText]] = ((await this.redis.pipeline().lrange(k.inbox(witness), 0, max - 1).get(k.batchSeq(witness)).exec()) ?? []) as Array<[Error | null, unknown]> as [[Error | null, string[]], [Error | null, string | null]];
      if (headErr) throw headErr;
      if (seqErr) throw seqErr;
      if (head.length === 0) return null;
      const seq = Number(seqText ?? 0) + 1;
      const id = `${seq}-${randomBytes(6).toString('hex')}`;
      const now = this.now();
      const keys = [k.inbox(witness), k.batchSeq(witness), k.openBatches(witness), k.batch(witness, id), k.batchKeys(witness, id), ...head.map((key) => k.subject(key))];
      const res = (await this.run(CUT_BATCH, keys, [witness, now, nowIso(now), id, seq, ...head])) as [string, number] | null;
      if (res === null) return null;
      if (res[0] === 'retry') continue;
      return { id: String(res[0]), size: Number(res[1]) };
    }
    throw new Error(`batch cut of ${witness}: the inbox head moved under ${CUT_TRIES} tries in a row (another daemon cutting); trying again next tick`);
  }

  async openBatchIds(witness: WitnessName): Promise<string[]> {
    return this.redis.smembers(this.keys.openBatches(witness));
  }

  async closeBatch(witness: WitnessName, id: string): Promise<void> {
    await this.redis.srem(this.keys.openBatches(witness), id);
  }

  async getBatch(witness: WitnessName, id: string): Promise<BatchInfo | null> {
    const raw = await this.redis.hgetallBuffer(this.keys.batch(witness, id));
    if (!raw.size) return null;
    // 32 bytes each, in the batch's order (cut-batch.lua)
    const digests: Buffer[] = [];
    const packed = raw.digests32;
    if (packed) for (let i = 0; i + 32 <= packed.length; i += 32) digests.push(Buffer.from(packed.subarray(i, i + 32)));
    const h: Record<string, string> = {};
    for (const [f, v] of Object.entries(raw)) if (f !== 'digests32') h[f] = v.toString();
    const { size, created, anchored_at, ...fields } = h;
    return { witness, id, size: Number(size), createdMs: Number(created), anchoredAt: anchored_at ?? '', digests, fields };
  }

  /** An OTS batch with its state (OtsBatchState), or null when it is gone. */
  async otsBatch(id: string): Promise<(BatchInfo & { state: OtsBatchState }) | null> {
    const batch = await this.getBatch('ots', id);
    return batch ? { ...batch, state: otsStateOf(batch.fields) } : null;
  }

  /** Writes part of an OTS batch's state. */
  async setOtsBatch(id: string, update: OtsBatchUpdate): Promise<void> {
    const fields = otsFieldsOf(update);
    if (Object.keys(fields).length > 0) await this.redis.hset(this.keys.batch('ots', id), fields);
  }

  /** What the reconciler checks of an OTS batch (never its digests or calendars); `exists` false when it is gone. */
  async otsBatchProgress(id: string): Promise<{ exists: boolean } & Pick<OtsBatchState, 'submitted' | 'poll' | 'bitcoin' | 'eventsRoot' | 'nip03'>> {
    const [size, submitted, poll, bitcoin, eventsRoot, nip03] = await this.redis.hmget(this.keys.batch('ots', id), 'size', OTS_FIELD.submitted, OTS_FIELD.poll, OTS_FIELD.bitcoin, OTS_FIELD.eventsRoot, OTS_FIELD.nip03);
    return { exists: size !== null, submitted: submitted === '1', poll: poll === null ? null : Number(poll), bitcoin: bitcoin || null, eventsRoot: eventsRoot ?? undefined, nip03: nip03 ?? null };
  }

  /** Fixes an OTS batch's event tree root (hex, '' for none) unless fixed already; returns the one in force. */
  async fixOtsEventsRoot(id: string, value: string): Promise<string> {
    return this.setBatchFieldOnce('ots', id, OTS_FIELD.eventsRoot, value);
  }

  /** NIP-03: the event ids the batch's event tree commits to, in tree order; null while not fixed (or fixed before the list was kept). */
  async otsEventIds(id: string): Promise<string[] | null> {
    const packed = await this.redis.hget(this.keys.batch('ots', id), OTS_FIELD.eventIds);
    return packed === null ? null : splitIds(packed);
  }

  /**
   * NIP-03: fixes the batch's event ids once, in one script call: its own subjects' `ownIds`,
   * then up to `maxLate` late ones, which leave the waiting set in the same call. Returns the
   * list in force (the first call's, for a retry or a second daemon).
   */
  async fixOtsEventIds(id: string, ownIds: readonly string[], maxLate: number): Promise<string[]> {
    const fixed = await scriptCommand(this.redis, FIX_EVENT_IDS)('2', this.keys.batch('ots', id), this.keys.nip03Late, OTS_FIELD.eventIds, String(maxLate), ...ownIds);
    return splitIds(String(fixed));
  }

  /** NIP-03: the oldest `limit` event ids waiting for a later batch to commit them. */
  async lateNip03Events(limit: number): Promise<string[]> {
    return this.redis.zrange(this.keys.nip03Late, 0, limit - 1);
  }

  /** NIP-03: event ids whose batch's event tree was fixed without them (kept with the time first noted). */
  async addLateNip03Events(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    const now = Date.now();
    await this.redis.zadd(this.keys.nip03Late, 'NX', ...eventIds.flatMap((e) => [now, e]));
  }

  /** Nostr: the batch's signed event (JSON) and the mode decided for it (auto mode), null while none. */
  async nostrBatchEvent(id: string): Promise<{ event: string | null; mode: string | null; size: number | null }> {
    const [event, mode, size] = await this.redis.hmget(this.keys.batch('nostr', id), NOSTR_FIELD.event, NOSTR_FIELD.mode, 'size');
    return { event: event || null, mode: mode || null, size: size === null ? null : Number(size) };
  }

  /** Nostr: fixes the batch's mode unless decided already; returns the one in force. */
  async fixNostrBatchMode(id: string, mode: string): Promise<string> {
    return this.setBatchFieldOnce('nostr', id, NOSTR_FIELD.mode, mode);
  }

  /** Nostr: stores the batch's signed event unless one is stored already; returns the one in force (JSON). */
  async fixNostrBatchEvent(id: string, json: string): Promise<string> {
    return this.setBatchFieldOnce('nostr', id, NOSTR_FIELD.event, json);
  }

  /** NIP-03 for an OTS batch: what publishing needs of it, never its digests. */
  async otsNip03State(id: string): Promise<{ ts: string | null; eventsRoot: string | null; bitcoin: string | null; done: boolean }> {
    const [ts, eventsRoot, bitcoin, nip03] = await this.redis.hmget(this.keys.batch('ots', id), OTS_FIELD.ts, OTS_FIELD.eventsRoot, OTS_FIELD.bitcoin, OTS_FIELD.nip03);
    return { ts: ts || null, eventsRoot: eventsRoot || null, bitcoin: bitcoin || null, done: nip03 === 'done' };
  }

  /** NIP-03: the attestation event chosen for one of the batch's events, or null. */
  async otsNip03Attestation(id: string, eventId: string): Promise<string | null> {
    return this.redis.hget(this.keys.batch('ots', id), `${OTS_FIELD.nip03}:${eventId}`);
  }

  /** NIP-03: names the attestation for one event unless one is named already; returns the one in force. */
  async fixOtsNip03Attestation(id: string, eventId: string, attestationId: string): Promise<string> {
    return this.setBatchFieldOnce('ots', id, `${OTS_FIELD.nip03}:${eventId}`, attestationId);
  }

  /** NIP-03: the batch is finished (published, or given up on with `error`). */
  async finishOtsNip03(id: string, error?: string): Promise<void> {
    await this.redis.hset(this.keys.batch('ots', id), { [OTS_FIELD.nip03]: 'done', ...(error ? { [`${OTS_FIELD.nip03}_error`]: error } : {}) });
  }

  /** What a subject's view shows of its OTS batch (never the digests or the calendars). */
  async otsBatchSummary(id: string): Promise<{ size: number | null; anchoredAt: string | null; submitted: boolean; bitcoin: string | null }> {
    const [size, anchoredAt, submitted, bitcoin] = await this.redis.hmget(this.keys.batch('ots', id), 'size', 'anchored_at', OTS_FIELD.submitted, OTS_FIELD.bitcoin);
    return { size: size ? Number(size) : null, anchoredAt: anchoredAt ?? null, submitted: submitted === '1', bitcoin: bitcoin || null };
  }

  /** What a subject's proof takes from its batch besides the digests, read fresh (answers and upgrades change it). */
  async proofBatchFields(witness: WitnessName, id: string): Promise<ProofBatchFields> {
    const [f, calendars] = await Promise.all([
      this.batchFields(witness, id, [NOSTR_FIELD.event, NOSTR_FIELD.mode, OTS_FIELD.ts, OTS_FIELD.bitcoin, OTS_FIELD.submitted]),
      witness === 'ots' ? this.batchCalendars(id) : Promise.resolve([]),
    ]);
    return { event: f.event ?? null, mode: f.mode ?? null, ts: f[OTS_FIELD.ts] || null, bitcoin: f[OTS_FIELD.bitcoin] || null, submitted: f[OTS_FIELD.submitted] === '1', calendars: Object.fromEntries(calendars.map((c) => [c.url, c.state])) };
  }

  async batchKeys(witness: WitnessName, id: string): Promise<string[]> {
    return this.redis.lrange(this.keys.batchKeys(witness, id), 0, -1);
  }

  async setBatchFields(witness: WitnessName, id: string, fields: Record<string, string>): Promise<void> {
    await this.redis.hset(this.keys.batch(witness, id), fields);
  }

  /** Sets a batch field only when absent; returns the value in force. */
  async setBatchFieldOnce(witness: WitnessName, id: string, field: string, value: string): Promise<string> {
    const k = this.keys.batch(witness, id);
    await this.redis.hsetnx(k, field, value);
    return (await this.redis.hget(k, field)) ?? value;
  }

  /** The named fields of a batch that are set (one round trip; never the digests unless asked). */
  async batchFields(witness: WitnessName, id: string, names: readonly string[]): Promise<Record<string, string>> {
    if (names.length === 0) return {};
    const values = await this.redis.hmget(this.keys.batch(witness, id), ...names);
    const out: Record<string, string> = {};
    names.forEach((f, i) => {
      const v = values[i];
      if (v !== null && v !== undefined) out[f] = v;
    });
    return out;
  }

  /**
   * The calendars an OTS batch was submitted to, as its `cal:<url>` fields record them
   * (sorted by URL), with each one's raw state; never reads the digests.
   */
  async batchCalendars(id: string): Promise<Array<{ url: string; state: string }>> {
    const k = this.keys.batch('ots', id);
    const names = (await this.redis.hkeys(k)).filter((f) => f.startsWith(CALENDAR_FIELD)).sort();
    if (names.length === 0) return [];
    const values = await this.redis.hmget(k, ...names);
    return names.flatMap((f, i) => (values[i] ? [{ url: f.slice(CALENDAR_FIELD.length), state: values[i]! }] : []));
  }

  async batchField(witness: WitnessName, id: string, field: string): Promise<string | null> {
    return this.redis.hget(this.keys.batch(witness, id), field);
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

/** A packed list of 32-byte hex ids (64 characters each, no separator). */
function splitIds(packed: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 64 <= packed.length; i += 64) out.push(packed.slice(i, i + 64));
  return out;
}

/**
 * Proposals of a batch cut before giving up for this tick. A proposal loses only to another
 * daemon's cut that landed first, so with two cutters each try is at worst a coin toss.
 */
const CUT_TRIES = 32;


