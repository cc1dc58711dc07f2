/**
 * AnchorStore: the durable state of every subject, in Redis under one key prefix.
 * Per subject: envelope, digest, overall and per-witness status, links to its Nostr
 * event and its batches, and a timestamped history; indexes by status and witness;
 * a stream of state changes for live consumers.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { StateKeys, type WitnessName } from './keys.js';
import { ACCEPT, CUT_BATCH, MARK_SENT, REJECT, SET_RELAY, SET_SUBJECT_EVENT, SET_WITNESS } from './scripts.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';

export type SubjectStatus = WitnessStatus | 'rejected';
export const SUBJECT_STATUSES: readonly SubjectStatus[] = ['pending', 'partial', 'confirmed', 'failed', 'rejected'];

const EVENTS_MAXLEN = 100_000;

export interface AcceptInput {
  key: string;
  kind: string;
  envelopeCanonical: string;
  digest: string;
  /** Fingerprint of the subject's root (the envelope without anchored_at): same key + other fp = conflict. */
  fingerprint: string;
  witnesses: readonly WitnessName[];
  /** Witness batchers the subject enters. */
  inboxes: readonly WitnessName[];
  nostrEvent?: { id: string; json: string } | undefined;
}

export type AcceptResult =
  | { result: 'created' }
  | { result: 'duplicate'; digest: string }
  | { result: 'conflict'; digest: string };

export interface HistoryEntry {
  at: string;
  event: string;
  witness?: string;
  from?: string;
  to?: string;
  status?: string;
  detail?: string;
  reason?: string;
  digest?: string;
}

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

export interface SubjectRecord {
  key: string;
  kind: string | null;
  status: SubjectStatus;
  envelopeCanonical: string | null;
  digest: string | null;
  createdMs: number;
  updatedMs: number;
  reason: string | null;
  witnesses: Partial<Record<WitnessName, { status: WitnessStatus; confirmedMs: number | null }>>;
  nostrEventId: string | null;
  batches: Partial<Record<WitnessName, { id: string; index: number }>>;
}

export interface WitnessChange {
  changed: boolean;
  overall: string;
  createdMs: number;
}

export interface ListQuery {
  status?: string | undefined;
  witness?: WitnessName | undefined;
  /** Opaque cursor from a previous page. */
  cursor?: string | undefined;
  limit: number;
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

function nowIso(ms: number): string {
  return formatAnchoredAt(new Date(ms));
}

export class AnchorStore {
  readonly keys: StateKeys;
  readonly redis: Redis;
  private readonly now: () => number;

  constructor(redis: Redis, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = new StateKeys(prefix);
    this.now = now;
    defineScripts(redis);
  }

  private run(script: string, keys: string[], args: Array<string | number>): Promise<unknown> {
    return scriptCommand(this.redis, script)(...keys, ...args.map(String));
  }

  async accept(input: AcceptInput): Promise<AcceptResult> {
    const now = this.now();
    const res = (await this.run(ACCEPT, [this.keys.subject(input.key), this.keys.history(input.key), this.keys.events], [
      input.key,
      input.kind,
      input.envelopeCanonical,
      input.digest,
      input.fingerprint,
      now,
      nowIso(now),
      this.keys.base,
      input.witnesses.join(','),
      input.inboxes.join(','),
      input.nostrEvent?.id ?? '',
      input.nostrEvent?.json ?? '',
      EVENTS_MAXLEN,
    ])) as string[];
    if (res[0] === 'created') return { result: 'created' };
    if (res[0] === 'duplicate') return { result: 'duplicate', digest: res[1] ?? '' };
    return { result: 'conflict', digest: res[1] ?? '' };
  }

  /** Records a refused job (`rejected`) or a conflicting one (`conflict`) with its reason. */
  async reject(key: string, reason: string, code: 'rejected' | 'conflict' = 'rejected'): Promise<void> {
    const now = this.now();
    await this.run(REJECT, [this.keys.subject(key), this.keys.history(key), this.keys.events], [
      key,
      reason,
      now,
      nowIso(now),
      this.keys.base,
      EVENTS_MAXLEN,
      code,
    ]);
  }

