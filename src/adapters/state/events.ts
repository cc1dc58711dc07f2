/**
 * EventStore: the signed Nostr events in Redis (`{prefix}:ev:<id>`: the relays it was handed
 * to, each relay's report, the copy a relay was sent; a batch's or a NIP-03 event's JSON and
 * owner; a subject's own event only its subject, signature and signer, the event rebuilt from
 * the subject's envelope when read), a subject's link to its own event (set-subject-event.lua),
 * and the auto mode's count of events recently queued. The relay outboxes beside them
 * (nostr/relay-outbox.ts) run this family's outbox-add, outbox-take and set-relays scripts.
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { StateKeys } from './keys.js';
import { DIR, defineScripts, load, scriptCommand } from './scripts.js';
import { packHash } from './subject-hash.js';
import { decodeReport } from './relay-reports.js';
import type { NostrRegistry } from './nostr-registry.js';
import { rebuildEnvelopeEvent, serializeEvent, type SignedEvent } from '../../core/nostr/events.js';

/** Auto mode: links a subject's own event, first stored copy wins. */
export const SET_SUBJECT_EVENT = load(DIR, 'set-subject-event');
const REPORT_LIB = load(DIR, 'report-lib').lua;
/** Relay upkeep's walk (nostr/upkeep-state.ts): outbox-add puts an event handed over for the first time at its end. */
const KEPT_LIB = load(DIR, 'kept-lib').lua;
/** Nostr relay outboxes: hands events to the relays (outbox-add), the next group due on one relay (outbox-take). */
export const OUTBOX_ADD = load(DIR, 'outbox-add', REPORT_LIB + KEPT_LIB);
export const OUTBOX_TAKE = load(DIR, 'outbox-take');
/** One relay's reports on many events, never downgrading an acceptance. */
export const SET_RELAYS = load(DIR, 'set-relays', REPORT_LIB);

/** Subject events rebuilt (or signed here) held as JSON, by id: the relays' drains read each soon after another. */
const REBUILT_MAX = 4096;

/**
 * The JSON of subject events this process signed and stored or rebuilt, by id and signature
 * (a small LRU): an entry serves only the signature it was made with, so it is the event
 * stored however often the id is signed anew.
 */
export class RebuiltEvents {
  private readonly entries = new Map<string, { sig: string; json: string }>();

  get(id: string, sig: string): string | undefined {
    const hit = this.entries.get(id);
    if (hit === undefined || hit.sig !== sig) return undefined;
    this.entries.delete(id);
    this.entries.set(id, hit);
    return hit.json;
  }

  set(event: SignedEvent, json: string = serializeEvent(event)): void {
    this.entries.delete(event.id);
    this.entries.set(event.id, { sig: event.sig, json });
    if (this.entries.size > REBUILT_MAX) this.entries.delete(this.entries.keys().next().value!);
  }
}

/** A subject event's envelope and digest, as the subject store reads them (null: the subject or its envelope is gone). */
export type EnvelopeReader = (keys: readonly string[]) => Promise<Array<{ canonical: string; digest: string } | null>>;

