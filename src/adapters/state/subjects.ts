/**
 * SubjectStore: every subject's record in Redis: accept and reject, witness moves, forget
 * (retention), and the reads of one subject (its record, history, batch, what intake checks).
 * Its scripts (accept, reject, set-witness, forget) keep the indexes and counts in step and
 * add each change to the change stream (changes.ts) in the same call.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient as Redis } from '../redis/connection.js';
import { WITNESSES, type StateKeys, type WitnessName } from './keys.js';
import { digestToken, keyToken } from './stream-entries.js';
import { DIR, HISTORY_LIB, STREAM_LIB, defineScripts, load, runScript, type LuaScript } from './scripts.js';
import { WITNESS_STATUSES } from '../../core/proof/format.js';
import type { WitnessStatus } from '../../core/proof/format.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import { envelopeOfCanonical } from '../../core/envelope/compact.js';
import type { Envelope } from '../../core/envelope/envelope.js';
import type { LogKeys } from '../log/log-sequencer.js';
import { EVENTS_MAXLEN } from './changes.js';
import { detailRelays, historyOf, packDetail } from './history-entries.js';
import { NostrRegistry } from './nostr-registry.js';
import { RebuiltEvents } from './events.js';
import type { SignedEvent } from '../../core/nostr/events.js';
import { SUBJECT_STATUSES, claimFields, envelopeOfClaims, hashValue, packHash, subjectFields, toRecord, witnessesOf, type HistoryEntry, type SubjectRecord } from './subject-hash.js';

/** Accepts one or many subjects (intake of single-subject and bulk jobs); records conflicts. */
export const ACCEPT = load(DIR, 'accept', STREAM_LIB + HISTORY_LIB);
/** Records a refused job without touching an accepted subject. */
export const REJECT = load(DIR, 'reject', STREAM_LIB + HISTORY_LIB);
/** One witness transition of many subjects, only forward. */
export const SET_WITNESS = load(DIR, 'set-witness', STREAM_LIB + HISTORY_LIB);
/** Retention: removes confirmed subjects whose proofs are archived, every trace of them. */
export const FORGET = load(DIR, 'forget', STREAM_LIB);

/** Subjects per set-witness.lua call: bounds how long one call holds Redis. */
const WITNESS_CHUNK = 250;


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
  /** Envelope mode: its own event, signed (its hash keeps the signature and signer; the event is rebuilt from the envelope). */
  nostrEvent?: SignedEvent | undefined;
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
  | { result: 'conflict'; digest: string; reason: string }
  /** Retired lean (the anchor log on): nothing written; the caller answers from its retired facts. */
  | { result: 'retired' };

export interface AcceptManyResult {
  /** One per subject, in order. */
  results: AcceptResult[];
  /** Each inbox's length after the last new subject went in; absent when none went in. */
  inboxLengths: Partial<Record<WitnessName, number>>;
}

/** Most subjects and envelope bytes per accept call: bounds how long one script holds Redis. */
export const ACCEPT_CHUNK = { subjects: 250, bytes: 1024 * 1024 } as const;


export interface WitnessChange {
  changed: boolean;
  overall: string;
  createdMs: number;
}


/** What intake and the producers check of a key before queueing it (nulls for an unknown key). */
export interface IntakeState {
  fingerprint: string | null;
  status: string | null;
  digest: string | null;
}

/** Where a producer reads what it checks before queueing: SubjectStore, or the package's AnchorStatusReader. */
export interface KnownSubjects {
  intakeStates(keys: readonly string[]): Promise<IntakeState[]>;
}

/** What forget hands the batches its subjects emptied to (BatchStore). */
export interface EmptiedBatches {
  dropEmptiedBatches(): Promise<number>;
}

function nowIso(ms: number): string {
  return formatAnchoredAt(new Date(ms));
}