  async setWitness(key: string, witness: WitnessName, status: WitnessStatus, progress: number, detail = ''): Promise<WitnessChange> {
    const now = this.now();
    const res = (await this.run(SET_WITNESS, [this.keys.subject(key), this.keys.history(key), this.keys.events], [
      key,
      witness,
      status,
      progress,
      now,
      nowIso(now),
      this.keys.base,
      detail,
      EVENTS_MAXLEN,
    ])) as [number, string, string];
    return { changed: res[0] === 1, overall: res[1], createdMs: Number(res[2]) };
  }

  /** The same transition for many subjects (a batch), pipelined. */
  async setWitnessMany(keys: readonly string[], witness: WitnessName, status: WitnessStatus, progress: number, detail = ''): Promise<WitnessChange[]> {
    const out: WitnessChange[] = [];
    const now = this.now();
    for (let i = 0; i < keys.length; i += 1000) {
      const pipe = this.redis.pipeline();
      for (const key of keys.slice(i, i + 1000)) {
        scriptCommand(pipe, SET_WITNESS)(this.keys.subject(key), this.keys.history(key), this.keys.events, key, witness, status, String(progress), String(now), nowIso(now), this.keys.base, detail, String(EVENTS_MAXLEN));
      }
      const results = (await pipe.exec()) ?? [];
      for (const [err, res] of results) {
        if (err) throw err;
        const r = res as [number, string, string];
        out.push({ changed: r[0] === 1, overall: r[1], createdMs: Number(r[2]) });
      }
    }
    return out;
  }

  async getRecord(key: string): Promise<SubjectRecord | null> {
    return (await this.getRecords([key]))[0] ?? null;
  }

  async getRecords(keys: readonly string[]): Promise<Array<SubjectRecord | null>> {
    if (keys.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const k of keys) pipe.hgetall(this.keys.subject(k)).get(this.keys.envelope(k));
    const res = (await pipe.exec()) ?? [];
    return keys.map((key, i) => {
      const [herr, h] = res[2 * i] ?? [null, {}];
      const [eerr, envelope] = res[2 * i + 1] ?? [null, null];
      if (herr) throw herr;
      if (eerr) throw eerr;
      const hash = h as Record<string, string>;
      return hash.status ? toRecord(key, hash, envelope as string | null) : null;
    });
  }

  async history(key: string): Promise<HistoryEntry[]> {
    const items = await this.redis.lrange(this.keys.history(key), 0, -1);
    return items.map((t) => JSON.parse(t) as HistoryEntry);
  }

  /** Newest first. The cursor is the score and key of the last item of the previous page. */
  async list(q: ListQuery): Promise<{ keys: string[]; next: string | null }> {
    const index = q.witness
      ? this.keys.byWitness(q.witness, q.status ?? 'pending')
      : q.status
        ? this.keys.byStatus(q.status)
        : this.keys.all;
    let max = '+inf';
    let skipKey: string | null = null;
    if (q.cursor) {
      const [score, ...rest] = Buffer.from(q.cursor, 'base64url').toString('utf8').split(':');
      max = `${score}`;
      skipKey = rest.join(':');
    }
    const raw = await this.redis.zrevrangebyscore(index, max, '-inf', 'WITHSCORES', 'LIMIT', 0, q.limit + 50);
    const out: Array<[string, string]> = [];
    let skipping = skipKey !== null;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const k = raw[i]!;
      const score = raw[i + 1]!;
      if (skipping) {
        if (score !== max) skipping = false;
        else {
          if (k === skipKey) skipping = false;
          continue;
        }
      }
      out.push([k, score]);
      if (out.length === q.limit) break;
    }
    const last = out[out.length - 1];
    const next = out.length === q.limit && last ? Buffer.from(`${last[1]}:${last[0]}`).toString('base64url') : null;
    return { keys: out.map(([k]) => k), next };
  }

  async countByStatus(): Promise<Record<string, number>> {
    const pipe = this.redis.pipeline();
    for (const s of SUBJECT_STATUSES) pipe.zcard(this.keys.byStatus(s));
    const res = (await pipe.exec()) ?? [];
    return Object.fromEntries(SUBJECT_STATUSES.map((s, i) => [s, Number(res[i]?.[1] ?? 0)]));
  }

