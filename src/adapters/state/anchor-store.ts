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
import { ACCEPT, CUT_BATCH, DROP_BATCH, FIX_EVENT_IDS, FORGET, LIST_PAGE, MARK_SENT, NOTE_LATE, REJECT, SCRIPTS, SET_RELAY, SET_SUBJECT_EVENT, SET_WITNESS, type LuaScript } from './scripts.js';
import { WITNESS_STATUSES } from '../../core/proof/format.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import { envelopeOfCanonical, packEnvelope, unpackEnvelope, type CompactMembers } from '../../core/envelope/compact.js';
import type { Envelope } from '../../core/envelope/envelope.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { UsageError } from '../../core/errors/errors.js';
import { LogKeys } from '../log/log-sequencer.js';

export type SubjectStatus = WitnessStatus | 'rejected';
export const SUBJECT_STATUSES: readonly SubjectStatus[] = ['pending', 'partial', 'confirmed', 'failed', 'rejected'];

const EVENTS_MAXLEN = 100_000;

/** Subjects per set-witness.lua call: bounds how long one call holds Redis. */
const WITNESS_CHUNK = 250;

/** Index reads one list page may make while a filter keeps too few subjects (bounds a request). */
const LIST_ROUNDS = 20;
/** Subjects a filtered list page reads from the indexes per round. */
const LIST_FILTER_READ = 200;

/**
 * The layout of the state this store reads and writes, kept in `{prefix}:schema`
 * (docs/architecture.md, "Where state lives"). Any other layout is refused at start
 * (openSchema): there are no readers of older layouts.
 */
export const STATE_SCHEMA = 6;

/** How a store found the layout under its prefix (AnchorStore.openSchema): `fresh` (no `:schema`), `current`; `recorded`: the schema key was written. */
export type SchemaOpening = { found: 'fresh' | 'current'; recorded: boolean };

/** One subject to accept: what the accept script stores. */
export interface AcceptSubject {
  key: string;
  kind: string;
  envelopeCanonical: string;
  /** The envelope envelopeCanonical is the canonical JSON of, as the intake built it (its claims are kept without reading the text back); absent, the text is read. */
  envelope?: Envelope | undefined;
  digest: string;
  /** Fingerprint of the subject's root (the envelope without anchored_at): same key + other fp = conflict. */
  fingerprint: string;
  nostrEvent?: { id: string; json: string } | undefined;
}

/** What every subject of one accept call shares. */
export interface AcceptTargets {
  witnesses: readonly WitnessName[];
  /** Witness batchers the subject enters. */
  inboxes: readonly WitnessName[];
}

export interface AcceptInput extends AcceptSubject, AcceptTargets {}

export type AcceptResult =
  | { result: 'created' }
  /** Already accepted with this root; its Nostr event (envelope mode), if any. */
  | { result: 'duplicate'; digest: string; nostrEventId: string | null }
  /** Accepted with another root: refused, and recorded in that subject's history (`reason`). */
  | { result: 'conflict'; digest: string; reason: string };

export interface AcceptManyResult {
  /** One per subject, in order. */
  results: AcceptResult[];
  /** Each inbox's length after the last new subject went in; absent when none went in. */
  inboxLengths: Partial<Record<WitnessName, number>>;
}

