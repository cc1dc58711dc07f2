/**
 * Each Lua script (src/adapters/state/lua/*.lua) against a real, private redis-server,
 * table-driven: what it writes and returns for each case. Every case also watches Redis's
 * MONITOR feed and checks that each command a script ran touched only keys the call
 * declared in KEYS, which is what lets a Redis Cluster route the call.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject, AcceptTargets } from '../../src/adapters/state/subjects.js';
import { SET_SUBJECT_EVENT } from '../../src/adapters/state/events.js';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { UpkeepState } from '../../src/adapters/nostr/upkeep-state.js';
import { CUT_BATCH } from '../../src/adapters/state/batches.js';
import { CUT_CHECKPOINT } from '../../src/adapters/state/checkpoint-cuts.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis, waitFor } from '../helpers/harness.js';
import { startMonitor, type RedisMonitor } from '../helpers/redis-monitor.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { LogService } from '../../src/adapters/log/log-service.js';
import { LogFolder } from '../../src/adapters/log/log-folder.js';
import { CheckpointCuts } from '../../src/adapters/state/checkpoint-cuts.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import { readCheckpointNote } from '../../src/core/nostr/events.js';
import { createLogger } from '../../src/daemon/logger.js';
import { tempDir } from '../helpers/harness.js';
import { SigningKey } from '../../src/core/nostr/keys.js';
import { envelopeEvent, serializeEvent, verifySignedEvent, type SignedEvent } from '../../src/core/nostr/events.js';
import { buildEnvelope, envelopeCanonical } from '../../src/core/envelope/envelope.js';
import { receiptFields } from '../helpers/harness.js';

/** An event as the store keeps it (id, signature, signer): tests that never publish or rebuild it. */
const signedStub = (id: string): SignedEvent => ({ id, pubkey: '1'.repeat(64), created_at: 0, kind: 3099, tags: [], content: '', sig: '2'.repeat(128) });

let server: EmbeddedRedis;
let redis: Redis;
let monitor: RedisMonitor;
type Seen = { args: string[]; source: string };
const seen: Seen[] = [];

beforeAll(async () => {
  server = await privateRedis(false);
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  monitor = await startMonitor(server.url, (args, source) => seen.push({ args, source }));
}, 30_000);

afterAll(async () => {
  monitor?.stop();
  await redis?.quit().catch(() => undefined);
  await server?.stop();
});

/** Every command run from a script since the last check touched a key its call declared. */
async function expectKeysDeclared(): Promise<number> {
  const mark = `mark-${randomBytes(4).toString('hex')}`;
  await redis.echo(mark);
  await waitFor('MONITOR caught up', () => seen.some((s) => s.args[0]?.toLowerCase() === 'echo' && s.args[1] === mark), 5000, 10);
  const events = seen.splice(0);
  let declared: Set<string> | null = null;
  let checked = 0;
  for (const { args, source } of events) {
    const cmd = args[0]!.toLowerCase();
    if (cmd === 'evalsha' || cmd === 'eval') {
      const n = Number(args[2]);
      declared = new Set(args.slice(3, 3 + n));
      continue;
    }
    if (source !== 'lua') continue;
    expect(declared, `${args[0]} ran from a script with no call seen`).not.toBeNull();
    expect([...declared!], `${args.slice(0, 2).join(' ')}: key not in KEYS`).toContain(args[1]);
    checked++;
  }
  return checked;
}

/** The commands scripts ran since the last check (name → count; XADD's MAXLEN args too), left for expectKeysDeclared. */
async function scriptCommands(): Promise<{ counts: Record<string, number>; xaddTrims: number; tallied: number[] }> {
  const mark = `count-${randomBytes(4).toString('hex')}`;
  await redis.echo(mark);
  await waitFor('MONITOR caught up', () => seen.some((x) => x.args[0]?.toLowerCase() === 'echo' && x.args[1] === mark), 5000, 10);
  const counts: Record<string, number> = {};
  // XADDs that trim by entries (none should: the stream is trimmed by its tally), and each tally increment
  let xaddTrims = 0;
  const tallied: number[] = [];
  for (const { args, source } of seen) {
    if (source !== 'lua') continue;
    const cmd = args[0]!.toUpperCase();
    counts[cmd] = (counts[cmd] ?? 0) + 1;
    if (cmd === 'XADD' && args[2]?.toUpperCase() === 'MAXLEN') xaddTrims += 1;
    if (cmd === 'ZINCRBY') tallied.push(Number(args[2]));
  }
  return { counts, xaddTrims, tallied };
}

let store: AnchorStore;
let prefix: string;
beforeEach(() => {
  prefix = `lua-${randomBytes(3).toString('hex')}`;
  let clock = 1_700_000_000_000;
  store = new AnchorStore(redis, prefix, () => (clock += 1000));
});

const BOTH: AcceptTargets = { witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] };

function subject(key = `k-${randomBytes(4).toString('hex')}`, root = 'a'): AcceptSubject {
  return { key, kind: 'receipt', envelopeCanonical: `{"k":"${key}","root":"${root}"}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${root}`) };
}

async function historyEvents(key: string): Promise<string[]> {
  return (await store.subjects.history(key)).map((h) => h.event);
}

async function streamTypes(): Promise<string[]> {
  const entries = await redis.xrange(store.keys.events, '-', '+');
  return entries.map(([, fields]) => (JSON.parse(fields[1]!) as { type: string }).type);
}

describe('accept.lua', () => {
  type Case = { name: string; before: Array<{ s: AcceptSubject; reject?: string }>; call: AcceptSubject[]; expect: string[]; inbox: number | null };
  const a = subject('same-key', 'a');
  const aOther = { ...subject('same-key', 'b') };
  const fresh = [subject(), subject(), subject()];
  const cases: Case[] = [
    { name: 'a new subject is created, pending, in every index and inbox', before: [], call: [fresh[0]!], expect: ['created'], inbox: 1 },
    { name: 'the same root again is a duplicate: nothing written, no inbox push', before: [{ s: a }], call: [a], expect: ['duplicate'], inbox: null },
    { name: 'another root under a known key is a conflict, recorded in its history', before: [{ s: a }], call: [aOther], expect: ['conflict'], inbox: null },
    { name: 'a key refused earlier is replaced by the accepted subject', before: [{ s: a, reject: 'bad document' }], call: [a], expect: ['created'], inbox: 1 },
    { name: 'many in one call, each on its own terms (a repeat in the call is a duplicate, another root a conflict)', before: [], call: [fresh[1]!, a, fresh[2]!, a, aOther], expect: ['created', 'created', 'created', 'duplicate', 'conflict'], inbox: 3 },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      for (const b of c.before) {
        if (b.reject) await store.subjects.reject(b.s.key, b.reject);
        else await store.subjects.acceptMany(BOTH, [b.s]);
      }
      const before = await store.batches.inboxLength('ots');
      const res = await store.subjects.acceptMany(BOTH, c.call);
      expect(res.results.map((r) => r.result)).toEqual(c.expect);
      expect(res.inboxLengths.ots ?? null).toBe(c.inbox === null ? null : before + c.inbox);
      expect(res.inboxLengths.nostr ?? null).toBe(c.inbox === null ? null : before + c.inbox);
      expect(await store.batches.inboxLength('ots')).toBe(before + (c.inbox ?? 0));
      // the counts follow the indexes: one per subject in its status, one per witness status
      const counts = await store.indexes.countByStatus();
      for (const st of ['pending', 'rejected']) expect(counts[st], st).toBe(await redis.zcard(store.keys.byStatus(st)));
      const byWitness = await store.indexes.countByWitness(['nostr', 'ots']);
      for (const w of ['nostr', 'ots'] as const) expect(byWitness[w]!.pending, w).toBe(await redis.zcard(store.keys.byWitness(w, 'pending')));
      for (const [i, s] of c.call.entries()) {
        const r = res.results[i]!;
        const rec = await store.subjects.getRecord(s.key);
        if (r.result === 'created') {
          expect(rec).toMatchObject({ status: 'pending', digest: s.digest, envelopeCanonical: s.envelopeCanonical, witnesses: { nostr: { status: 'pending' }, ots: { status: 'pending' } } });
          expect(await redis.zscore(store.keys.byStatus('pending'), s.key)).not.toBeNull();
          expect(await redis.zscore(store.keys.byWitness('ots', 'pending'), s.key)).not.toBeNull();
          expect(await redis.zscore(store.keys.byStatus('rejected'), s.key)).toBeNull();
        }
        if (r.result === 'conflict') {
          expect(r.reason).toBe(`conflict: subject ${s.key} is already anchored with another root (envelope digest ${a.digest}); refused, not re-anchored`);
          expect(rec?.digest).toBe(a.digest); // not re-anchored
          expect(await historyEvents(s.key)).toContain('conflict');
          expect(await streamTypes()).toContain('conflict');
        }
        if (r.result === 'duplicate') expect(r.digest).toBe(a.digest);
      }
      expect(await expectKeysDeclared()).toBeGreaterThan(0);
    });
  }

  it('stores the signed event of envelope mode with the subject and hands it back on a duplicate', async () => {
    const s = { ...subject(), nostrEvent: signedStub('e'.repeat(64)) };
    const targets: AcceptTargets = { witnesses: ['nostr'], inboxes: [] };
    expect((await store.subjects.acceptMany(targets, [s])).results[0]).toEqual({ result: 'created' });
    expect(await store.events.eventOwner(s.nostrEvent.id)).toEqual({ subject: s.key, batch: null });
    expect((await store.subjects.getRecord(s.key))?.nostrEventId).toBe(s.nostrEvent.id);
    expect((await store.subjects.acceptMany(targets, [s])).results[0]).toEqual({ result: 'duplicate', digest: s.digest, nostrEventId: s.nostrEvent.id });
    // the id as its 32 bytes in the hash
    expect((await redis.hgetBuffer(store.keys.subject(s.key), 'nostr:event'))!.equals(Buffer.from(s.nostrEvent.id, 'hex'))).toBe(true);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('takes more subjects than one call holds in several calls (ACCEPT_CHUNK), every one in order', async () => {
    const many = Array.from({ length: 600 }, () => subject());
    const res = await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, many);
    expect(res.results.filter((r) => r.result === 'created')).toHaveLength(600);
    expect(await redis.lrange(store.keys.inbox('ots'), 0, -1)).toEqual(many.map((s) => s.key));
    expect(res.inboxLengths.ots).toBe(600);
    const again = await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, many);
    expect(again.results.every((r) => r.result === 'duplicate')).toBe(true);
    expect(await store.batches.inboxLength('ots')).toBe(600);
    await expectKeysDeclared();
  });
});