  async countByWitness(witnesses: readonly WitnessName[]): Promise<Record<string, Record<string, number>>> {
    const statuses: WitnessStatus[] = ['pending', 'partial', 'confirmed', 'failed'];
    const pipe = this.redis.pipeline();
    for (const w of witnesses) for (const s of statuses) pipe.zcard(this.keys.byWitness(w, s));
    const res = (await pipe.exec()) ?? [];
    const out: Record<string, Record<string, number>> = {};
    let i = 0;
    for (const w of witnesses) {
      out[w] = {};
      for (const s of statuses) out[w]![s] = Number(res[i++]?.[1] ?? 0);
    }
    return out;
  }

  /** Acceptance time (ms) of the oldest subject whose witness is still pending or partial. */
  async oldestUnconfirmed(witness: WitnessName): Promise<number | null> {
    let oldest: number | null = null;
    for (const s of ['pending', 'partial']) {
      const r = await this.redis.zrange(this.keys.byWitness(witness, s), 0, 0, 'WITHSCORES');
      if (r[1] !== undefined) oldest = oldest === null ? Number(r[1]) : Math.min(oldest, Number(r[1]));
    }
    return oldest;
  }

  async lastConfirmed(witness: WitnessName): Promise<number | null> {
    const v = await this.redis.hget(this.keys.meta, `last_confirmed:${witness}`);
    return v === null ? null : Number(v);
  }