/** Most subjects and envelope bytes per accept call: bounds how long one script holds Redis. */
export const ACCEPT_CHUNK = { subjects: 250, bytes: 1024 * 1024 } as const;

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
  private readonly now: () => number;
  /**
   * The anchor log's keys when accept sequences into it (log.enabled; docs/log.md): each
   * subject created is appended in the same script call that accepts it.
   */
  logKeys: LogKeys | null = null;

  constructor(redis: Redis, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.keys = new StateKeys(prefix);
    this.now = now;
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
    return scriptCommand(this.redis, script)(String(keys.length), ...keys, ...args.map((a) => (Buffer.isBuffer(a) ? a : String(a))));
  }

  async accept(input: AcceptInput): Promise<AcceptResult> {
    const { witnesses, inboxes, ...subject } = input;
    return (await this.acceptMany({ witnesses, inboxes }, [subject])).results[0]!;
  }

  /**
   * Accepts many subjects, one script call per chunk (ACCEPT_CHUNK), each subject on its own
   * terms: new ones are stored, the same root again is a duplicate, another root under a known
   * key is a conflict recorded in that subject's history. Safe to repeat: a second call
   * accepts nothing twice.
   */
  async acceptMany(targets: AcceptTargets, subjects: readonly AcceptSubject[]): Promise<AcceptManyResult> {
    const results: AcceptResult[] = [];
    const inboxLengths: Partial<Record<WitnessName, number>> = {};
    for (let i = 0; i < subjects.length; ) {
      let bytes = 0;
      let j = i;
      while (j < subjects.length && j - i < ACCEPT_CHUNK.subjects && (j === i || bytes + subjects[j]!.envelopeCanonical.length <= ACCEPT_CHUNK.bytes)) {
        bytes += subjects[j]!.envelopeCanonical.length;
        j++;
      }
      const chunk = subjects.slice(i, j);
      const res = await this.acceptChunk(targets, chunk);
      results.push(...res.results);
      Object.assign(inboxLengths, res.inboxLengths);
      i = j;
    }
    return { results, inboxLengths };
  }

  private async acceptChunk(targets: AcceptTargets, chunk: readonly AcceptSubject[]): Promise<AcceptManyResult> {
    const now = this.now();
    const k = this.keys;
    const keys = [k.events, k.counts, k.byStatus('pending'), k.byStatus('rejected'), ...targets.witnesses.map((w) => k.byWitness(w, 'pending')), ...targets.inboxes.map((w) => k.inbox(w))];
    // the call's stream tokens, when every key is a canonical UUID (stream-entries.ts)
    const tokens: string[] = [];
    for (const s of chunk) {
      const kt = keyToken(s.key);
      const dt = digestToken(s.digest);
      if (kt === null || dt === null) break;
      tokens.push(kt + dt);
    }
    const args: Array<string | number | Buffer> = [now, nowIso(now), EVENTS_MAXLEN, targets.witnesses.join(','), targets.inboxes.length, tokens.length === chunk.length ? tokens.join('') : ''];
    for (const s of chunk) {
      keys.push(k.subject(s.key), k.envelope(s.key), k.history(s.key), s.nostrEvent ? k.event(s.nostrEvent.id) : k.subject(s.key));
      // no own event: the envelope kept as its claims in the hash when they fit (rebuilt when read)
      const claims = s.nostrEvent ? null : claimFields(s.envelope ?? envelopeOfCanonical(s.envelopeCanonical), s.key, now);
      args.push(s.key, s.kind, claims ? '' : s.envelopeCanonical, s.digest, packHash(s.fingerprint), s.nostrEvent ? packHash(s.nostrEvent.id) : '', s.nostrEvent?.json ?? '', packHash(s.digest), claims ?? '');
    }
    if (this.logKeys) keys.push(this.logKeys.size, this.logKeys.index, this.logKeys.tail);
    keys.push(k.eventTally);
    const flat = (await this.run(ACCEPT, keys, args)) as Array<string | number>;
    const results: AcceptResult[] = chunk.map((_s, i) => {
      const [result, digest, third] = [String(flat[3 * i]), String(flat[3 * i + 1] ?? ''), String(flat[3 * i + 2] ?? '')];
      if (result === 'created') return { result: 'created' };
      if (result === 'duplicate') return { result: 'duplicate', digest, nostrEventId: third === '' ? null : third };
      return { result: 'conflict', digest, reason: third };
    });
    const inboxLengths: Partial<Record<WitnessName, number>> = {};
    targets.inboxes.forEach((w, i) => {
      const n = Number(flat[3 * chunk.length + i]);
      if (n >= 0) inboxLengths[w] = n;
    });
    return { results, inboxLengths };
  }

  /** Records a refused job (`rejected`) or a conflicting one (`conflict`) with its reason. */
  async reject(key: string, reason: string, code: 'rejected' | 'conflict' = 'rejected'): Promise<void> {
    const now = this.now();
    await this.run(REJECT, [this.keys.subject(key), this.keys.history(key), this.keys.events, this.keys.counts, this.keys.byStatus('rejected'), this.keys.eventTally], [
      key,
      reason,
      now,
      nowIso(now),
      EVENTS_MAXLEN,
      code,
    ]);
  }

  async setWitness(key: string, witness: WitnessName, status: WitnessStatus, progress: number, detail = ''): Promise<WitnessChange> {
    return (await this.setWitnessMany([key], witness, status, progress, detail))[0]!;
  }

  /**
   * The same transition for many subjects: one set-witness.lua call per WITNESS_CHUNK
   * subjects, which moves the indexes and counts once for all of them. With `batch` (the
   * subjects are that batch's, in the caller's words), the transition is recorded once on the
   * batch's transition list instead of in every subject's history (history() merges
   * them); subjects that did not take it are marked so in their hash.
   */
  async setWitnessMany(keys: readonly string[], witness: WitnessName, status: WitnessStatus, progress: number, detail = '', batch?: string): Promise<WitnessChange[]> {
    const out: WitnessChange[] = [];
    const now = this.now();
    const k = this.keys;
    const token = batch === undefined ? '' : randomBytes(6).toString('hex');
    const shared = [
      k.events,
      ...(['pending', 'partial', 'failed'] as const).map((st) => k.byWitness(witness, st)),
      ...WITNESS_STATUSES.map((st) => k.byStatus(st)),
      k.meta,
      k.timeline(Math.floor(now / 60_000)),
      k.counts,
      batch === undefined ? k.meta : k.batchHistory(witness, batch),
    ];
    // batch subjects that took no entry before the call's entry existed: marked once it does
    const unmarked: string[] = [];
    let entry = -1;
    for (let i = 0; i < keys.length; i += WITNESS_CHUNK) {
      const chunk = keys.slice(i, i + WITNESS_CHUNK);
      const res = (await this.run(SET_WITNESS, [...shared, ...chunk.flatMap((key) => [k.subject(key), k.history(key)]), k.eventTally], [witness, status, progress, now, nowIso(now), detail, EVENTS_MAXLEN, token, WITNESSES.join(','), keyTokens(chunk), ...chunk])) as Array<number | string>;
      for (let j = 0; j < chunk.length; j++) {
        const outcome = Number(res[3 * j]);
        if (outcome === 3) unmarked.push(chunk[j]!);
        out.push({ changed: outcome === 1, overall: String(res[3 * j + 1]), createdMs: Number(res[3 * j + 2]) });
      }
      // the call's entry, once a chunk made or found it (a later chunk never forgets it)
      entry = Math.max(entry, Number(res[3 * chunk.length]));
    }
    if (entry >= 0 && unmarked.length > 0) {
      const pipe = this.redis.pipeline();
      for (const key of unmarked) pipe.hset(k.subject(key), `hx:${witness}:${entry}`, '1');
      for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
    }
    return out;
  }

  /**
   * Removes confirmed subjects (retention: only once each one's proof is held elsewhere) with
   * their envelope, history, own Nostr event and index entries, 100 per script call, and then
   * the batches that no longer hold any subject in Redis (dropEmptiedBatches). A subject not
   * confirmed, or whose event or batch links changed since they were read, is left alone.
   * Returns the keys removed. Safe to repeat.
   */
  async forget(keys: readonly string[]): Promise<string[]> {
    const k = this.keys;
    const removed: string[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      const chunk = keys.slice(i, i + 100);
      // the event id as stored (32 bytes, passed back as they are), the batch ids as text
      const links = await Promise.all(chunk.map((key) => this.redis.hmgetBuffer(k.subject(key), 'nostr:event', 'nostr:batch', 'ots:batch')));
      const scriptKeys = [k.counts, ...SUBJECT_STATUSES.map((st) => k.byStatus(st)), k.meta, k.events, k.nostrRecent, k.emptiedBatches('nostr'), k.emptiedBatches('ots')];
      const now = this.now();
      const args: Array<string | Buffer> = [nowIso(now), String(EVENTS_MAXLEN), WITNESSES.join(',')];
      chunk.forEach((key, j) => {
        const [evRaw, nb, ob] = links[j]!;
        const ev = evRaw ? hashValue(evRaw) : '';
        const [nostrBatch, otsBatch] = [nb?.toString() ?? '', ob?.toString() ?? ''];
        const s = k.subject(key);
        scriptKeys.push(s, k.envelope(key), k.history(key), ev ? k.event(ev) : s, nostrBatch ? k.batch('nostr', nostrBatch) : s, otsBatch ? k.batch('ots', otsBatch) : s);
        args.push(key, evRaw ?? '', nostrBatch, otsBatch);
      });
      scriptKeys.push(k.eventTally);
      const res = (await this.run(FORGET, scriptKeys, args)) as number[];
      chunk.forEach((key, j) => {
        if (Number(res[j]) === 1) removed.push(key);
      });
    }
    if (removed.length > 0) await this.dropEmptiedBatches();
    return removed;
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

  async getRecord(key: string): Promise<SubjectRecord | null> {
    return (await this.getRecords([key]))[0] ?? null;
  }

  /**
   * The subjects' records, null for an unknown key. With `envelopes: false` (list pages, which
   * show none) each record's envelopeCanonical is null: no envelope is read, rebuilt or hashed.
   */
  async getRecords(keys: readonly string[], opts: { envelopes?: boolean } = {}): Promise<Array<SubjectRecord | null>> {
    if (keys.length === 0) return [];
    const envelopes = opts.envelopes ?? true;
    const per = envelopes ? 2 : 1;
    const pipe = this.redis.pipeline();
    for (const k of keys) {
      pipe.hgetallBuffer(this.keys.subject(k));
      if (envelopes) pipe.get(this.keys.envelope(k));
    }
    const res = (await pipe.exec()) ?? [];
    const records = keys.map((key, i) => {
      const [herr, h] = res[per * i] ?? [null, {}];
      const [eerr, envelope] = (envelopes ? res[per * i + 1] : null) ?? [null, null];
      if (herr) throw herr;
      if (eerr) throw eerr;
      const hash = subjectFields(h as Record<string, Buffer>);
      if (!hash.status) return null;
      if (!envelopes) return toRecord(key, hash, null);
      return toRecord(key, hash, (envelope as string | null) ?? envelopeOfClaims(key, hash, h as Record<string, Buffer>));
    });
    if (!envelopes) return records;
    // A subject with its own Nostr event keeps its envelope only there (the event's content).
    const fromEvent = records.filter((r): r is SubjectRecord => r !== null && r.envelopeCanonical === null && r.nostrEventId !== null && r.status !== 'rejected');
    if (fromEvent.length > 0) {
      const evPipe = this.redis.pipeline();
      for (const r of fromEvent) evPipe.hget(this.keys.event(r.nostrEventId!), 'json');
      const evRes = (await evPipe.exec()) ?? [];
      fromEvent.forEach((r, i) => {
        const [err, json] = evRes[i] ?? [null, null];
        if (err) throw err;
        r.envelopeCanonical = json === null ? null : eventContent(json as string);
      });
    }
    return records;
  }

  /**
   * What intake checks before queueing: per key, the stored root fingerprint, overall status
   * and digest (nulls for an unknown key). One round trip.
   */
  async intakeStates(keys: readonly string[]): Promise<Array<{ fingerprint: string | null; status: string | null; digest: string | null }>> {
    if (keys.length === 0) return [];
    const pipe = this.redis.pipeline();
    for (const k of keys) pipe.hmgetBuffer(this.keys.subject(k), 'fp', 'status', 'digest');
    const res = (await pipe.exec()) ?? [];
    return keys.map((_k, i) => {
      const [err, values] = res[i] ?? [null, []];
      if (err) throw err;
      const [fp, status, digest] = values as Array<Buffer | null>;
      return { fingerprint: fp ? hashValue(fp) : null, status: status ? status.toString() : null, digest: digest ? hashValue(digest) : null };
    });
  }

  /** The batch of `witness` the subject is in, or null when it is in none (yet). */
  async batchOf(key: string, witness: WitnessName): Promise<string | null> {
    return this.redis.hget(this.keys.subject(key), `${witness}:batch`);
  }

  /** The oldest subject (by acceptance) whose overall status is one of `statuses`, or null. */
  async oldestWithStatus(statuses: readonly string[]): Promise<{ key: string; ms: number } | null> {
    let best: { key: string; ms: number } | null = null;
    for (const status of statuses) {
      const [key, score] = await this.redis.zrange(this.keys.byStatus(status), 0, 0, 'WITHSCORES');
      if (key !== undefined && score !== undefined && (best === null || Number(score) < best.ms)) best = { key, ms: Number(score) };
    }
    return best;
  }

  /** Retention: up to `limit` confirmed subjects accepted before `beforeMs`, oldest first. */
  async confirmedBefore(beforeMs: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.byStatus('confirmed'), '-inf', `(${beforeMs}`, 'LIMIT', 0, limit);
  }

  /**
   * The subject's history, oldest first: its own entries (h:<key>: accepted, rejected,
   * conflict, and witness transitions made for it alone) merged by time with the transitions
   * of its batches (bh:<witness>:<id>) that applied to it. A batch entry carries no
   * overall status; it is derived by replaying the witness statuses from the subject's own
   * entries and the batch entries before it (the rule of SPEC §4.3, as set-witness.lua
   * applies it). On a tie of time, the subject's own entries come first.
   */
  async history(key: string): Promise<HistoryEntry[]> {
    const k = this.keys;
    const [[oerr, own], [herr, raw]] = ((await this.redis.pipeline().lrange(k.history(key), 0, -1).hgetallBuffer(k.subject(key)).exec()) ?? []) as Array<[Error | null, unknown]> as [[Error | null, string[]], [Error | null, Record<string, Buffer>]];
    if (oerr) throw oerr;
    if (herr) throw herr;
    const hash = subjectFields(raw);
    const entries = own.map((t) => JSON.parse(t) as HistoryEntry);
    // The acceptance is the hash's (its time and digest), first, unless the list has one (a
    // subject refused before it was accepted: accept.lua writes it after the refusals).
    if (hash.status && hash.status !== 'rejected' && !entries.some((e) => e.event === 'accepted')) {
      entries.unshift({ at: nowIso(Number(hash.created ?? 0)), status: 'pending', event: 'accepted', ...(hash.digest !== undefined ? { digest: hash.digest } : {}) });
    }
    const witnesses = witnessesOf(hash);
    const linked = witnesses.flatMap((w) => (hash[`${w}:batch`] ? [{ w, id: hash[`${w}:batch`]! }] : []));
    if (linked.length === 0) return entries;
    const pipe = this.redis.pipeline();
    for (const { w, id } of linked) pipe.lrange(k.batchHistory(w, id), 0, -1);
    const res = (await pipe.exec()) ?? [];
    const fromBatches: Array<HistoryEntry & { ms: number }> = [];
    linked.forEach(({ w }, i) => {
      const [err, list] = res[i] ?? [null, []];
      if (err) throw err;
      (list as string[]).forEach((t, n) => {
        if (hash[`hx:${w}:${n}`] !== undefined) return;
        const e = JSON.parse(t) as { at: string; ms: number; witness: string; from: string; to: string; detail?: string };
        fromBatches.push({ at: e.at, event: 'witness', witness: e.witness, from: e.from, to: e.to, ...(e.detail !== undefined ? { detail: e.detail } : {}), ms: e.ms });
      });
    });
    if (fromBatches.length === 0) return entries;
    fromBatches.sort((a, b) => a.ms - b.ms);
    // merge by time, the subject's own entries first on a tie
    const merged: Array<HistoryEntry & { derived?: boolean }> = [];
    let i = 0;
    for (const b of fromBatches) {
      while (i < entries.length && entries[i]!.at <= b.at) merged.push(entries[i++]!);
      const { ms: _ms, ...rest } = b;
      merged.push({ ...rest, derived: true });
    }
    while (i < entries.length) merged.push(entries[i++]!);
    // the overall status after each batch entry, replayed from the witness statuses
    const state = new Map<string, string>(witnesses.map((w) => [w, 'pending']));
    return merged.map(({ derived, ...e }) => {
      if (e.event === 'accepted') for (const w of witnesses) state.set(w, 'pending');
      if (e.event === 'witness' && e.witness && e.to) state.set(e.witness, e.to);
      if (!derived) return e;
      return { at: e.at, event: e.event, witness: e.witness, from: e.from, to: e.to, status: overallOf(witnesses.map((w) => state.get(w) ?? 'pending')), ...(e.detail !== undefined ? { detail: e.detail } : {}) } as HistoryEntry;
    });
  }

  /**
   * Newest first: (acceptance time, key) descending, keys in byte order (list-position.ts).
   * The cursor is the position of the last subject looked at. A status alone reads
   * idx:st:<status>; no filter merges every status index; a witness reads its index
   * (pending, partial, failed) or, for confirmed, idx:st:confirmed and :partial filtered by the
   * witness's status. Each read of the indexes is one list-page.lua call, so a subject moving
   * between them is in one of them for that read: paging to the end gives no subject twice and
   * every subject listed by the query for the whole paging (docs/http.md, "Paging"). A filtered
   * page looks at a bounded number of subjects, so it may come back short with a `next` to go
   * on from.
   */
  async list(q: ListQuery): Promise<{ keys: string[]; next: string | null }> {
    const page = await this.listPositions(q);
    return { keys: page.items.map(([, key]) => key), next: page.next };
  }

  /** `list` with each key's position (acceptance time ms, key): what ShardedStore merges shards by. */
  async listPositions(q: ListQuery): Promise<{ items: Position[]; next: string | null }> {
    const k = this.keys;
    const status = q.witness ? (q.status ?? 'pending') : q.status;
    let indexes: string[];
    let filter: ((keys: string[]) => Promise<boolean[]>) | null = null;
    if (q.witness && status === 'confirmed') {
      const w = q.witness;
      indexes = [k.byStatus('confirmed'), k.byStatus('partial')];
      filter = async (keys) => {
        const pipe = this.redis.pipeline();
        for (const key of keys) pipe.hget(k.subject(key), `w:${w}`);
        const res = (await pipe.exec()) ?? [];
        return res.map(([err, v]) => {
          if (err) throw err;
          return v === 'confirmed';
        });
      };
    } else if (q.witness) indexes = [k.byWitness(q.witness, status!)];
    else if (status) indexes = [k.byStatus(status)];
    else indexes = SUBJECT_STATUSES.map((st) => k.byStatus(st));
    const after: Position | null = q.cursor ? decodeCursor(q.cursor) : null;
    const out: Position[] = [];
    let last: Position | null = after;
    for (let round = 0; round < LIST_ROUNDS; round++) {
      const page = await this.newestAfter(indexes, last, filter ? LIST_FILTER_READ : q.limit - out.length);
      const keep = filter ? await filter(page.items.map(([, key]) => key)) : page.items.map(() => true);
      for (let i = 0; i < page.items.length; i++) {
        if (out.length === q.limit) return { items: out, next: encodeCursor(last!) };
        last = page.items[i]!;
        if (keep[i]) out.push(last);
      }
      if (!page.more) return { items: out, next: null };
      if (out.length === q.limit) return { items: out, next: encodeCursor(last!) };
    }
    return { items: out, next: last && last !== after ? encodeCursor(last) : null };
  }

  /**
   * Up to `n` members of the indexes after `after` in list order, merged, from one
   * list-page.lua call (one moment of the state); `more`: members past the last one returned
   * are left.
   */
  private async newestAfter(indexes: readonly string[], after: Position | null, n: number): Promise<{ items: Position[]; more: boolean }> {
    const flat = (await this.run(LIST_PAGE, [...indexes], [n, after ? String(after[0]) : '', after ? after[1] : ''])) as Array<number | string[]>;
    const all: Position[] = [];
    let left = 0;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      left += Number(flat[i]);
      const page = flat[i + 1] as string[];
      for (let j = 0; j + 1 < page.length; j += 2) all.push([Number(page[j + 1]), page[j]!]);
    }
    all.sort(listOrder);
    // a key in two indexes at one position (never written so: a hand-edited Redis) is listed once
    const items: Position[] = [];
    for (const item of all) {
      if (items.length === n) break;
      if (items.length === 0 || items[items.length - 1]![1] !== item[1]) items.push(item);
    }
    return { items, more: left > items.length };
  }

  /** Subjects per overall status, from the counts the scripts keep (one round trip). */
  async countByStatus(): Promise<Record<string, number>> {
    const values = await this.redis.hmget(this.keys.counts, ...SUBJECT_STATUSES.map((s) => `st:${s}`));
    return Object.fromEntries(SUBJECT_STATUSES.map((s, i) => [s, Math.max(0, Number(values[i] ?? 0))]));
  }

  /** Every subject the state holds, rejected ones included. */
  async subjectCount(): Promise<number> {
    return Object.values(await this.countByStatus()).reduce((a, b) => a + b, 0);
  }

  async countByWitness(witnesses: readonly WitnessName[]): Promise<Record<string, Record<string, number>>> {
    const fields = witnesses.flatMap((w) => WITNESS_STATUSES.map((s) => `w:${w}:${s}`));
    const values = fields.length > 0 ? await this.redis.hmget(this.keys.counts, ...fields) : [];
    const out: Record<string, Record<string, number>> = {};
    let i = 0;
    for (const w of witnesses) {
      out[w] = {};
      for (const s of WITNESS_STATUSES) out[w]![s] = Math.max(0, Number(values[i++] ?? 0));
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

  /**
   * The timeline's minutes `first`..`last` (epoch minutes), oldest first: subjects accepted in
   * each (`received`: every status index, a subject being in one; `rejected`) and, per series
   * (`subject` or a witness), the confirmations counted in it with their summed and longest
   * time to confirm (set-witness.lua's `tl:<minute>` hashes). One round trip.
   */
  async timelineMinutes(first: number, last: number, series: readonly string[]): Promise<Array<{ minute: number; received: number; rejected: number; confirmed: Record<string, { count: number; sumMs: number; maxMs: number }> }>> {
    const k = this.keys;
    const pipe = this.redis.pipeline();
    for (let m = first; m <= last; m++) {
      const from = m * 60_000;
      for (const st of SUBJECT_STATUSES) pipe.zcount(k.byStatus(st), from, `(${from + 60_000}`);
      pipe.hgetall(k.timeline(m));
    }
    const res = (await pipe.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    const per = SUBJECT_STATUSES.length + 1;
    const out = [];
    for (let i = 0, m = first; m <= last; m++, i += per) {
      const h = (res[i + per - 1]?.[1] ?? {}) as Record<string, string>;
      const confirmed: Record<string, { count: number; sumMs: number; maxMs: number }> = {};
      for (const s of series) confirmed[s] = { count: Number(h[`n:${s}`] ?? 0), sumMs: Number(h[`t:${s}`] ?? 0), maxMs: Number(h[`m:${s}`] ?? 0) };
      const received = SUBJECT_STATUSES.reduce((n, _st, j) => n + Number(res[i + j]?.[1] ?? 0), 0);
      const rejected = Number(res[i + SUBJECT_STATUSES.indexOf('rejected')]?.[1] ?? 0);
      out.push({ minute: m, received, rejected, confirmed });
    }
    return out;
  }

  async lastConfirmed(witness: WitnessName): Promise<number | null> {
    const v = await this.redis.hget(this.keys.meta, `last_confirmed:${witness}`);
    return v === null ? null : Number(v);
  }

  /**
   * One page of the subjects whose `witness` is in `status`, oldest first, accepted before
   * `acceptedBeforeMs`, each with its batch of that witness and its own Nostr event (null:
   * none). Resumes after `cursor` (from the previous page; null: from the start); `next` is
   * null once the index is walked.
   */
  async scanWitness(witness: WitnessName, status: string, cursor: string | null, limit: number, acceptedBeforeMs: number): Promise<{ items: Array<{ key: string; batchId: string | null; eventId: string | null }>; next: string | null }> {
    const fields = [`${witness}:batch`, 'nostr:event'];
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
    for (const [k] of kept) pipe.hmgetBuffer(this.keys.subject(k), ...fields);
    const res = kept.length > 0 ? ((await pipe.exec()) ?? []) : [];
    return {
      items: kept.map(([key], i) => {
        const [err, values] = res[i] ?? [null, []];
        if (err) throw err;
        const [batchId, eventId] = values as Array<Buffer | null>;
        return { key, batchId: batchId ? batchId.toString() : null, eventId: eventId ? hashValue(eventId) : null };
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

  /**
   * NIP-03: event ids whose batch's event tree was fixed without them (kept with the time first
   * noted). Each is noted once in its life (note-late.lua): one a later batch took is not noted again.
   */
  async addLateNip03Events(eventIds: readonly string[]): Promise<void> {
    const now = Date.now();
    for (let i = 0; i < eventIds.length; i += 1000) {
      const chunk = eventIds.slice(i, i + 1000);
      await this.run(NOTE_LATE, [this.keys.nip03Late, ...chunk.map((e) => this.keys.event(e))], [now, ...chunk]);
    }
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

type ScriptFn = (...args: Array<string | Buffer>) => Promise<unknown>;
type Commander = Redis | ReturnType<Redis['pipeline']>;

/**
 * Proposals of a batch cut before giving up for this tick. A proposal loses only to another
 * daemon's cut that landed first, so with two cutters each try is at worst a coin toss.
 */
const CUT_TRIES = 32;

function commandName(script: LuaScript): string {
  return `aer1_${script.name.replace(/-/g, '_')}`;
}

/**
 * Defines every script as an ioredis custom command (EVALSHA, reloaded after a Redis restart).
 * The number of keys varies per call (accept and cut-batch take lists), so it is the first argument.
 */
function defineScripts(redis: Redis): void {
  const defined = redis as unknown as Record<string, unknown>;
  for (const script of SCRIPTS) {
    const name = commandName(script);
    if (typeof defined[name] !== 'function') redis.defineCommand(name, { lua: script.lua });
  }
}

/** A defined script on a connection or a pipeline created after defineScripts. */
function scriptCommand(target: Commander, script: LuaScript): ScriptFn {
  const fn = (target as unknown as Record<string, ScriptFn | undefined>)[commandName(script)];
  if (!fn) throw new Error('script not defined on this connection');
  return fn.bind(target);
}

/** The keys' stream tokens concatenated (set-witness.lua's ARGV[10]), or '' when one of them has none. */
function keyTokens(keys: readonly string[]): string {
  let out = '';
  for (const key of keys) {
    const t = keyToken(key);
    if (t === null) return '';
    out += t;
  }
  return out;
}

/** The overall status from every witness's (SPEC §4.3; set-witness.lua computes the same). */
function overallOf(statuses: readonly string[]): string {
  if (statuses.length > 0 && statuses.every((s) => s === 'confirmed')) return 'confirmed';
  if (statuses.length > 0 && statuses.every((s) => s === 'failed')) return 'failed';
  if (statuses.some((s) => s === 'partial' || s === 'confirmed')) return 'partial';
  return 'pending';
}

/**
 * The subject-hash fields that keep an envelope's claims (core/envelope/compact.ts), by the
 * member they keep: each value at most 64 bytes, so the hash stays a listpack.
 */
const CLAIM_FIELDS: Readonly<Record<string, string>> = {
  at: '$at',
  output_sha256: '$o',
  evidence_sha256: '$es',
  evidence_byte_length: '$el',
  evidence_url: '$eu',
  workflow_id: '$wf',
  merkle_root: '$mr',
  merkle_version: '$mv',
  step_count: '$sc',
  final_entry_digest: '$fd',
  entry_count: '$ec',
};
const CLAIM_MEMBERS: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(CLAIM_FIELDS).map(([m, f]) => [f, m]));

/** A signed event's `content` (a subject's own event carries its envelope), or null when the JSON does not hold one. */
function eventContent(json: string): string | null {
  try {
    const ev = JSON.parse(json) as { content?: unknown };
    return typeof ev.content === 'string' ? ev.content : null;
  } catch {
    return null;
  }
}

/**
 * The envelope of the subject `key` accepted at `createdMs` as accept.lua's claims argument
 * (pairs of field and value, each one length byte then its bytes), or null when its claims do
 * not fit the hash (it is then stored as text, under e:<key>).
 */
function claimFields(envelope: object | null, key: string, createdMs: number): Buffer | null {
  if (envelope === null) return null;
  const members = packEnvelope(envelope, key, createdMs);
  if (!members) return null;
  const parts: Buffer[] = [];
  for (const [member, value] of members) {
    const field = CLAIM_FIELDS[member];
    if (field === undefined) return null;
    parts.push(Buffer.from([field.length]), Buffer.from(field), Buffer.from([value.length]), value);
  }
  return parts.length > 0 ? Buffer.concat(parts) : null;
}

/**
 * The envelope rebuilt from the claims its hash keeps, checked against its digest; null when
 * the hash keeps none (its envelope is under e:<key> or in its own event). A rebuilt text
 * whose SHA-256 is not the digest is an error naming the subject, never another envelope.
 */
function envelopeOfClaims(key: string, hash: Record<string, string>, raw: Record<string, Buffer>): string | null {
  const members: CompactMembers = new Map();
  for (const [f, v] of Object.entries(raw)) {
    const m = CLAIM_MEMBERS[f];
    if (m !== undefined) members.set(m, v);
  }
  if (members.size === 0) return null;
  let text: string;
  try {
    text = unpackEnvelope(hash.kind ?? '', key, members, Number(hash.created ?? 0));
  } catch (err) {
    throw new Error(`subject ${key}: its envelope cannot be rebuilt from the claims stored with it (${(err as Error).message})`);
  }
  if (sha256Hex(text) !== hash.digest) {
    throw new Error(`subject ${key}: the envelope rebuilt from the claims stored with it has digest ${sha256Hex(text)}, not the stored ${hash.digest ?? '(none)'}`);
  }
  return text;
}


/** A digest, fingerprint or event id (64 lowercase hex characters, as intake makes them) as the subject hash keeps it: its 32 bytes. */
function packHash(hex: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`not a 32-byte hex digest: ${JSON.stringify(hex.slice(0, 70))}`);
  return Buffer.from(hex, 'hex');
}

/** A stored digest, fingerprint or event id (32 bytes) as hex. */
function hashValue(v: Buffer): string {
  return v.toString('hex');
}

/** The subject hash fields kept as 32 bytes. */
const BINARY_FIELDS = new Set(['digest', 'fp', 'nostr:event']);

/** A subject hash read as Buffers, as text: its digest, fingerprint and event id as hex (hashValue). */
function subjectFields(raw: Record<string, Buffer>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(raw)) out[f] = BINARY_FIELDS.has(f) ? hashValue(v) : v.toString();
  return out;
}

/** A subject's witnesses: those it has a `w:<witness>` status for, in WITNESSES order. */
function witnessesOf(h: Record<string, string>): WitnessName[] {
  return WITNESSES.filter((w) => h[`w:${w}`] !== undefined);
}

/** A time field kept as ms since `created`, as epoch ms; null when absent. */
function sinceCreated(created: number, v: string | undefined): number | null {
  return v === undefined || v === '' ? null : created + Number(v);
}

function toRecord(key: string, h: Record<string, string>, envelope: string | null): SubjectRecord {
  const witnesses: SubjectRecord['witnesses'] = {};
  const batches: SubjectRecord['batches'] = {};
  const created = Number(h.created ?? 0);
  for (const w of witnessesOf(h)) {
    const st = h[`w:${w}`];
    if (st) witnesses[w] = { status: st as WitnessStatus, confirmedMs: sinceCreated(created, h[`c:${w}`]) };
    const b = h[`${w}:batch`];
    if (b) batches[w] = { id: b, index: Number(h[`${w}:i`] ?? 0) };
  }
  return {
    key,
    kind: h.kind ?? null,
    status: h.status as SubjectStatus,
    envelopeCanonical: envelope,
    digest: h.digest ?? null,
    createdMs: created,
    // `u` (ms since `created`) is written once something changed; absent, it reads as `created`
    updatedMs: sinceCreated(created, h.u) ?? created,
    reason: h.reason ?? null,
    witnesses,
    nostrEventId: h['nostr:event'] ?? null,
    batches,
  };
}
