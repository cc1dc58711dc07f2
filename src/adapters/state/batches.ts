/**
 * BatchStore: the witnesses' batches in Redis: each witness's inbox of subjects waiting to
 * be batched, batch cuts (cut-batch.lua), a batch's hash (its digests in order, its key list,
 * and the witness's own fields: batch-fields.ts), the batches open or with work left, and
 * the drop of a batch none of whose subjects is left (drop-batch.lua). NIP-03's late event
 * ids wait here for a later OTS batch (fix-event-ids.lua).
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient as Redis } from '../redis/connection.js';
import { WITNESSES, type StateKeys, type WitnessName } from './keys.js';
import { DIR, defineScripts, load, runScript } from './scripts.js';
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import { CALENDAR_FIELD, NOSTR_FIELD, OTS_FIELD, otsFieldsOf, otsStateOf, splitIds, type OtsBatchState, type OtsBatchUpdate, type ProofBatchFields } from './batch-fields.js';

/** Cuts a batch from the head of a witness's inbox. */
export const CUT_BATCH = load(DIR, 'cut-batch');
/** Retention: removes a batch none of whose subjects is left in Redis, with every key of its own. */
export const DROP_BATCH = load(DIR, 'drop-batch');
/** NIP-03: fixes the event ids an OTS batch commits to and takes the late ones it commits out of the waiting set. */
export const FIX_EVENT_IDS = load(DIR, 'fix-event-ids');
/** NIP-03: notes event ids for a later batch, each once in its life (the event hash keeps the mark). */
export const NOTE_LATE = load(DIR, 'note-late');

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
 * Proposals of a batch cut before giving up for this tick. A proposal loses only to another
 * daemon's cut that landed first, so with two cutters each try is at worst a coin toss.
 */
const CUT_TRIES = 32;

export class BatchStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StateKeys,
    private readonly now: () => number = Date.now,
  ) {
    defineScripts(redis, [CUT_BATCH, DROP_BATCH, FIX_EVENT_IDS, NOTE_LATE]);
  }

  async inboxLength(witness: WitnessName): Promise<number> {
    return this.redis.llen(this.keys.inbox(witness));
  }

  /** True when the subject waits in the witness's inbox. */
  async inInbox(witness: WitnessName, key: string): Promise<boolean> {
    return (await this.redis.lpos(this.keys.inbox(witness), key)) !== null;
  }

  /** Puts a subject (back) into a witness's inbox; a subject already batched is skipped by the cut. */
  async addToInbox(witness: WitnessName, key: string): Promise<void> {
    await this.redis.rpush(this.keys.inbox(witness), key);
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
      const res = (await runScript(this.redis, CUT_BATCH, keys, [witness, now, formatAnchoredAt(new Date(now)), id, seq, ...head])) as [string, number] | null;
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
    const packed = await this.redis.hgetBuffer(this.keys.batch('ots', id), OTS_FIELD.eventIds);
    return packed === null ? null : splitIds(packed);
  }

  /**
   * NIP-03: fixes the batch's event ids once, in one script call: its own subjects' `ownIds`,
   * then up to `maxLate` late ones, which leave the waiting set in the same call. Returns the
   * list in force (the first call's, for a retry or a second daemon).
   */
  async fixOtsEventIds(id: string, ownIds: readonly string[], maxLate: number): Promise<string[]> {
    await runScript(this.redis, FIX_EVENT_IDS, [this.keys.batch('ots', id), this.keys.nip03Late], [OTS_FIELD.eventIds, maxLate, ...ownIds.map((e) => Buffer.from(e, 'hex'))]);
    // fixed once and never changed: the list in force, read back as bytes (none: the batch was dropped meanwhile)
    return (await this.otsEventIds(id)) ?? [];
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
      await runScript(this.redis, NOTE_LATE, [this.keys.nip03Late, ...chunk.map((e) => this.keys.event(e))], [now, ...chunk]);
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

  /**
   * Nostr: a batch decided `envelope` builds no tree; once its subjects have their own
   * events its digests go (32 bytes a subject), its keys and fields stay until it is dropped.
   */
  async dropNostrDigests(id: string): Promise<void> {
    await this.redis.hdel(this.keys.batch('nostr', id), 'digests32');
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
          const res = Number(await runScript(this.redis, DROP_BATCH, [k.emptiedBatches(w), k.openBatches(w), k.batchesWithWork(w), k.batch(w, id), k.batchKeys(w, id), k.batchHistory(w, id), k.nostrRecent, ...events.map((e) => k.event(e))], [id, w, ...events]));
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
}