  /**
   * One page of the subjects whose `witness` is in `status`, oldest first, accepted before
   * `acceptedBeforeMs`, with the named fields of each subject hash. Resumes after `cursor`
   * (from the previous page; null: from the start); `next` is null once the index is walked.
   */
  async scanWitness(witness: WitnessName, status: string, cursor: string | null, limit: number, acceptedBeforeMs: number, fields: readonly string[]): Promise<{ items: Array<{ key: string; fields: Array<string | null> }>; next: string | null }> {
    let min = '-inf';
    let after: string | null = null;
    if (cursor) {
      const i = cursor.indexOf(':');
      min = cursor.slice(0, i);
      after = cursor.slice(i + 1);
    }
    // Members with one score come in key order, so (score, key) is a total order to resume from.
    const raw = await this.redis.zrangebyscore(this.keys.byWitness(witness, status), min, `(${acceptedBeforeMs}`, 'WITHSCORES', 'LIMIT', 0, limit + 1);
    const page: Array<[string, string]> = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const [k, score] = [raw[i]!, raw[i + 1]!];
      if (after !== null && score === min && k <= after) continue;
      page.push([k, score]);
    }
    let next: string | null = null;
    if (raw.length / 2 > limit) {
      const last = page.length > 0 ? page[Math.min(page.length, limit) - 1]! : null;
      // A page filled by one score's keys already seen: step past that score.
      next = last ? `${last[1]}:${last[0]}` : `(${min}:`;
    }
    const kept = page.slice(0, limit);
    const pipe = this.redis.pipeline();
    for (const [k] of kept) pipe.hmget(this.keys.subject(k), ...fields);
    const res = kept.length > 0 ? ((await pipe.exec()) ?? []) : [];
    return {
      items: kept.map(([key], i) => {
        const [err, values] = res[i] ?? [null, []];
        if (err) throw err;
        return { key, fields: values as Array<string | null> };
      }),
      next,
    };
  }

  /** The reconciler's saved position in one index (null: start). */
  async reconcileCursor(name: string): Promise<string | null> {
    return this.redis.hget(this.keys.reconcile, name);
  }

  async setReconcileCursor(name: string, cursor: string | null): Promise<void> {
    if (cursor === null) await this.redis.hdel(this.keys.reconcile, name);
    else await this.redis.hset(this.keys.reconcile, name, cursor);
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
  async setSubjectEvents(items: ReadonlyArray<{ key: string; id: string; json: string }>): Promise<Array<string | null>> {
    if (items.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const it of items) scriptCommand(pipe, SET_SUBJECT_EVENT)(this.keys.subject(it.key), this.keys.event(it.id), it.id, it.json, it.key);
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
   * that order, then any other relay that reported on it (events from before `to` was
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

  /** Cuts the next batch of up to `max` subjects; null when none wait. Ids are `<sequence>-<random>`. */
  async cutBatch(witness: WitnessName, max: number): Promise<{ id: string; size: number } | null> {
    const now = this.now();
    const res = (await this.run(CUT_BATCH, [this.keys.inbox(witness), this.keys.batchSeq(witness), this.keys.openBatches(witness)], [
      max,
      this.keys.base,
      witness,
      now,
      nowIso(now),
      randomBytes(6).toString('hex'),
    ])) as [string, number] | null;
    return res ? { id: String(res[0]), size: Number(res[1]) } : null;
  }

  async openBatchIds(witness: WitnessName): Promise<string[]> {
    return this.redis.smembers(this.keys.openBatches(witness));
  }

  async closeBatch(witness: WitnessName, id: string): Promise<void> {
    await this.redis.srem(this.keys.openBatches(witness), id);
  }

  async getBatch(witness: WitnessName, id: string): Promise<BatchInfo | null> {
    const h = await this.redis.hgetall(this.keys.batch(witness, id));
    if (!h.size) return null;
    const hex = h.digests ?? '';
    const digests: Buffer[] = [];
    for (let i = 0; i < hex.length; i += 64) digests.push(Buffer.from(hex.slice(i, i + 64), 'hex'));
    const { digests: _d, size, created, anchored_at, ...fields } = h;
    return { witness, id, size: Number(size), createdMs: Number(created), anchoredAt: anchored_at ?? '', digests, fields };
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
    const names = (await this.redis.hkeys(k)).filter((f) => f.startsWith('cal:')).sort();
    if (names.length === 0) return [];
    const values = await this.redis.hmget(k, ...names);
    return names.flatMap((f, i) => (values[i] ? [{ url: f.slice(4), state: values[i]! }] : []));
  }

  async batchField(witness: WitnessName, id: string, field: string): Promise<string | null> {
    return this.redis.hget(this.keys.batch(witness, id), field);
  }
}

type ScriptFn = (...args: string[]) => Promise<unknown>;
type Commander = Redis | ReturnType<Redis['pipeline']>;

const SCRIPTS: ReadonlyArray<[string, number]> = [
  [ACCEPT, 3],
  [REJECT, 3],
  [SET_WITNESS, 3],
  [SET_RELAY, 1],
  [MARK_SENT, 1],
  [CUT_BATCH, 3],
  [SET_SUBJECT_EVENT, 2],
];

const COMMAND_NAMES = new Map<string, string>();

function commandName(script: string): string {
  let name = COMMAND_NAMES.get(script);
  if (!name) {
    name = `aer1_${createHash('sha1').update(script).digest('hex').slice(0, 12)}`;
    COMMAND_NAMES.set(script, name);
  }
  return name;
}

/** Defines every script as an ioredis custom command (EVALSHA, reloaded after a Redis restart). */
function defineScripts(redis: Redis): void {
  const defined = redis as unknown as Record<string, unknown>;
  for (const [lua, numberOfKeys] of SCRIPTS) {
    const name = commandName(lua);
    if (typeof defined[name] !== 'function') redis.defineCommand(name, { lua, numberOfKeys });
  }
}

/** A defined script on a connection or a pipeline created after defineScripts. */
function scriptCommand(target: Commander, script: string): ScriptFn {
  const fn = (target as unknown as Record<string, ScriptFn | undefined>)[commandName(script)];
  if (!fn) throw new Error('script not defined on this connection');
  return fn.bind(target);
}

function toRecord(key: string, h: Record<string, string>, envelope: string | null): SubjectRecord {
  const witnesses: SubjectRecord['witnesses'] = {};
  const batches: SubjectRecord['batches'] = {};
  for (const w of (h.witnesses ?? '').split(',').filter(Boolean) as WitnessName[]) {
    const st = h[`w:${w}`];
    if (st) witnesses[w] = { status: st as WitnessStatus, confirmedMs: h[`confirmed:${w}`] ? Number(h[`confirmed:${w}`]) : null };
    const b = h[`${w}:batch`];
    if (b) batches[w] = { id: b, index: Number(h[`${w}:index`] ?? 0) };
  }
  return {
    key: h.key ?? key,
    kind: h.kind ?? null,
    status: h.status as SubjectStatus,
    envelopeCanonical: envelope,
    digest: h.digest ?? null,
    createdMs: Number(h.created ?? 0),
    updatedMs: Number(h.updated ?? 0),
    reason: h.reason ?? null,
    witnesses,
    nostrEventId: h['nostr:event'] ?? null,
    batches,
  };
}