describe('reject.lua', () => {
  it.each([
    ['an unknown key becomes a rejected subject with the reason', false, 'rejected', 1],
    ['an accepted subject keeps its state; the refusal goes to its history', true, 'pending', 0],
  ])('%s', async (_name, acceptedFirst, status, rejectedCount) => {
    const s = subject();
    if (acceptedFirst) await store.subjects.acceptMany(BOTH, [s]);
    await store.subjects.reject(s.key, 'not a receipt');
    const rec = await store.subjects.getRecord(s.key);
    expect(rec?.status).toBe(status);
    expect(await redis.zcard(store.keys.byStatus('rejected'))).toBe(rejectedCount);
    expect((await store.indexes.countByStatus()).rejected).toBe(rejectedCount);
    // refused twice: still one rejected subject
    await store.subjects.reject(s.key, 'not a receipt');
    expect((await store.indexes.countByStatus()).rejected).toBe(rejectedCount);
    expect(await historyEvents(s.key)).toContain('rejected');
    if (!acceptedFirst) expect(rec?.reason).toBe('not a receipt');
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});

describe('set-witness.lua', () => {
  type Step = [witness: 'nostr' | 'ots', status: 'pending' | 'partial' | 'confirmed' | 'failed', progress: number, changed: boolean, overall: string];
  const cases: Array<[string, Step[]]> = [
    ['one witness partial makes the subject partial', [['nostr', 'partial', 1, true, 'partial']]],
    ['all confirmed makes it confirmed', [['nostr', 'confirmed', 3, true, 'partial'], ['ots', 'confirmed', 2, true, 'confirmed']]],
    ['all failed makes it failed', [['nostr', 'failed', 1, true, 'pending'], ['ots', 'failed', 1, true, 'failed']]],
    ['a stale report (lower progress) does not undo a newer one', [['ots', 'partial', 2, true, 'partial'], ['ots', 'pending', 1, false, 'partial']]],
    ['the same status further along changes nothing but history', [['nostr', 'partial', 1, true, 'partial'], ['nostr', 'partial', 2, false, 'partial']]],
    ['a later status at equal progress is taken', [['ots', 'partial', 1, true, 'partial'], ['ots', 'confirmed', 1, true, 'partial']]],
  ];
  for (const [name, steps] of cases) {
    it(name, async () => {
      const s = subject();
      await store.subjects.acceptMany(BOTH, [s]);
      const want: Record<string, string> = { nostr: 'pending', ots: 'pending' };
      for (const [w, status, progress, changed, overall] of steps) {
        const res = await store.subjects.setWitness(s.key, w, status, progress, 'why');
        expect({ changed: res.changed, overall: res.overall }).toEqual({ changed, overall });
        if (changed) want[w] = status;
      }
      const rec = (await store.subjects.getRecord(s.key))!;
      const overall = steps[steps.length - 1]![4];
      expect(rec.status).toBe(overall);
      for (const w of ['nostr', 'ots'] as const) {
        expect(rec.witnesses[w]?.status).toBe(want[w]);
        // the subject sits in its witness's index while that is pending, partial or failed, in
        // none once confirmed; the witness counts say the same
        const counts = (await store.indexes.countByWitness([w]))[w]!;
        for (const st of ['pending', 'partial', 'confirmed', 'failed']) {
          expect(await redis.zscore(store.keys.byWitness(w, st), s.key), `${w} ${st}`).toBe(st === want[w] && st !== 'confirmed' ? String(rec.createdMs) : null);
          expect(counts[st], `${w} ${st} count`).toBe(st === want[w] ? 1 : 0);
        }
      }
      // and in exactly one index of the overall status, counted once
      const counts = await store.indexes.countByStatus();
      for (const st of ['pending', 'partial', 'confirmed', 'failed']) {
        expect(await redis.zscore(store.keys.byStatus(st), s.key)).toBe(st === overall ? String(rec.createdMs) : null);
        expect(counts[st], `${st} count`).toBe(st === overall ? 1 : 0);
      }
      if (want.ots === 'confirmed') expect(await store.indexes.lastConfirmed('ots')).not.toBeNull();
      expect(await expectKeysDeclared()).toBeGreaterThan(0);
    });
  }

  it('a confirmation counts in its minute of the timeline, per witness and per subject', async () => {
    const s = subject();
    await store.subjects.acceptMany(BOTH, [s]);
    await store.subjects.setWitness(s.key, 'nostr', 'confirmed', 1);
    await store.subjects.setWitness(s.key, 'ots', 'partial', 1);
    await store.subjects.setWitness(s.key, 'ots', 'confirmed', 2);
    const rec = (await store.subjects.getRecord(s.key))!;
    const minute = Math.floor(rec.updatedMs / 60_000);
    const tl = await redis.hgetall(store.keys.timeline(minute));
    expect({ nostr: tl['n:nostr'], ots: tl['n:ots'], subject: tl['n:subject'] }).toEqual({ nostr: '1', ots: '1', subject: '1' });
    expect(Number(tl['t:subject'])).toBe(rec.updatedMs - rec.createdMs);
    expect(await redis.pttl(store.keys.timeline(minute))).toBeGreaterThan(7_000_000);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('an unknown key changes nothing; an unknown status is an error', async () => {
    expect((await store.subjects.setWitness('nobody', 'ots', 'partial', 1)).changed).toBe(false);
    expect(await redis.exists(store.keys.subject('nobody'))).toBe(0);
    await expect(store.subjects.setWitness('nobody', 'ots', 'done' as 'partial', 1)).rejects.toThrow(/unknown status done/);
    await expectKeysDeclared();
  });

  it('setWitnessMany pipelines the same transition over many subjects', async () => {
    const many = [subject(), subject(), subject()];
    await store.subjects.acceptMany(BOTH, many);
    const res = await store.subjects.setWitnessMany(many.map((s) => s.key), 'nostr', 'confirmed', 1);
    expect(res.map((r) => r.overall)).toEqual(['partial', 'partial', 'partial']);
    expect((await store.indexes.countByWitness(['nostr'])).nostr).toEqual({ pending: 0, partial: 0, confirmed: 3, failed: 0 });
    expect(await redis.exists(store.keys.byWitness('nostr', 'confirmed'))).toBe(0);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it("a subject's own transition names its relay by number in the hash, and its history and the change stream say the relay's URL", async () => {
    const s = subject();
    await store.subjects.acceptMany(BOTH, [s]);
    const url = 'ws://127.0.0.1:7/relay';
    const detail = `${url}: accepted (saved)`;
    await store.subjects.setWitnessMany([s.key], 'nostr', 'partial', 1, detail, undefined, url);
    const [n] = await store.registry.relayNumbers([url]);
    expect(await redis.hget(store.keys.subject(s.key), 'h:0')).toMatch(new RegExp(`\\|~${n}: accepted \\(saved\\)$`));
    await store.subjects.setWitnessMany([s.key], 'nostr', 'confirmed', 2, `${url}: accepted`, undefined, url);
    expect(await redis.hget(store.keys.subject(s.key), 'h:1')).toMatch(new RegExp(`\\|~${n}$`));
    expect((await store.subjects.history(s.key)).filter((e) => e.event === 'witness').map((e) => e.detail)).toEqual([detail, `${url}: accepted`]);
    const last = await redis.xrevrange(store.keys.events, '+', '-', 'COUNT', 1);
    expect(JSON.parse(last[0]![1][1]!).detail).toBe(`${url}: accepted`);
  });
});

describe('the subject record: compact hash, acceptance derived from it', () => {
  type Step = 'batches confirmed' | 'conflict' | 'refused before';
  type Case = { name: string; steps: Step[]; fields: string[]; list: string[] | null; history: string[] };
  // no list of witnesses (the w:<witness> fields say which), `u` and `c:<witness>` as ms since `created`, `<witness>:i`
  const base = ['kind', 'digest', 'fp', 'status', 'created', 'w:nostr', 'w:ots'];
  const batched = ['u', 'p:nostr', 'p:ots', 'nostr:batch', 'nostr:i', 'ots:batch', 'ots:i', 'c:nostr', 'c:ots'];
  const cases: Case[] = [
    { name: 'just accepted: no key, updated or p:<witness> fields, no history list; the history reads its acceptance', steps: [], fields: base, list: null, history: ['accepted'] },
    { name: 'confirmed by its batches: still no history list of its own', steps: ['batches confirmed'], fields: [...base, ...batched], list: null, history: ['accepted', 'witness', 'witness'] },
    { name: 'a conflict: its list holds only the conflict, read after the acceptance', steps: ['conflict'], fields: base, list: ['conflict'], history: ['accepted', 'conflict'] },
    { name: 'refused, then accepted: its list holds both in order, the acceptance once', steps: ['refused before'], fields: base, list: ['rejected', 'accepted'], history: ['rejected', 'accepted'] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const s = subject();
      const k = store.keys;
      if (c.steps.includes('refused before')) await store.subjects.reject(s.key, 'bad document');
      await store.subjects.acceptMany(BOTH, [s]);
      if (c.steps.includes('batches confirmed')) {
        for (const w of ['nostr', 'ots'] as const) {
          const cut = (await store.batches.cutBatch(w, 1))!;
          await store.subjects.setWitnessMany([s.key], w, 'confirmed', 3, '', cut.id);
        }
      }
      if (c.steps.includes('conflict')) expect((await store.subjects.acceptMany(BOTH, [{ ...s, fingerprint: sha256Hex('fp-other') }])).results[0]).toMatchObject({ result: 'conflict', digest: s.digest });
      const hash = await redis.hgetallBuffer(k.subject(s.key));
      // its own history entries are its h:<n> fields
      expect(Object.keys(hash).filter((f) => !f.startsWith('h:')).sort()).toEqual([...c.fields].sort());
      // a listpack: every value within 64 bytes (a refusal's or a conflict's reason, kept as its history entry, may not be); the digest as its 32 bytes
      if (c.list === null) expect(await redis.object('ENCODING', k.subject(s.key))).toBe('listpack');
      expect(hash.digest!.length).toBe(32);
      const rec = (await store.subjects.getRecord(s.key))!;
      expect(rec).toMatchObject({ key: s.key, kind: 'receipt', digest: s.digest, envelopeCanonical: s.envelopeCanonical });
      if (!hash.u) expect(rec.updatedMs).toBe(rec.createdMs);
      expect((await store.subjects.intakeStates([s.key]))[0]).toEqual({ fingerprint: s.fingerprint, status: rec.status, digest: s.digest });
      const own = Object.keys(hash).filter((f) => f.startsWith('h:'));
      expect(own.sort()).toEqual((c.list ?? []).map((_, i) => `h:${i}`));
      expect(own.map((f) => (JSON.parse(hash[f]!.toString()) as { event: string }).event)).toEqual(c.list ?? []);
      const history = await store.subjects.history(s.key);
      expect(history.map((h) => h.event)).toEqual(c.history);
      const accepted = history.find((h) => h.event === 'accepted')!;
      // the derived entry: the fields of an entry written to the list, in the same order
      expect(JSON.stringify(accepted)).toBe(JSON.stringify({ at: new Date(Math.floor(rec.createdMs / 1000) * 1000).toISOString().replace('.000Z', 'Z'), status: 'pending', event: 'accepted', digest: s.digest }));
      // a repeat of the same root is a duplicate however the record is stored
      expect((await store.subjects.acceptMany(BOTH, [s])).results[0]).toEqual({ result: 'duplicate', digest: s.digest, nostrEventId: null });
      expect(await expectKeysDeclared()).toBeGreaterThanOrEqual(0);
    });
  }

  it('a batch keeps 32 bytes per digest (digests32), read back in order', async () => {
    const [x, y] = [subject(), subject()];
    const k = store.keys;
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, [x, y]);
    const cut = (await store.batches.cutBatch('ots', 2))!;
    const packed = await redis.hgetBuffer(k.batch('ots', cut.id), 'digests32');
    expect(packed!.length).toBe(64);
    const batch = (await store.batches.getBatch('ots', cut.id))!;
    expect(batch.digests.map((d) => d.toString('hex'))).toEqual([x.digest, y.digest]);
    expect(Object.keys(batch.fields)).toEqual([]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});

describe('the state-change stream: one entry per call (packed), expanded to the subject events', () => {
  const entries = async (): Promise<RawEntry[]> => (await redis.xrange(store.keys.events, '-', '+')) as RawEntry[];
  const expanded = async () => (await entries()).flatMap((e) => expandEntry(e));

  it('accept.lua: the subjects a call created are one entry, in order, with their digests; a lone subject keeps the one-subject form', async () => {
    const many = [subject(), subject(), subject()];
    await store.subjects.acceptMany(BOTH, many);
    const { counts, xaddTrims, tallied } = await scriptCommands();
    expect(counts.XADD).toBe(1);
    // the entry's 3 subject events are counted in the stream's tally, and no entry cap trims it
    expect(xaddTrims).toBe(0);
    expect(tallied).toEqual([3]);
    const [entry] = await entries();
    expect(JSON.parse(entry![1][1]!)).toMatchObject({ type: 'accepted', status: 'pending', subjects: many.map((m) => [m.key, m.digest]) });
    const events = await expanded();
    expect(events.map((e) => e.id)).toEqual([0, 1, 2].map((i) => `${entry![0]}.${i}`));
    expect(events.map((e) => e.event)).toEqual(many.map((m) => ({ type: 'accepted', key: m.key, status: 'pending', at: expect.any(String), digest: m.digest })));
    const one = subject();
    await store.subjects.acceptMany(BOTH, [one]);
    const last = (await entries()).at(-1)!;
    expect(expandEntry(last)).toEqual([{ id: last[0], event: { type: 'accepted', key: one.key, status: 'pending', at: expect.any(String), digest: one.digest }, text: last[1][1] }]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('accept.lua: a conflict between created subjects stays where it happened in the stream', async () => {
    const a = subject('k-conflicted', 'a');
    await store.subjects.acceptMany(BOTH, [a]);
    const [x, y, z] = [subject(), subject(), subject()];
    await store.subjects.acceptMany(BOTH, [x, y, { ...a, fingerprint: sha256Hex('fp-b') }, z]);
    expect((await expanded()).map((e) => `${e.event.type} ${e.event.key}`)).toEqual([`accepted ${a.key}`, `accepted ${x.key}`, `accepted ${y.key}`, `conflict ${a.key}`, `accepted ${z.key}`]);
    expect(await redis.xlen(store.keys.events)).toBe(4);
    await expectKeysDeclared();
  });

  it('set-witness.lua: one entry per call of the subjects that changed, in order, each with its own from/previous/status; one HMGET per subject', async () => {
    const subs = Array.from({ length: 6 }, () => subject());
    await store.subjects.acceptMany(BOTH, subs);
    // subs[1] has ots partial already (its overall differs), subs[3] has nostr confirmed (no change), subs[4] nostr failed
    await store.subjects.setWitness(subs[1]!.key, 'ots', 'partial', 1);
    await store.subjects.setWitness(subs[3]!.key, 'nostr', 'confirmed', 9);
    await store.subjects.setWitness(subs[4]!.key, 'nostr', 'failed', 1);
    const before = (await entries()).length;
    await scriptCommands();
    seen.splice(0);
    await store.subjects.setWitnessMany(subs.map((m) => m.key), 'nostr', 'confirmed', 2, 'relays: 2 of 2');
    const { counts, xaddTrims, tallied } = await scriptCommands();
    expect(counts.XADD).toBe(1);
    expect(xaddTrims).toBe(0);
    expect(tallied).toEqual([5]);
    // one per subject: every witness's status comes with the subject's own
    expect(counts.HMGET).toBe(subs.length);
    const after = await entries();
    expect(after.length).toBe(before + 1);
    const data = JSON.parse(after.at(-1)![1][1]!) as { runs: string[][] };
    expect(data.runs).toEqual([
      ['pending', 'pending', 'partial', subs[0]!.key],
      ['pending', 'partial', 'partial', subs[1]!.key],
      ['pending', 'pending', 'partial', subs[2]!.key],
      ['failed', 'pending', 'partial', subs[4]!.key],
      ['pending', 'pending', 'partial', subs[5]!.key],
    ]);
    const events = expandEntry(after.at(-1)!);
    const want = (key: string, from: string, previous: string, status: string) => ({ type: 'state', key, witness: 'nostr', from, to: 'confirmed', status, previous, at: expect.any(String), detail: 'relays: 2 of 2' });
    expect(events.map((e) => e.event)).toEqual([
      want(subs[0]!.key, 'pending', 'pending', 'partial'),
      want(subs[1]!.key, 'pending', 'partial', 'partial'),
      want(subs[2]!.key, 'pending', 'pending', 'partial'),
      want(subs[4]!.key, 'failed', 'pending', 'partial'),
      want(subs[5]!.key, 'pending', 'pending', 'partial'),
    ]);
    expect(events.map((e) => JSON.parse(e.text))).toEqual(events.map((e) => e.event));
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('set-witness.lua: each subject is judged by its own witnesses (the w:<witness> fields it has)', async () => {
    const both = subject();
    const otsOnly = subject();
    await store.subjects.acceptMany(BOTH, [both]);
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, [otsOnly]);
    const res = await store.subjects.setWitnessMany([both.key, otsOnly.key], 'ots', 'confirmed', 1);
    expect(res.map((r) => r.overall)).toEqual(['partial', 'confirmed']);
    expect((await store.subjects.getRecord(otsOnly.key))?.status).toBe('confirmed');
    expect((await expanded()).filter((e) => e.event.type === 'state').map((e) => [e.event.key, e.event.status])).toEqual([[both.key, 'partial'], [otsOnly.key, 'confirmed']]);
    expect((await store.subjects.setWitnessMany([both.key], 'nostr', 'confirmed', 5)).map((r) => r.overall)).toEqual(['confirmed']);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('set-witness.lua: one subject, or a call where one changed, writes the one-subject form; none changed, no entry', async () => {
    const [a, b] = [subject(), subject()];
    await store.subjects.acceptMany(BOTH, [a, b]);
    await store.subjects.setWitness(a.key, 'ots', 'partial', 1);
    const n = await redis.xlen(store.keys.events);
    await store.subjects.setWitnessMany([a.key, b.key], 'ots', 'partial', 1);
    const last = (await entries()).at(-1)!;
    expect(JSON.parse(last[1][1]!)).toEqual({ type: 'state', key: b.key, witness: 'ots', from: 'pending', to: 'partial', status: 'partial', previous: 'pending', at: expect.any(String), detail: '' });
    expect(expandEntry(last).map((e) => e.id)).toEqual([last[0]]);
    await store.subjects.setWitnessMany([a.key, b.key], 'ots', 'partial', 1);
    expect(await redis.xlen(store.keys.events)).toBe(n + 1);
    await expectKeysDeclared();
  });

  it('a call whose keys are all canonical UUIDs writes them as tokens (22 characters a key, 43 a digest) and expands to the same events as the plain form', async () => {
    const uuids = Array.from({ length: 5 }, () => subject(randomUUID()));
    const plain = Array.from({ length: 5 }, () => subject());
    await store.subjects.acceptMany(BOTH, uuids);
    await store.subjects.acceptMany(BOTH, plain);
    const [tok, pl] = await entries();
    const tokData = JSON.parse(tok![1][1]!) as Record<string, unknown>;
    expect(Object.keys(tokData).sort()).toEqual(['at', 'status', 'type', 'u']);
    expect((tokData.u as string).length).toBe(5 * 65);
    expect(JSON.parse(pl![1][1]!)).toMatchObject({ subjects: plain.map((m) => [m.key, m.digest]) });
    expect(expandEntry(tok!).map((e) => e.event)).toEqual(uuids.map((m) => ({ type: 'accepted', key: m.key, status: 'pending', at: expect.any(String), digest: m.digest })));
    expect(expandEntry(tok!).map((e) => e.id)).toEqual([0, 1, 2, 3, 4].map((i) => `${tok![0]}.${i}`));
    // a run per (from, previous, status), as in the plain form; subject 1 moved ahead, subject 3 changes nothing
    await store.subjects.setWitness(uuids[1]!.key, 'ots', 'partial', 1);
    await store.subjects.setWitness(uuids[3]!.key, 'nostr', 'confirmed', 9);
    await store.subjects.setWitnessMany(uuids.map((m) => m.key), 'nostr', 'confirmed', 2, 'relays: 2 of 2');
    const last = (await entries()).at(-1)!;
    const data = JSON.parse(last[1][1]!) as { ru: string[][]; runs?: unknown };
    expect(data.runs).toBeUndefined();
    expect(data.ru.map((r) => [r[0], r[1], r[2], r[3]!.length])).toEqual([
      ['pending', 'pending', 'partial', 22],
      ['pending', 'partial', 'partial', 22],
      ['pending', 'pending', 'partial', 44],
    ]);
    const want = (key: string, previous: string) => ({ type: 'state', key, witness: 'nostr', from: 'pending', to: 'confirmed', status: 'partial', previous, at: expect.any(String), detail: 'relays: 2 of 2' });
    expect(expandEntry(last).map((e) => e.event)).toEqual([want(uuids[0]!.key, 'pending'), want(uuids[1]!.key, 'partial'), want(uuids[2]!.key, 'pending'), want(uuids[4]!.key, 'pending')]);
    expect(expandEntry(last).map((e) => JSON.parse(e.text))).toEqual(expandEntry(last).map((e) => e.event));
    // one key that is not a canonical UUID (here in upper case) makes the call plain
    const mixed = [subject(randomUUID()), subject(randomUUID().toUpperCase())];
    await store.subjects.acceptMany(BOTH, mixed);
    expect(JSON.parse((await entries()).at(-1)![1][1]!)).toMatchObject({ subjects: mixed.map((m) => [m.key, m.digest]) });
    await store.subjects.setWitnessMany(mixed.map((m) => m.key), 'ots', 'partial', 1);
    expect(JSON.parse((await entries()).at(-1)![1][1]!)).toMatchObject({ runs: [['pending', 'pending', 'partial', ...mixed.map((m) => m.key)]] });
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('a token call with duplicates and conflicts among its subjects announces each created one with its own key and digest', async () => {
    const [a, b] = [subject(randomUUID()), subject(randomUUID())];
    await store.subjects.acceptMany(BOTH, [a, b]);
    const [f, g, h, i] = Array.from({ length: 4 }, () => subject(randomUUID()));
    // a again (a duplicate), f, g, b with another root (a conflict), h, h again (a duplicate in the call), i
    const call = [a, f!, g!, subject(b.key, 'other'), h!, h!, i!];
    const res = await store.subjects.acceptMany(BOTH, call);
    expect(res.results.map((r) => r.result)).toEqual(['duplicate', 'created', 'created', 'conflict', 'created', 'duplicate', 'created']);
    const got = (await entries()).slice(1).flatMap((e) => expandEntry(e).map((x) => x.event));
    expect(got.map((e) => [e.type, e.key, e.digest])).toEqual([
      ['accepted', f!.key, f!.digest],
      ['accepted', g!.key, g!.digest],
      ['conflict', b.key, undefined],
      ['accepted', h!.key, h!.digest],
      ['accepted', i!.key, i!.digest],
    ]);
    // the runs were token entries
    expect((await entries()).slice(1).map((e) => Object.keys(JSON.parse(e[1][1]!) as object).includes('u'))).toEqual([true, false, true]);
  });

  it('a token entry and the plain entry of the same subjects expand to byte-identical event texts (what webhooks and the feed send)', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const subs = Array.from({ length: 3 }, () => [randomUUID(), randomBytes(32).toString('hex')] as const);
    const tk = (key: string): string => Buffer.from(key.replaceAll('-', ''), 'hex').toString('base64url');
    const u = subs.map(([k, d]) => tk(k) + Buffer.from(d, 'hex').toString('base64url')).join('');
    const texts = (data: object): string[] => expandEntry(['7-1', ['data', JSON.stringify(data)]]).map((e) => e.text);
    expect(texts({ type: 'accepted', status: 'pending', at, u })).toEqual(texts({ type: 'accepted', status: 'pending', at, subjects: subs }));
    const [a, b, c] = subs.map(([k]) => k);
    const plain = { type: 'state', witness: 'ots', to: 'partial', at, detail: 'd/é', runs: [['pending', 'pending', 'partial', a, b], ['pending', 'partial', 'partial', c]] };
    const tokens = { type: 'state', witness: 'ots', to: 'partial', at, detail: 'd/é', ru: [['pending', 'pending', 'partial', tk(a!) + tk(b!)], ['pending', 'partial', 'partial', tk(c!)]] };
    expect(texts(tokens)).toEqual(texts(plain));
    expect(texts(tokens)).toHaveLength(3);
  });

  it('a token entry that is not whole tokens expands to nothing rather than to wrong keys', () => {
    const at = '2026-01-01T00:00:00Z';
    const key = randomUUID();
    const kt = Buffer.from(key.replaceAll('-', ''), 'hex').toString('base64url');
    const dt = randomBytes(32).toString('base64url');
    expect(expandEntry(['6-1', ['data', JSON.stringify({ type: 'accepted', status: 'pending', at, u: kt + dt })]]).map((e) => e.event.key)).toEqual([key]);
    // a key token's last character carries 2 bits of the 16th byte: one with any of the other 4 set is no key's token
    const ABC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const offBits = kt.slice(0, -1) + ABC[ABC.indexOf(kt.at(-1)!) + 1]!;
    for (const u of [kt + dt.slice(1), kt + dt + 'x', `${kt.slice(0, -1)}*${dt}`, offBits + dt, '']) {
      expect(expandEntry(['6-2', ['data', JSON.stringify({ type: 'accepted', status: 'pending', at, u })]])).toEqual([]);
    }
    expect(expandEntry(['6-3', ['data', JSON.stringify({ type: 'state', witness: 'ots', to: 'partial', at, ru: [['pending', 'pending', 'partial', kt.slice(2)]] })]])).toEqual([]);
    expect(expandEntry(['6-4', ['data', JSON.stringify({ type: 'state', witness: 'ots', to: 'partial', at, ru: [['pending', 'pending', 'partial', kt, 'extra']] })]])).toEqual([]);
  });

  it('an old per-subject entry (written before packing) still expands to itself', () => {
    const text = '{"type":"state","key":"k","witness":"ots","from":"pending","to":"partial","status":"partial","previous":"pending","at":"2026-01-01T00:00:00Z","detail":""}';
    expect(expandEntry(['5-1', ['data', text]])).toEqual([{ id: '5-1', event: JSON.parse(text), text }]);
    expect(expandEntry(['5-2', ['data', 'not json']])).toEqual([]);
    expect(expandEntry(['5-3', ['data', '{"type":"state","runs":"no"}']])).toEqual([]);
  });
});

describe('batch transitions recorded once on the batch', () => {
  const strip = (h: Array<Record<string, unknown>>) => h.map(({ at: _at, digest: _digest, ...rest }) => rest);
  type Move = [witness: 'nostr' | 'ots', status: 'pending' | 'partial' | 'confirmed' | 'failed', progress: number, detail: string];
  const path: Move[] = [
    ['nostr', 'partial', 1, 'wss://a: accepted'],
    ['ots', 'partial', 1, 'submitted to 2 calendars'],
    ['nostr', 'partial', 2, 'wss://b: accepted'],
    ['nostr', 'partial', 2, ''],
    ['nostr', 'confirmed', 3, ''],
    ['ots', 'confirmed', 5, 'bitcoin block 812345'],
  ];

  async function batchOf(w: 'nostr' | 'ots', n: number): Promise<{ id: string; keys: string[] }> {
    const cut = (await store.batches.cutBatch(w, n))!;
    return { id: cut.id, keys: await store.batches.batchKeys(w, cut.id) };
  }

  it('a subject reads the same history as when every transition was written to it, from one entry per transition', async () => {
    const single = subject();
    const batched = [subject(), subject(), subject()];
    await store.subjects.acceptMany(BOTH, [single]);
    for (const w of ['nostr', 'ots'] as const) await store.batches.cutBatch(w, 1);
    await store.subjects.acceptMany(BOTH, batched);
    const nb = await batchOf('nostr', 3);
    const ob = await batchOf('ots', 3);
    for (const [w, status, progress, detail] of path) {
      await store.subjects.setWitness(single.key, w, status, progress, detail);
      const b = w === 'nostr' ? nb : ob;
      await store.subjects.setWitnessMany(b.keys, w, status, progress, detail, b.id);
    }
    const want = await store.subjects.history(single.key);
    expect(want.map((h) => `${h.witness ?? ''} ${h.to ?? ''} ${h.status}`)).toEqual(['  pending', 'nostr partial partial', 'ots partial partial', 'nostr partial partial', 'nostr confirmed partial', 'ots confirmed confirmed']);
    for (const s of batched) {
      const got = await store.subjects.history(s.key);
      expect(strip(got as never)).toEqual(strip(want as never));
      expect(got.map((h) => h.at)).toEqual([...got.map((h) => h.at)].sort());
      // nothing is the subject's own, not even its acceptance (derived from its hash)
      expect(Object.keys(await redis.hgetall(store.keys.subject(s.key))).filter((f) => f.startsWith('h:'))).toEqual([]);
    }
    expect(await redis.llen(store.keys.batchHistory('nostr', nb.id))).toBe(3);
    expect(await redis.llen(store.keys.batchHistory('ots', ob.id))).toBe(2);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('a batch subject that did not take a transition (ahead of it, or from another status) does not show it', async () => {
    const [ahead, other, plain] = [subject(), subject(), subject()];
    await store.subjects.acceptMany(BOTH, [ahead, other, plain]);
    const b = await batchOf('ots', 3);
    await store.subjects.setWitness(ahead.key, 'ots', 'confirmed', 9, 'alone');
    await store.subjects.setWitness(other.key, 'ots', 'failed', 0, 'calendar refused');
    // plain comes first in the call so the entry's `from` is pending
    const order = [plain.key, ahead.key, other.key];
    expect(b.keys.sort()).toEqual([...order].sort());
    const res = await store.subjects.setWitnessMany(order, 'ots', 'partial', 1, 'submitted', b.id);
    expect(res.map((r) => r.changed)).toEqual([true, false, true]);
    const last = (h: Awaited<ReturnType<typeof store.subjects.history>>) => h.filter((e) => e.witness === 'ots').map((e) => `${e.from}>${e.to} ${e.detail ?? ''}`);
    expect(last(await store.subjects.history(plain.key))).toEqual(['pending>partial submitted']);
    expect(last(await store.subjects.history(ahead.key))).toEqual(['pending>confirmed alone']);
    expect(last(await store.subjects.history(other.key))).toEqual(['pending>failed calendar refused', 'failed>partial submitted']);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('over several chunks: subjects of a chunk before the entry existed are marked after', async () => {
    const many = Array.from({ length: 260 }, () => subject());
    await store.subjects.acceptMany(BOTH, many);
    const b = await batchOf('ots', 260);
    // the first chunk (250) is ahead of the transition, the rest takes it
    await store.subjects.setWitnessMany(b.keys.slice(0, 250), 'ots', 'partial', 4, 'alone');
    const res = await store.subjects.setWitnessMany(b.keys, 'ots', 'partial', 2, 'submitted', b.id);
    expect(res.map((r) => r.changed)).toEqual([...Array<boolean>(250).fill(false), ...Array<boolean>(10).fill(true)]);
    const details = async (key: string) => (await store.subjects.history(key)).filter((e) => e.witness === 'ots').map((e) => e.detail);
    expect(await details(b.keys[0]!)).toEqual(['alone']);
    expect(await details(b.keys[249]!)).toEqual(['alone']);
    expect(await details(b.keys[250]!)).toEqual(['submitted']);
    expect(await redis.llen(store.keys.batchHistory('ots', b.id))).toBe(1);
    await expectKeysDeclared();
  });

  it('two calls on one batch whose chunks interleave (two daemons): each call makes one entry, and every history ends where the record is', async () => {
    const many = Array.from({ length: 600 }, () => subject());
    await store.subjects.acceptMany(BOTH, many);
    const b = await batchOf('nostr', 600);
    // chunk by chunk on one connection, the two calls alternate: A1, B1, A2, B2, A3, B3
    await Promise.all([
      store.subjects.setWitnessMany(b.keys, 'nostr', 'partial', 1, 'one relay accepted', b.id),
      store.subjects.setWitnessMany(b.keys, 'nostr', 'confirmed', 2, 'quorum', b.id),
    ]);
    expect(await redis.llen(store.keys.batchHistory('nostr', b.id))).toBeLessThanOrEqual(2);
    const records = await store.subjects.getRecords(b.keys);
    for (const [i, key] of b.keys.entries()) {
      const changes = (await store.subjects.history(key)).filter((e) => e.event === 'witness' && e.from !== e.to && e.witness === 'nostr');
      expect(records[i]!.witnesses.nostr!.status, key).toBe('confirmed');
      expect(changes.at(-1)?.to, `${key}: ${JSON.stringify(changes)}`).toBe('confirmed');
    }
    await expectKeysDeclared();
  });
});

describe('listing subjects (one index membership each)', () => {
  async function all(q: { status?: string; witness?: 'nostr' | 'ots' }, limit: number): Promise<string[][]> {
    const pages: string[][] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const page = await store.indexes.list({ ...q, cursor, limit });
      pages.push(page.keys);
      if (!page.next) return pages;
      cursor = page.next;
    }
    throw new Error('list did not end');
  }

  it('pages through every status, newest first, each subject once; a witness confirmed from the overall indexes', async () => {
    // three accepted one by one, five in one call (one score), one refused
    const single = [subject(), subject(), subject()];
    for (const x of single) await store.subjects.acceptMany(BOTH, [x]);
    const bulk = Array.from({ length: 5 }, () => subject());
    await store.subjects.acceptMany(BOTH, bulk);
    const refused = subject();
    await store.subjects.reject(refused.key, 'bad');
    // nostr confirms four (partial), of which two are confirmed by OTS too (confirmed)
    const nostrDone = [single[0]!, bulk[1]!, bulk[3]!, single[2]!];
    await store.subjects.setWitnessMany(nostrDone.map((x) => x.key), 'nostr', 'confirmed', 1);
    await store.subjects.setWitnessMany([bulk[1]!.key, single[2]!.key], 'ots', 'confirmed', 1);
    const records = (await store.subjects.getRecords([...single, ...bulk, refused].map((x) => x.key))).map((r) => r!);
    const order = (rs: typeof records) => [...rs].sort((x, y) => y.createdMs - x.createdMs || (x.key < y.key ? 1 : -1)).map((r) => r.key);

    for (const limit of [1, 2, 3, 20]) {
      const pages = await all({}, limit);
      expect(pages.flat(), `limit ${limit}`).toEqual(order(records));
      expect(pages.slice(0, -1).every((p) => p.length === limit)).toBe(true);
      const confirmedByNostr = await all({ witness: 'nostr', status: 'confirmed' }, limit);
      expect(confirmedByNostr.flat(), `nostr confirmed, limit ${limit}`).toEqual(order(records.filter((r) => r.witnesses.nostr?.status === 'confirmed')));
      expect((await all({ witness: 'ots', status: 'pending' }, limit)).flat()).toEqual(order(records.filter((r) => r.witnesses.ots?.status === 'pending')));
      expect((await all({ status: 'partial' }, limit)).flat()).toEqual(order(records.filter((r) => r.status === 'partial')));
    }
    expect(await store.indexes.countByStatus()).toEqual({ pending: 4, partial: 2, confirmed: 2, failed: 0, rejected: 1 });
    expect(await store.indexes.subjectCount()).toBe(9);
  });
});

describe('forget.lua (retention)', () => {
  it('a confirmed subject leaves its one index, the counts and nostr:recent; the others stay counted; the batch keeps its digests', async () => {
    const withEvent = subject();
    const id = randomBytes(32).toString('hex');
    const [pending] = [subject()];
    await store.subjects.acceptMany(BOTH, [{ ...withEvent, nostrEvent: signedStub(id) }, pending]);
    await store.events.noteNostrQueued(id, Date.now(), 3_600_000);
    const batch = (await store.batches.cutBatch('ots', 10))!;
    await store.subjects.setWitnessMany([withEvent.key], 'nostr', 'confirmed', 1);
    await store.subjects.setWitnessMany([withEvent.key], 'ots', 'confirmed', 1);
    await store.subjects.reject('refused', 'bad');
    expect(await store.indexes.countByStatus()).toEqual({ pending: 1, partial: 0, confirmed: 1, failed: 0, rejected: 1 });
    seen.splice(0);

    expect(await store.subjects.forget([withEvent.key, pending.key, 'refused', 'never-there'])).toEqual([withEvent.key]);
    await expectKeysDeclared();
    expect(await redis.exists(store.keys.subject(withEvent.key), store.keys.envelope(withEvent.key), store.keys.event(id))).toBe(0);
    expect(await redis.zscore(store.keys.nostrRecent, id)).toBeNull();
    expect(await store.indexes.countByStatus()).toEqual({ pending: 1, partial: 0, confirmed: 0, failed: 0, rejected: 1 });
    expect(await store.indexes.countByWitness(['nostr', 'ots'])).toEqual({ nostr: { pending: 1, partial: 0, confirmed: 0, failed: 0 }, ots: { pending: 1, partial: 0, confirmed: 0, failed: 0 } });
    expect((await store.indexes.list({ limit: 10 })).keys.sort()).toEqual([pending.key, 'refused'].sort());
    expect((await store.batches.getBatch('ots', batch.id))?.digests).toHaveLength(2);
    expect(await store.subjects.getRecord(pending.key)).toMatchObject({ status: 'pending', envelopeCanonical: pending.envelopeCanonical });
  });
});

describe('set-relays.lua', () => {
  const report = (status: string) => ({ url: 'ws://r', status, message: status, at: '2026-01-01T00:00:00Z' });
  it.each([
    ['a first report is stored', [], 'failed', 'failed'],
    ['accepted is not downgraded by a failure', ['accepted'], 'failed', 'accepted'],
    ['accepted moves on to stored', ['accepted'], 'stored', 'stored'],
    ['stored is final', ['stored'], 'accepted', 'stored'],
    ['a failure is replaced by an acceptance', ['failed'], 'accepted', 'accepted'],
  ])('%s', async (_name, before, next, kept) => {
    const ev = randomBytes(32).toString('hex');
    await store.events.storeEvent(ev, '{}', { subject: 'some-subject' });
    await expect(store.events.relayReports(ev)).resolves.toEqual([]);
    const outbox = new RelayOutbox(store.events, ['ws://r']);
    for (const b of before as string[]) await outbox.record('ws://r', [{ id: ev, report: report(b) }]);
    const [recorded] = await outbox.record('ws://r', [{ id: ev, report: report(next as string) }]);
    expect(recorded!.reports.map((r) => r.status)).toEqual([kept]);
    expect((await store.events.relayReports(ev)).map((r) => r.status)).toEqual([kept]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});

describe('outbox-add.lua with relay upkeep\'s walk (kept-lib.lua), and kept-drop.lua', () => {
  const ids = (n: number): string[] => Array.from({ length: n }, () => randomBytes(32).toString('hex'));
  // n events; `before` of them handed to the relays first (`beforeTo`: to these only); then all handed over; the walk after
  it.each([
    ['events handed over for the first time go at the end, across a chunk boundary', 5, [], ['ws://a', 'ws://b'], [0, 1, 2, 3, 4]],
    ['an event handed over again keeps its place', 3, [2, 0], ['ws://a', 'ws://b'], [2, 0, 1]],
    ['an event handed to one relay first (the reconciler) keeps the place it took then', 3, [1], ['ws://b'], [1, 0, 2]],
  ] as const)('%s', async (_name, n, before, beforeTo, walk) => {
    const upkeep = new UpkeepState(store, { perChunk: 2 });
    const outbox = new RelayOutbox(store.events, ['ws://a', 'ws://b'], upkeep.walk);
    const list = ids(n);
    for (const e of list) await store.events.storeEvent(e, '{}', { batch: 'b' });
    if (before.length > 0) await outbox.add(before.map((i) => list[i]!), 1, beforeTo);
    await outbox.add([...list, list[0]!], 2);
    expect((await upkeep.next(100)).ids).toEqual(walk.map((i) => list[i]!));
    expect(await upkeep.size()).toBe(n);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
  it('drop clears the slots that still hold their ids and removes a chunk left empty', async () => {
    const upkeep = new UpkeepState(store, { perChunk: 2 });
    const list = ids(3);
    for (const e of list) await store.events.storeEvent(e, '{}', { batch: 'b' });
    await new RelayOutbox(store.events, ['ws://a'], upkeep.walk).add(list, 1);
    expect(await upkeep.drop([{ id: list[0]!, position: 0 }, { id: list[1]!, position: 1 }, { id: list[0]!, position: 2 }])).toBe(2);
    expect(await redis.hexists(store.keys.nostrKept, '0')).toBe(0);
    expect((await upkeep.next(100)).ids).toEqual([list[2]]);
    expect(await upkeep.size()).toBe(1);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});

describe('set-subject-event.lua', () => {
  it.each([
    ['a subject with no event gets this one', 'none', 'new'],
    ['a subject that has an event keeps it: the first stored copy wins', 'has', 'old'],
    ['a subject that is gone gets nothing', 'gone', null],
  ])('%s', async (_name, before, want) => {
    const s = subject();
    if (before !== 'gone') await store.subjects.accept({ ...s, ...BOTH });
    const oldId = randomBytes(32).toString('hex');
    const newId = randomBytes(32).toString('hex');
    if (before === 'has') await store.events.setSubjectEvents([{ key: s.key, event: signedStub(oldId) }]);
    await expectKeysDeclared();
    const res = await redis.eval(SET_SUBJECT_EVENT.lua, 2, store.keys.subject(s.key), store.keys.event(newId), newId, Buffer.alloc(64, 7), '1', s.key, Buffer.from(newId, 'hex'));
    const expected = want === 'new' ? newId : want === 'old' ? oldId : null;
    expect(res).toEqual(want === 'new' ? [newId, 1] : want === 'old' ? [oldId, 0] : null);
    // stored as its 32 bytes, read as hex
    expect((await store.subjects.getRecord(s.key))?.nostrEventId ?? null).toBe(expected);
    if (want !== null) expect((await redis.hgetBuffer(store.keys.subject(s.key), 'nostr:event'))!.length).toBe(32);
    // a refused copy is not written beside the one in force
    expect(await redis.exists(store.keys.event(newId))).toBe(want === 'new' ? 1 : 0);
    await expectKeysDeclared();
  });
});

describe("a subject's own event is kept as its signature and rebuilt from the envelope", () => {
  const key = SigningKey.fromBytes(randomBytes(32));
  /** A subject with a real envelope (its claims kept in the hash) and its envelope event signed. */
  const real = (): AcceptSubject & { nostrEvent: SignedEvent } => {
    const env = buildEnvelope(receiptFields(), new Date());
    const canonical = envelopeCanonical(env);
    const digest = sha256Hex(canonical);
    const k = String((env as { receipt_uuid: string }).receipt_uuid);
    return { key: k, kind: 'receipt', envelopeCanonical: canonical, envelope: env, digest, fingerprint: sha256Hex(`fp-${k}`), nostrEvent: envelopeEvent({ canonical, digestHex: digest, kind: 3099 }, key) };
  };

  it('envelope mode: the event hash keeps no JSON; the event read back is the one signed, byte for byte, and verifies', async () => {
    const s = real();
    await store.subjects.accept({ ...s, ...BOTH });
    await expectKeysDeclared();
    const h = await redis.hgetallBuffer(store.keys.event(s.nostrEvent.id));
    expect(Object.keys(h).sort()).toEqual(['sg', 'sig', 'subject']);
    expect(await redis.call('OBJECT', 'ENCODING', store.keys.event(s.nostrEvent.id))).toBe('listpack');
    // another store (another daemon): nothing held in memory, the event rebuilt from the subject
    const fresh = new AnchorStore(redis, prefix);
    const json = await fresh.events.eventJson(s.nostrEvent.id);
    expect(json).toBe(serializeEvent(s.nostrEvent));
    expect(verifySignedEvent(json!).ok).toBe(true);
    expect((await fresh.subjects.getRecord(s.key))?.envelopeCanonical).toBe(s.envelopeCanonical);
  });

  it('auto mode: a linked event is rebuilt the same; a copy signed again for the same id is not kept', async () => {
    const s = real();
    await store.subjects.accept({ ...s, nostrEvent: undefined, ...BOTH });
    expect(await store.events.setSubjectEvents([{ key: s.key, event: s.nostrEvent }])).toEqual([s.nostrEvent.id]);
    const again = envelopeEvent({ canonical: s.envelopeCanonical, digestHex: s.digest, kind: 3099 }, key);
    expect(again.id).toBe(s.nostrEvent.id);
    expect(await store.events.setSubjectEvents([{ key: s.key, event: again }])).toEqual([s.nostrEvent.id]);
    expect(again.sig).not.toBe(s.nostrEvent.sig);
    // this store (which signed both) and another read the copy stored, not the later signature
    expect(await store.events.eventJson(s.nostrEvent.id)).toBe(serializeEvent(s.nostrEvent));
    expect(await new AnchorStore(redis, prefix).events.eventJson(s.nostrEvent.id)).toBe(serializeEvent(s.nostrEvent));
  });

  it('an event whose envelope no longer rebuilds it is refused with the reason; the others read as ever', async () => {
    const [s, t] = [real(), real()];
    await store.subjects.acceptMany(BOTH, [s, t]);
    // the stored signer names another kind: the rebuilt id differs from the stored one
    const other = await store.registry.signerNumber({ pubkey: key.publicKey, kind: 3098 });
    await redis.hset(store.keys.event(s.nostrEvent.id), 'sg', String(other));
    const fresh = new AnchorStore(redis, prefix);
    const [bad, good] = await fresh.events.readEvents([s.nostrEvent.id, t.nostrEvent.id], [[], []]);
    expect(bad!.event).toEqual({ broken: expect.stringMatching(/^the event rebuilt from the stored envelope has id [0-9a-f]{64}, not the stored [0-9a-f]{64}$/) });
    expect(good!.event).toEqual({ json: serializeEvent(t.nostrEvent) });
    await expect(fresh.events.eventJson(s.nostrEvent.id)).rejects.toThrow(/cannot|not the stored/);
  });
});

describe('cut-batch.lua', () => {
  it('cuts the inbox head into a batch: digests in order, subjects linked, batch open', async () => {
    const many = [subject(), subject(), subject()];
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, many);
    const cut = (await store.batches.cutBatch('ots', 2))!;
    expect(cut.size).toBe(2);
    expect(cut.id).toMatch(/^1-[0-9a-f]{12}$/);
    const batch = (await store.batches.getBatch('ots', cut.id))!;
    expect(batch.digests.map((d) => d.toString('hex'))).toEqual([many[0]!.digest, many[1]!.digest]);
    expect(await store.batches.batchKeys('ots', cut.id)).toEqual([many[0]!.key, many[1]!.key]);
    expect((await store.subjects.getRecord(many[1]!.key))?.batches.ots).toEqual({ id: cut.id, index: 1 });
    expect(await store.batches.openBatchIds('ots')).toEqual([cut.id]);
    expect(await redis.lrange(store.keys.inbox('ots'), 0, -1)).toEqual([many[2]!.key]);
    const second = (await store.batches.cutBatch('ots', 10))!;
    expect(second).toMatchObject({ size: 1 });
    expect(second.id).toMatch(/^2-/);
    expect(await store.batches.cutBatch('ots', 10)).toBeNull();
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('skips subjects already in a batch (put back by the reconciler) and drops them from the inbox', async () => {
    const s = subject();
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, [s]);
    await store.batches.cutBatch('ots', 10);
    await store.batches.addToInbox('ots', s.key);
    expect(await store.batches.cutBatch('ots', 10)).toBeNull();
    expect(await store.batches.inboxLength('ots')).toBe(0);
    await expectKeysDeclared();
  });

  it('refuses a stale proposal (the head or the sequence moved) without writing', async () => {
    const [x, y] = [subject(), subject()];
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, [x, y]);
    const k = store.keys;
    const run = (head: string[], seq: number): Promise<unknown> => {
      const id = `${seq}-000000000000`;
      return redis.eval(CUT_BATCH.lua, 5 + head.length, k.inbox('ots'), k.batchSeq('ots'), k.openBatches('ots'), k.batch('ots', id), k.batchKeys('ots', id), ...head.map((h) => k.subject(h)), 'ots', '1', 'now', id, String(seq), ...head);
    };
    expect(await run([y.key], 1)).toEqual(['retry']); // not the head
    expect(await run([x.key], 2)).toEqual(['retry']); // not the next sequence number
    expect(await store.batches.inboxLength('ots')).toBe(2);
    expect(await redis.get(k.batchSeq('ots'))).toBeNull();
    expect(await run([x.key], 1)).toEqual(['1-000000000000', 1]);
  });

  it('two cutters racing on one inbox cut disjoint batches that cover every subject once', async () => {
    const many = Array.from({ length: 200 }, () => subject());
    await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, many);
    const other = new AnchorStore(new Redis(server.url), prefix);
    try {
      const cutAll = async (st: AnchorStore): Promise<string[]> => {
        const ids: string[] = [];
        for (let i = 0; i < 100; i++) {
          const c = await st.batches.cutBatch('ots', 7);
          if (!c) break;
          ids.push(c.id);
        }
        return ids;
      };
      const [a, b] = await Promise.all([cutAll(store), cutAll(other)]);
      const keys = (await Promise.all([...a, ...b].map((id) => store.batches.batchKeys('ots', id)))).flat();
      expect(keys.sort()).toEqual(many.map((s) => s.key).sort());
      expect(new Set([...a, ...b].map((id) => id.split('-')[0])).size).toBe(a.length + b.length);
    } finally {
      await other.redis.quit();
    }
    seen.splice(0);
  });
});

describe('cut-checkpoint.lua (the anchor log on)', () => {
  /** A store whose accepts are logged, its log's service (ticked by hand) and the witnesses' checkpoint cuts. */
  async function logged() {
    const dir = tempDir('cut-checkpoint');
    const service = new LogService(redis as never, { dir, origin: 'example.test/cut', signer: generateSignerKey('example.test/cut').signer, intervalMs: 1_000_000, base: store.keys.base }, createLogger('silent'));
    store.subjects.logKeys = service.keys;
    await service.start();
    const cuts = new CheckpointCuts(store, new LogFolder(dir), service.keys);
    return { service, cuts };
  }

  it('logged subjects skip the inboxes; a cut takes the entries up to a checkpoint, once, with its note as the batch root, the log index as each place', async () => {
    const { service, cuts } = await logged();
    try {
      const first = [subject(), subject(), subject()];
      const res = await store.subjects.acceptMany(BOTH, first);
      expect(res.inboxLengths).toEqual({});
      expect(await store.batches.inboxLength('ots')).toBe(0);
      expect(await cuts.cut('ots', 10)).toBeNull(); // no checkpoint yet
      expect(await service.tick()).toEqual({ size: 3 });
      const later = subject();
      await store.subjects.acceptMany(BOTH, [later]); // sequenced after the checkpoint: not in this cut
      expect(await cuts.waiting('ots')).toBe(3);
      const cut = (await cuts.cut('ots', 10))!;
      expect(cut).toMatchObject({ size: 3 });
      const batch = (await store.batches.getBatch('ots', cut.id))!;
      expect(batch.digests).toEqual([]);
      expect(readCheckpointNote(batch.fields.note!).checkpoint.size).toBe(3);
      expect(batch.fields.cp).toBe('3');
      expect(await store.batches.batchKeys('ots', cut.id)).toEqual(first.map((s) => s.key));
      expect((await store.subjects.getRecord(first[2]!.key))?.batches.ots).toEqual({ id: cut.id, index: 2 });
      expect(await store.batches.openBatchIds('ots')).toEqual([cut.id]);
      expect(await cuts.cut('ots', 10)).toBeNull(); // a range is cut once
      expect(await cuts.ahead('ots', later.key)).toBe(true);
      expect(await cuts.ahead('ots', first[0]!.key)).toBe(false);
      // the other witness has its own cursor
      expect((await cuts.cut('nostr', 10))?.size).toBe(3);
      expect(await expectKeysDeclared()).toBeGreaterThan(0);
    } finally {
      await service.stop();
      store.subjects.logKeys = null;
    }
  });

  it('a subject whose key the log holds already (an acceptance retention forgot) is not logged again: it goes to the inboxes, for a batch of digests', async () => {
    const { service, cuts } = await logged();
    try {
      const again = subject();
      await redis.hset(service.keys.index, again.key, '0');
      const res = await store.subjects.acceptMany(BOTH, [again, subject()]);
      expect(res.inboxLengths).toEqual({ nostr: 1, ots: 1 });
      expect(await redis.lrange(store.keys.inbox('ots'), 0, -1)).toEqual([again.key]);
      const cut = (await store.batches.cutBatch('ots', 10))!;
      expect((await store.batches.getBatch('ots', cut.id))!.digests.map((d) => d.toString('hex'))).toEqual([again.digest]);
      await expectKeysDeclared();
    } finally {
      await service.stop();
      store.subjects.logKeys = null;
    }
  });

  it('a batch ends at the largest kept checkpoint within the most it may hold: no two batches share a checkpoint', async () => {
    const { service, cuts } = await logged();
    try {
      for (const n of [2, 2, 3]) {
        await store.subjects.acceptMany(BOTH, Array.from({ length: n }, () => subject()));
        await service.tick();
      }
      const sizes: number[] = [];
      for (let c = await cuts.cut('ots', 4); c; c = await cuts.cut('ots', 4)) sizes.push(Number((await store.batches.getBatch('ots', c.id))!.fields.cp));
      // 4 fits sizes 2 and 4; then 7 alone (3 more)
      expect(sizes).toEqual([4, 7]);
      await expectKeysDeclared();
    } finally {
      await service.stop();
      store.subjects.logKeys = null;
    }
  });

  it('skips a subject already batched, gone, or (Nostr) with its own event; a proposal from a moved cursor writes nothing', async () => {
    const { service, cuts } = await logged();
    try {
      const [x, y, z] = [subject(), subject(), subject()];
      await store.subjects.acceptMany(BOTH, [x, y, z]);
      await service.tick();
      const batchNote = (): string => readFileSync(join(service.options.dir, 'checkpoint'), 'utf8');
      await redis.hset(store.keys.subject(x.key), 'ots:batch', 'elsewhere');
      await redis.del(store.keys.subject(y.key));
      const cut = (await cuts.cut('ots', 10))!;
      expect(await store.batches.batchKeys('ots', cut.id)).toEqual([z.key]);
      for (const k of [x.key, z.key]) await redis.hset(store.keys.subject(k), 'nostr:event', randomBytes(32));
      // a proposal from a cursor that moved (another daemon's cut landed) is refused
      const k = store.keys;
      const stale = await redis.eval(CUT_CHECKPOINT.lua, 6, k.checkpointCut('nostr'), k.batchSeq('nostr'), k.openBatches('nostr'), k.batch('nostr', '1-0'), k.batchKeys('nostr', '1-0'), k.subject(z.key), 'nostr', '1', 'now', '1-0', '1', '2', '3', batchNote(), z.key, Buffer.from(z.digest, 'hex'), '2');
      expect(stale).toEqual(['retry']);
      expect(await redis.exists(k.batch('nostr', '1-0'), k.checkpointCut('nostr'))).toBe(0);
      expect(await cuts.cut('nostr', 10)).toBeNull();
      expect(await cuts.cursor('nostr')).toBe(3);
      await expectKeysDeclared();
    } finally {
      await service.stop();
      store.subjects.logKeys = null;
    }
  });
});

describe('forget.lua', () => {
  type Case = { name: string; witnesses: Array<['nostr' | 'ots', 'confirmed' | 'partial' | 'failed']>; withEvent?: boolean; eventMoved?: boolean; expectRemoved: boolean };
  const cases: Case[] = [
    { name: 'a confirmed subject goes: hash, envelope, history, every index; counted as retired', witnesses: [['nostr', 'confirmed'], ['ots', 'confirmed']], expectRemoved: true },
    { name: 'its own Nostr event (envelope mode) goes with it', witnesses: [['nostr', 'confirmed'], ['ots', 'confirmed']], withEvent: true, expectRemoved: true },
    { name: 'a subject not yet confirmed (partial) stays as it is', witnesses: [['nostr', 'confirmed'], ['ots', 'partial']], expectRemoved: false },
    { name: 'a failed subject stays as it is', witnesses: [['nostr', 'failed'], ['ots', 'failed']], expectRemoved: false },
    { name: 'a subject whose event link changed since it was read stays', witnesses: [['nostr', 'confirmed'], ['ots', 'confirmed']], withEvent: true, eventMoved: true, expectRemoved: false },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const s = subject();
      const eventId = randomBytes(32).toString('hex');
      const other = subject();
      await store.subjects.acceptMany(BOTH, [c.withEvent ? { ...s, nostrEvent: signedStub(eventId) } : s, other]);
      let progress = 1;
      for (const [w, st] of c.witnesses) await store.subjects.setWitness(s.key, w, st, progress++);
      await store.subjects.setWitness(other.key, 'nostr', 'confirmed', 1);
      await store.subjects.setWitness(other.key, 'ots', 'confirmed', 1);
      const k = store.keys;
      if (c.eventMoved) {
        // another event linked between the read of the link and the script: simulated by a
        // store whose read of the link is stale (the link is changed after forget reads it)
        const realHmget = store.redis.hmgetBuffer.bind(store.redis);
        const patched = store.redis as unknown as { hmgetBuffer: (...a: string[]) => Promise<Array<Buffer | null>> };
        patched.hmgetBuffer = async (...a: string[]) => {
          const v = await realHmget(a[0]!, ...a.slice(1));
          if (a[0] === k.subject(s.key) && a[1] === 'nostr:event') await redis.hset(k.subject(s.key), 'nostr:event', Buffer.alloc(32, 0xff));
          return v;
        };
        try {
          expect(await store.subjects.forget([s.key, other.key])).toEqual([other.key]);
        } finally {
          patched.hmgetBuffer = realHmget as never;
        }
      } else {
        expect(await store.subjects.forget([s.key, other.key])).toEqual(c.expectRemoved ? [s.key, other.key] : [other.key]);
      }
      // its history is in its hash (h:<n>)
      const left = await redis.exists(k.subject(s.key), k.envelope(s.key));
      expect(left).toBe(c.expectRemoved ? 0 : 2);
      const indexes = [...['pending', 'partial', 'confirmed', 'failed', 'rejected'].map((st) => k.byStatus(st)), ...['nostr', 'ots'].flatMap((w) => ['pending', 'partial', 'confirmed', 'failed'].map((st) => k.byWitness(w, st)))];
      const inIndexes = (await Promise.all(indexes.map((i) => redis.zscore(i, s.key)))).filter((v) => v !== null).length;
      if (c.expectRemoved) expect(inIndexes).toBe(0);
      else expect(inIndexes).toBeGreaterThan(0);
      if (c.withEvent) expect(await redis.exists(k.event(eventId))).toBe(c.expectRemoved ? 0 : 1);
      // the counts follow: what stays is counted, what went is not
      const counts = await store.indexes.countByStatus();
      for (const st of ['pending', 'partial', 'confirmed', 'failed']) expect(counts[st], st).toBe(await redis.zcard(k.byStatus(st)));
      expect((await store.indexes.countByWitness(['nostr'])).nostr!.confirmed).toBe(c.witnesses[0]![1] === 'confirmed' && !c.expectRemoved ? 1 : 0);
      expect(await redis.exists(k.subject(other.key))).toBe(0);
      expect(Number(await redis.hget(k.meta, 'retired'))).toBe(c.expectRemoved ? 2 : 1);
      // one entry for the call (the one-subject form for one subject), one retired event per subject
      const retired = (await redis.xrange(k.events, '-', '+')).filter(([, f]) => (JSON.parse(f[1]!) as { type: string }).type === 'retired');
      expect(retired).toHaveLength(1);
      expect(retired.flatMap((e) => expandEntry(e as RawEntry)).map((e) => [e.event.type, e.event.key, e.event.status])).toEqual(c.expectRemoved ? [['retired', s.key, 'confirmed'], ['retired', other.key, 'confirmed']] : [['retired', other.key, 'confirmed']]);
      // again: a no-op, except the subject skipped for a stale link, which a fresh read now removes
      expect(await store.subjects.forget([s.key, other.key])).toEqual(c.eventMoved ? [s.key] : []);
      expect(await expectKeysDeclared()).toBeGreaterThan(0);
    });
  }
});

describe('forget.lua and drop-batch.lua: a batch goes with its last subject', () => {
  /** Four confirmed subjects in one Nostr batch (with its batch event) and one OTS batch (with a NIP-03 attestation), transitions on both. */
  async function confirmedBatches(): Promise<{ keys: string[]; nostr: string; ots: string; batchEvent: string; attestation: string; own: string }> {
    const subjects = [subject(), subject(), subject(), subject()];
    const own = randomBytes(32).toString('hex');
    subjects[0] = { ...subjects[0]!, nostrEvent: signedStub(own) };
    await store.subjects.acceptMany(BOTH, subjects);
    const keys = subjects.map((s) => s.key);
    const nostr = (await store.batches.cutBatch('nostr', 10))!.id;
    const ots = (await store.batches.cutBatch('ots', 10))!.id;
    const batchEvent = randomBytes(32).toString('hex');
    const json = await store.batches.setBatchFieldOnce('nostr', nostr, 'event', JSON.stringify({ id: batchEvent, kind: 1 }));
    await store.events.storeEvent(batchEvent, json, { batch: nostr });
    await new RelayOutbox(store.events, ['ws://127.0.0.1:1']).add([batchEvent], Date.now());
    await store.events.noteNostrQueued(batchEvent, Date.now(), 60_000);
    const attestation = randomBytes(32).toString('hex');
    await store.events.storeEvent(attestation, '{"kind":1040}', {});
    await store.batches.setBatchFields('ots', ots, { [`nip03:${own}`]: attestation, nip03: 'done' });
    await store.subjects.setWitnessMany(keys, 'nostr', 'confirmed', 1e12, '1 of 1 relays', nostr);
    await store.subjects.setWitnessMany(keys, 'ots', 'pending', 1200, 'submitted', ots);
    await store.subjects.setWitnessMany(keys, 'ots', 'confirmed', 1e12, 'Bitcoin block 7', ots);
    return { keys, nostr, ots, batchEvent, attestation, own };
  }

  async function keysOf(ids: readonly string[]): Promise<string[]> {
    const all = await redis.keys(`${store.keys.base}:*`);
    return all.filter((k) => ids.some((id) => k.includes(id)));
  }

  it('retiring half leaves both batches whole for the other half (history, digests); retiring the rest leaves no key of either batch', async () => {
    const b = await confirmedBatches();
    const histories = await Promise.all(b.keys.map((key) => store.subjects.history(key)));
    const before = await keysOf([b.nostr, b.ots, b.batchEvent, b.attestation]);
    expect(before.length).toBeGreaterThanOrEqual(7);

    expect(await store.subjects.forget(b.keys.slice(0, 2))).toEqual(b.keys.slice(0, 2));
    expect((await keysOf([b.nostr, b.ots, b.batchEvent, b.attestation])).sort()).toEqual([...before].sort());
    for (const [i, key] of b.keys.entries()) {
      if (i < 2) continue;
      expect(await store.subjects.history(key)).toEqual(histories[i]);
      expect((await store.batches.getBatch('ots', b.ots))?.digests.length).toBe(4);
    }
    expect(await expectKeysDeclared()).toBeGreaterThan(0);

    expect(await store.subjects.forget(b.keys.slice(2))).toEqual(b.keys.slice(2));
    expect(await keysOf([b.nostr, b.ots, b.batchEvent, b.attestation, ...b.keys, b.own])).toEqual([]);
    expect(await redis.zscore(store.keys.nostrRecent, b.batchEvent)).toBeNull();
    expect(await redis.scard(store.keys.emptiedBatches('nostr'))).toBe(0);
    expect(await redis.scard(store.keys.emptiedBatches('ots'))).toBe(0);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
    // again: nothing to do
    expect(await store.subjects.forget(b.keys)).toEqual([]);
    expect(await store.batches.dropEmptiedBatches()).toBe(0);
  });

  it('a batch with work left after its confirmation (polls, NIP-03) stays until that work is done', async () => {
    const b = await confirmedBatches();
    await store.batches.setBatchWork('ots', b.ots, true);
    expect(await store.subjects.forget(b.keys)).toEqual(b.keys);
    // the Nostr batch went; the OTS batch waits
    expect(await keysOf([b.nostr, b.batchEvent])).toEqual([]);
    expect((await keysOf([b.ots])).length).toBeGreaterThanOrEqual(3);
    expect(await store.batches.dropEmptiedBatches()).toBe(0);
    await store.batches.setBatchWork('ots', b.ots, false);
    expect(await store.batches.dropEmptiedBatches()).toBe(1);
    expect(await keysOf([b.ots, b.attestation])).toEqual([]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('an attestation signed between the read and the drop: nothing dropped by the stale call, the next read drops it all', async () => {
    const b = await confirmedBatches();
    // the last subject's forget leaves the OTS batch listed, not yet dropped
    await store.batches.setBatchWork('ots', b.ots, true);
    await store.subjects.forget(b.keys);
    await store.batches.setBatchWork('ots', b.ots, false);
    const late = randomBytes(32).toString('hex');
    const realHkeys = store.redis.hkeys.bind(store.redis);
    const patched = store.redis as unknown as { hkeys: (k: string) => Promise<string[]> };
    let once = true;
    patched.hkeys = async (k: string) => {
      const v = await realHkeys(k);
      if (once && k === store.keys.batch('ots', b.ots)) {
        once = false;
        await store.events.storeEvent(late, '{"kind":1040}', {});
        await store.batches.setBatchFields('ots', b.ots, { 'nip03:other': late });
      }
      return v;
    };
    try {
      expect(await store.batches.dropEmptiedBatches()).toBe(1);
    } finally {
      patched.hkeys = realHkeys as never;
    }
    expect(await keysOf([b.ots, b.attestation, late])).toEqual([]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});