export class SubjectStore implements KnownSubjects {
  /**
   * The anchor log's keys when accept sequences into it (log.enabled; docs/log.md): each
   * subject created is appended in the same script call that accepts it.
   */
  logKeys: LogKeys | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly keys: StateKeys,
    private readonly batches: EmptiedBatches,
    private readonly now: () => number = Date.now,
    private readonly registry: NostrRegistry = new NostrRegistry(redis, keys),
    private readonly rebuilt: RebuiltEvents = new RebuiltEvents(),
  ) {
    defineScripts(redis, [ACCEPT, REJECT, SET_WITNESS, FORGET]);
  }

  private run(script: LuaScript, keys: string[], args: Array<string | number | Buffer>): Promise<unknown> {
    return runScript(this.redis, script, keys, args);
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
      keys.push(k.subject(s.key), k.envelope(s.key), s.nostrEvent ? k.event(s.nostrEvent.id) : k.subject(s.key));
      // the envelope kept as its claims in the hash when they fit (rebuilt when read), its own event rebuilt from it
      const claims = claimFields(s.envelope ?? envelopeOfCanonical(s.envelopeCanonical), s.key, now);
      const ev = s.nostrEvent;
      const signer = ev ? String(await this.registry.signerNumber(ev)) : '';
      args.push(s.key, s.kind, claims ? '' : s.envelopeCanonical, s.digest, packHash(s.fingerprint), ev ? packHash(ev.id) : '', ev ? Buffer.from(ev.sig, 'hex') : '', signer, packHash(s.digest), claims ?? '');
    }
    if (this.logKeys) keys.push(this.logKeys.size, this.logKeys.index, this.logKeys.tail);
    keys.push(k.eventTally);
    const flat = (await this.run(ACCEPT, keys, args)) as Array<string | number>;
    const results: AcceptResult[] = chunk.map((_s, i): AcceptResult => {
      const [result, digest, third] = [String(flat[3 * i]), String(flat[3 * i + 1] ?? ''), String(flat[3 * i + 2] ?? '')];
      if (result === 'created') {
        // stored as signed here: the relays' drains need not rebuild it
        const ev = chunk[i]!.nostrEvent;
        if (ev) this.rebuilt.set(ev);
        return { result: 'created' };
      }
      if (result === 'duplicate') return { result: 'duplicate', digest, nostrEventId: third === '' ? null : third };
      if (result === 'retired') return { result: 'retired' };
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
    await this.run(REJECT, [this.keys.subject(key), this.keys.events, this.keys.counts, this.keys.byStatus('rejected'), this.keys.eventTally], [
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
   * them); subjects that did not take it are marked so in their hash. `relay`: the relay URL
   * the detail starts with, which a subject's own history keeps as its registry number.
   */
  async setWitnessMany(keys: readonly string[], witness: WitnessName, status: WitnessStatus, progress: number, detail = '', batch?: string, relay?: string): Promise<WitnessChange[]> {
    const out: WitnessChange[] = [];
    const own = packDetail(detail, relay === undefined ? undefined : { url: relay, n: (await this.registry.relayNumbers([relay]))[0]! });
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
      const res = (await this.run(SET_WITNESS, [...shared, ...chunk.map((key) => k.subject(key)), k.eventTally], [witness, status, progress, now, nowIso(now), detail, EVENTS_MAXLEN, token, WITNESSES.join(','), keyTokens(chunk), own, ...chunk])) as Array<number | string>;
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
   * `lean`: the subjects retired lean (with the anchor log on), each with its log:idx value
   * `<index>:<facts>` (src/adapters/log/retired-facts.ts), written in the same call; such a subject is left
   * alone unless its log:idx value is still its bare index. Returns the keys removed. Safe to repeat.
   */
  async forget(keys: readonly string[], lean: ReadonlyMap<string, Buffer> = new Map()): Promise<string[]> {
    const k = this.keys;
    const removed: string[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      const chunk = keys.slice(i, i + 100);
      // the event id as stored (32 bytes, passed back as they are), the batch ids as text
      const links = await Promise.all(chunk.map((key) => this.redis.hmgetBuffer(k.subject(key), 'nostr:event', 'nostr:batch', 'ots:batch')));
      const scriptKeys = [k.counts, ...SUBJECT_STATUSES.map((st) => k.byStatus(st)), k.meta, k.events, k.nostrRecent, k.emptiedBatches('nostr'), k.emptiedBatches('ots'), this.logKeys?.index ?? k.meta];
      const now = this.now();
      const args: Array<string | Buffer> = [nowIso(now), String(EVENTS_MAXLEN), WITNESSES.join(',')];
      chunk.forEach((key, j) => {
        const [evRaw, nb, ob] = links[j]!;
        const ev = evRaw ? hashValue(evRaw) : '';
        const [nostrBatch, otsBatch] = [nb?.toString() ?? '', ob?.toString() ?? ''];
        const s = k.subject(key);
        scriptKeys.push(s, k.envelope(key), ev ? k.event(ev) : s, nostrBatch ? k.batch('nostr', nostrBatch) : s, otsBatch ? k.batch('ots', otsBatch) : s);
        const value = lean.get(key);
        if (value && !this.logKeys) throw new Error('forget: a subject retired lean with the anchor log off');
        args.push(key, evRaw ?? '', nostrBatch, otsBatch, value ?? '');
      });
      scriptKeys.push(k.eventTally);
      const res = (await this.run(FORGET, scriptKeys, args)) as number[];
      chunk.forEach((key, j) => {
        if (Number(res[j]) === 1) removed.push(key);
      });
    }
    if (removed.length > 0) await this.batches.dropEmptiedBatches();
    return removed;
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
    return records;
  }

  /**
   * The envelope text and digest of each subject (null: gone, refused, or no envelope): its
   * hash, then the text under e:<key> for those whose hash keeps no claims. What a subject's
   * own Nostr event is rebuilt from (events.ts).
   */
  async envelopes(keys: readonly string[]): Promise<Array<{ canonical: string; digest: string } | null>> {
    const pipe = this.redis.pipeline();
    for (const key of keys) pipe.hgetallBuffer(this.keys.subject(key));
    const res = (await pipe.exec()) ?? [];
    const out: Array<{ canonical: string | null; digest: string } | null> = keys.map((key, i) => {
      const [err, raw] = res[i] ?? [null, {}];
      if (err) throw err;
      const hash = subjectFields(raw as Record<string, Buffer>);
      if (!hash.status || hash.status === 'rejected' || !hash.digest) return null;
      return { canonical: envelopeOfClaims(key, hash, raw as Record<string, Buffer>), digest: hash.digest };
    });
    const texts = keys.flatMap((key, i) => (out[i] && out[i]!.canonical === null ? [{ i, key }] : []));
    if (texts.length > 0) {
      const got = await this.redis.mget(...texts.map((t) => this.keys.envelope(t.key)));
      texts.forEach((t, j) => {
        out[t.i]!.canonical = got[j] ?? null;
      });
    }
    return out.map((e) => (e && e.canonical !== null ? { canonical: e.canonical, digest: e.digest } : null));
  }

  /**
   * What intake checks before queueing: per key, the stored root fingerprint, overall status
   * and digest (nulls for an unknown key). One round trip.
   */
  async intakeStates(keys: readonly string[]): Promise<IntakeState[]> {
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
    const hash = subjectFields(await this.redis.hgetallBuffer(k.subject(key)));
    const ns = detailRelays(hash);
    const found = ns.length > 0 ? await this.registry.relayUrls(ns) : [];
    const urls = new Map(ns.flatMap((n, i) => (found[i] ? [[n, found[i]!] as const] : [])));
    const entries = historyOf(hash, urls);
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
}

/** The keys' stream tokens concatenated (set-witness.lua's ARGV[10]), or '' when one of them has none. */
export function keyTokens(keys: readonly string[]): string {
  let out = '';
  for (const key of keys) {
    const t = keyToken(key);
    if (t === null) return '';
    out += t;
  }
  return out;
}

/** The overall status from every witness's (SPEC §4.3; set-witness.lua computes the same). */
export function overallOf(statuses: readonly string[]): string {
  if (statuses.length > 0 && statuses.every((s) => s === 'confirmed')) return 'confirmed';
  if (statuses.length > 0 && statuses.every((s) => s === 'failed')) return 'failed';
  if (statuses.some((s) => s === 'partial' || s === 'confirmed')) return 'partial';
  return 'pending';
}