/** What one event hash held, read for publishing: its JSON (null: the hash is gone), or why it cannot be rebuilt. */
export type StoredEvent = { json: string } | { json: null } | { broken: string };

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
  constructor(
    readonly redis: Redis,
    readonly keys: StateKeys,
    readonly registry: NostrRegistry,
    private readonly envelopes: EnvelopeReader,
    readonly rebuilt: RebuiltEvents = new RebuiltEvents(),
  ) {
    defineScripts(redis, [SET_SUBJECT_EVENT, OUTBOX_ADD, OUTBOX_TAKE, SET_RELAYS]);
  }

  /** The event's JSON (a subject's own event rebuilt), or null when it is gone; throws when a subject event cannot be rebuilt. */
  async eventJson(eventId: string): Promise<string | null> {
    const [got] = await this.readEvents([eventId], [[]]);
    if ('broken' in got!.event) throw new Error(`event ${eventId}: ${got!.event.broken}`);
    return got!.event.json;
  }

  /**
   * Per event: what its hash holds for publishing (its JSON, a subject's own event rebuilt
   * from its envelope and checked against its id) and the values of `fields[i]` of its hash.
   * One pipelined HMGET per event, then for subject events not held rebuilt, their subjects'
   * envelopes and signers.
   */
  async readEvents(ids: readonly string[], fields: ReadonlyArray<readonly string[]>): Promise<Array<{ event: StoredEvent; values: Array<string | null> }>> {
    const pipe = this.redis.pipeline();
    ids.forEach((id, i) => pipe.hmgetBuffer(this.keys.event(id), 'json', 'subject', 'sig', 'sg', ...fields[i]!));
    const res = (await pipe.exec()) ?? [];
    const out: Array<{ event: StoredEvent; values: Array<string | null> }> = [];
    const toRebuild: Array<{ i: number; id: string; subject: string; sig: string; signer: number }> = [];
    ids.forEach((id, i) => {
      const [err, v] = res[i]!;
      if (err) throw err;
      const [json, subject, sig, sg, ...rest] = v as Array<Buffer | null>;
      const values = rest.map((x) => (x === null ? null : x.toString()));
      if (json) out.push({ event: { json: json.toString() }, values });
      else if (!subject) out.push({ event: { json: null }, values });
      else {
        const sigHex = sig ? sig.toString('hex') : '';
        const held = this.rebuilt.get(id, sigHex);
        out.push({ event: held !== undefined ? { json: held } : { broken: 'not rebuilt' }, values });
        if (held === undefined) toRebuild.push({ i, id, subject: subject.toString(), sig: sigHex, signer: Number(sg?.toString() ?? 0) });
      }
    });
    if (toRebuild.length > 0) {
      const envelopes = await this.envelopes(toRebuild.map((r) => r.subject));
      for (const [j, r] of toRebuild.entries()) out[r.i]!.event = await this.rebuild(r, envelopes[j] ?? null);
    }
    return out;
  }

  /** A subject's own event from its envelope, signer and signature, its id checked; the reason when it cannot be. */
  private async rebuild(r: { id: string; subject: string; sig: string; signer: number }, envelope: { canonical: string; digest: string } | null): Promise<StoredEvent> {
    if (envelope === null) return { broken: `its subject ${r.subject} or the subject's envelope is gone` };
    const signer = await this.registry.signer(r.signer);
    if (signer === null) return { broken: `its signer number ${r.signer} is not in the registry` };
    let event: SignedEvent;
    try {
      event = rebuildEnvelopeEvent({ canonical: envelope.canonical, digestHex: envelope.digest, kind: signer.kind, pubkey: signer.pubkey, id: r.id, sig: r.sig });
    } catch (err) {
      return { broken: (err as Error).message };
    }
    const json = serializeEvent(event);
    this.rebuilt.set(event, json);
    return { json };
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
  async setSubjectEvents(items: ReadonlyArray<{ key: string; event: SignedEvent }>): Promise<Array<string | null>> {
    if (items.length === 0) return [];
    const signers = await Promise.all(items.map((it) => this.registry.signerNumber(it.event)));
    const pipe = this.redis.pipeline();
    items.forEach((it, i) => {
      const ev = it.event;
      scriptCommand(pipe, SET_SUBJECT_EVENT)('2', this.keys.subject(it.key), this.keys.event(ev.id), ev.id, Buffer.from(ev.sig, 'hex'), String(signers[i]!), it.key, packHash(ev.id));
    });
    const res = (await pipe.exec()) ?? [];
    return res.map(([err, v], i) => {
      if (err) throw err;
      if (!Array.isArray(v)) return null;
      const [id, mine] = v as [string, number];
      // this copy is the one stored: what any reader would rebuild
      if (Number(mine) === 1) this.rebuilt.set(items[i]!.event);
      return id;
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
    const handed = h.to ? h.to.split(',').map(Number) : [];
    const reported = Object.keys(h).filter((f) => f.startsWith('r:')).map((f) => Number(f.slice(2)));
    const urls = await this.registry.relayUrls([...handed, ...reported]);
    const urlOf = (n: number, i: number): string => urls[i] ?? `(relay number ${n}, not in the registry)`;
    const relays = handed.map(urlOf);
    const reports = reported.map((n, j) => decodeReport(urlOf(n, handed.length + j), h[`r:${n}`]!));
    for (const r of reports) if (!relays.includes(r.url)) relays.push(r.url);
    return { relays, reports };
  }
}
