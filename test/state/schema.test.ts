/**
 * The state's layout version (`{prefix}:schema`, AnchorStore.openSchema): a fresh prefix is
 * marked 5 (STATE_SCHEMA) on first start; a layout-4 Redis (`witnesses`, epoch-ms `updated`
 * and `confirmed:<w>`, `<w>:index` in every subject hash) is marked 5 and its subjects read,
 * move on and retire as they did; a layout-3 Redis (hex digests, every acceptance in its subject's
 * history list) is marked 5 and its subjects, histories, batches and proofs read as they
 * were; a layout-2 Redis (every witness transition in each subject's
 * history list) is marked 5 and its history lists read as they are, merged with the batch
 * transitions layout 3 records once per batch; a Redis written by the layout before the key existed (layout 1:
 * idx:all and idx:w:<w>:confirmed, every envelope under e:<key>, no counts, no schema key)
 * is moved to 5 (counts from the old indexes) and its subjects read as they are; a
 * layout this release does not know makes aer1-anchord refuse to start (exit 2, one line)
 * and aer1-anchor status refuse the same way, writing nothing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnchorStore, STATE_SCHEMA } from '../../src/adapters/state/anchor-store.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { BatchTree } from '../../src/core/batch/batch-tree.js';
import { UsageError } from '../../src/core/errors/errors.js';
import { REPO_ROOT, SHARED_REDIS_URL, startDaemon, tempDir, testConfig, uniquePrefix } from '../helpers/harness.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
});
afterAll(async () => {
  await redis?.quit();
});

const BOTH = { witnesses: ['nostr', 'ots'] as const, inboxes: ['nostr', 'ots'] as const };

function subject(key = `k-${randomBytes(4).toString('hex')}`) {
  const envelopeCanonical = `{"k":"${key}"}`;
  return { key, kind: 'receipt', envelopeCanonical, digest: randomBytes(32).toString('hex'), fingerprint: 'fp', nostrEvent: { id: randomBytes(32).toString('hex'), json: JSON.stringify({ content: envelopeCanonical }) } };
}

describe('the state layout version', () => {
  it('a fresh prefix: the daemon marks it the current layout (5) on first start, and finds it current after', { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const keys = new AnchorStore(redis, config.redis.prefix).keys;
    expect(await redis.get(keys.schema)).toBeNull();
    const daemon = await startDaemon(config);
    try {
      expect(await redis.get(keys.schema)).toBe(String(STATE_SCHEMA));
      expect(await daemon.store.openSchema({ write: true })).toEqual({ found: 'current', recorded: false });
    } finally {
      await daemon.stop();
    }
  });

  it('a Redis written by layout 1 (idx:all, idx:w:<w>:confirmed, envelopes beside events, no counts, no schema key): moved to layout 5 on start', { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const store = new AnchorStore(redis, config.redis.prefix);
    const k = store.keys;
    const subjects = [subject(), subject(), subject()];
    // in no inbox: the daemon started below leaves them as they are
    await store.acceptMany({ witnesses: BOTH.witnesses, inboxes: [] }, subjects);
    await store.setWitnessMany(subjects.slice(0, 2).map((x) => x.key), 'nostr', 'confirmed', 1);
    await store.reject('refused-1', 'bad');
    // what layout 1 kept besides, and did not keep
    const created = (await store.getRecord(subjects[0]!.key))!.createdMs;
    for (const x of subjects) {
      await redis.set(k.envelope(x.key), x.envelopeCanonical);
      await redis.zadd(k.layout1All, created, x.key);
    }
    await redis.zadd(k.layout1All, created, 'refused-1');
    for (const x of subjects.slice(0, 2)) await redis.zadd(k.byWitness('nostr', 'confirmed'), created, x.key);
    await redis.del(k.counts, k.schema);
    // a client writes nothing
    expect(await store.openSchema({ write: false })).toEqual({ found: 'layout 1', recorded: false });
    expect(await redis.exists(k.schema, k.counts)).toBe(0);
    const daemon = await startDaemon(config);
    try {
      expect(await redis.get(k.schema)).toBe(String(STATE_SCHEMA));
      expect(await redis.exists(k.layout1All, k.byWitness('nostr', 'confirmed'))).toBe(0);
      expect(await daemon.store.countByStatus()).toEqual({ pending: 1, partial: 2, confirmed: 0, failed: 0, rejected: 1 });
      expect((await daemon.store.countByWitness(['nostr', 'ots']))).toEqual({ nostr: { pending: 1, partial: 0, confirmed: 2, failed: 0 }, ots: { pending: 3, partial: 0, confirmed: 0, failed: 0 } });
      expect((await daemon.store.list({ witness: 'nostr', status: 'confirmed', limit: 10 })).keys.sort()).toEqual(subjects.slice(0, 2).map((x) => x.key).sort());
      expect((await daemon.store.list({ limit: 10 })).keys).toHaveLength(4);
      expect(await daemon.store.getRecord(subjects[2]!.key)).toMatchObject({ status: 'pending', envelopeCanonical: subjects[2]!.envelopeCanonical, nostrEventId: subjects[2]!.nostrEvent.id });
      // a second opening (another daemon) finds it current and changes nothing
      expect(await new AnchorStore(redis, config.redis.prefix).openSchema({ write: true })).toEqual({ found: 'current', recorded: false });
    } finally {
      await daemon.stop();
    }
  });

  it('a Redis of layout 2 (every batch transition in each subject\'s own history): marked 5 on start, its histories read as they were and go on with the batch\'s transitions', { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const store = new AnchorStore(redis, config.redis.prefix);
    const k = store.keys;
    const subjects = [subject(), subject()];
    await store.acceptMany({ witnesses: BOTH.witnesses, inboxes: ['ots'] }, subjects);
    // layouts 2 and 3 wrote the acceptance into the list
    for (const x of subjects) {
      const rec = (await store.getRecord(x.key))!;
      await redis.lpush(k.history(x.key), JSON.stringify({ at: new Date(Math.floor(rec.createdMs / 1000) * 1000).toISOString().replace('.000Z', 'Z'), status: 'pending', event: 'accepted', digest: x.digest }));
    }
    const cut = (await store.cutBatch('ots', 2))!;
    // not open: the daemon started below leaves the batch to this test
    await store.closeBatch('ots', cut.id);
    // what layout 2 wrote: the transition in every subject's list (no batch named)
    await store.setWitnessMany(subjects.map((x) => x.key), 'ots', 'partial', 1, 'submitted');
    await redis.set(k.schema, '2');
    const before = await Promise.all(subjects.map((x) => store.history(x.key)));
    expect(before[0]!.map((h) => `${h.event} ${h.to ?? ''} ${h.status}`)).toEqual(['accepted  pending', 'witness partial partial']);
    expect(await store.openSchema({ write: false })).toEqual({ found: 'layout 2', recorded: false });
    expect(await redis.get(k.schema)).toBe('2');
    const daemon = await startDaemon(config);
    try {
      expect(await redis.get(k.schema)).toBe(String(STATE_SCHEMA));
      expect(await Promise.all(subjects.map((x) => daemon.store.history(x.key)))).toEqual(before);
      // the next transition of the batch is recorded once, on it, and read in order after the old entries
      await daemon.store.setWitnessMany(subjects.map((x) => x.key), 'ots', 'confirmed', 5, 'bitcoin block 7', cut.id);
      expect(await redis.llen(k.batchHistory('ots', cut.id))).toBe(1);
      for (const x of subjects) {
        expect(await redis.llen(k.history(x.key))).toBe(2);
        expect((await daemon.store.history(x.key)).map((h) => `${h.event} ${h.from ?? ''}>${h.to ?? ''} ${h.status} ${h.detail ?? ''}`)).toEqual(['accepted > pending ', 'witness pending>partial partial submitted', 'witness partial>confirmed partial bitcoin block 7']);
      }
      expect(await new AnchorStore(redis, config.redis.prefix).openSchema({ write: true })).toEqual({ found: 'current', recorded: false });
    } finally {
      await daemon.stop();
    }
  });

  it('a Redis of layout 3 (written by its scripts: hex digests, key and acceptance in every record): marked 5, its subjects, histories, batches and proofs read as they were, the acceptance once', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix('layout3');
    const store = new AnchorStore(redis, prefix, () => 1_700_000_000_000);
    const k = store.keys;
    const oldAccept = readFileSync(join(REPO_ROOT, 'test/fixtures/state-layout3/accept.lua'), 'utf8');
    const oldCut = readFileSync(join(REPO_ROOT, 'test/fixtures/state-layout3/cut-batch.lua'), 'utf8');
    const now = 1_700_000_000_000;
    const iso = '2023-11-14T22:13:20Z';
    // layout 3's accept.lua, called as its AnchorStore called it
    const acceptOld = async (subjects: Array<{ key: string; digest: string; fingerprint: string; envelopeCanonical: string }>, inboxes: Array<'nostr' | 'ots'>) => {
      const keys = [k.events, k.counts, k.byStatus('pending'), k.byStatus('rejected'), k.byWitness('nostr', 'pending'), k.byWitness('ots', 'pending'), ...inboxes.map((w) => k.inbox(w))];
      const args: Array<string | number> = [now, iso, 100_000, 'nostr,ots', inboxes.length];
      for (const x of subjects) {
        keys.push(k.subject(x.key), k.envelope(x.key), k.history(x.key), k.subject(x.key));
        args.push(x.key, 'receipt', x.envelopeCanonical, x.digest, x.fingerprint, '', '');
      }
      return redis.eval(oldAccept, keys.length, ...keys, ...args.map(String));
    };
    const cutOld = async (w: 'nostr' | 'ots', id: string, members: string[]) =>
      redis.eval(oldCut, 5 + members.length, k.inbox(w), k.batchSeq(w), k.openBatches(w), k.batch(w, id), k.batchKeys(w, id), ...members.map((m) => k.subject(m)), w, String(now), iso, id, '1', ...members);
    const [a, b, c] = [subject(), subject(), subject()].map((x) => ({ ...x, fingerprint: randomBytes(32).toString('hex') }));
    await redis.set(k.schema, '3');
    await store.reject(c!.key, 'bad document');
    await acceptOld([a!, b!, c!], ['nostr', 'ots']);
    await acceptOld([{ ...a!, fingerprint: randomBytes(32).toString('hex') }], []);
    await cutOld('nostr', '1-aaaaaaaaaaaa', [a!.key, b!.key, c!.key]);
    await cutOld('ots', '1-bbbbbbbbbbbb', [a!.key, b!.key, c!.key]);
    await redis.hset(k.batch('nostr', '1-aaaaaaaaaaaa'), { mode: 'batch', event: JSON.stringify({ id: 'e'.repeat(64), content: 'x' }) });
    await store.setWitnessMany([a!.key, b!.key, c!.key], 'nostr', 'confirmed', 3, 'quorum', '1-aaaaaaaaaaaa');
    expect(await redis.hget(k.subject(a!.key), 'digest')).toBe(a!.digest);
    expect(await redis.llen(k.history(a!.key))).toBe(2);

    expect(await store.openSchema({ write: false })).toEqual({ found: 'layout 3', recorded: false });
    expect(await redis.get(k.schema)).toBe('3');
    expect(await store.openSchema({ write: true })).toEqual({ found: 'layout 3', recorded: true });
    expect(await redis.get(k.schema)).toBe(String(STATE_SCHEMA));
    expect(await store.openSchema({ write: true })).toEqual({ found: 'current', recorded: false });

    const line = (h: { event: string; witness?: string; to?: string; status?: string; detail?: string; reason?: string; digest?: string }) => `${h.event} ${h.witness ?? ''}>${h.to ?? ''} ${h.status ?? ''} ${h.detail ?? h.reason?.slice(0, 9) ?? ''} ${h.digest ?? ''}`;
    expect((await store.history(a!.key)).map(line)).toEqual([`accepted > pending  ${a!.digest}`, 'conflict >  conflict: ', 'witness nostr>confirmed partial quorum ']);
    expect((await store.history(b!.key)).map(line)).toEqual([`accepted > pending  ${b!.digest}`, 'witness nostr>confirmed partial quorum ']);
    expect((await store.history(c!.key)).map(line)).toEqual(['rejected >  bad docum ', `accepted > pending  ${c!.digest}`, 'witness nostr>confirmed partial quorum ']);
    for (const x of [a!, b!, c!]) {
      expect(await store.getRecord(x.key)).toMatchObject({ key: x.key, kind: 'receipt', status: 'partial', digest: x.digest, envelopeCanonical: x.envelopeCanonical, witnesses: { nostr: { status: 'confirmed' }, ots: { status: 'pending' } } });
      expect((await store.intakeStates([x.key]))[0]).toEqual({ fingerprint: x.fingerprint, status: 'partial', digest: x.digest });
      // the same root again is a duplicate, another a conflict naming the digest as before
      expect((await store.acceptMany(BOTH, [x]))).toMatchObject({ results: [{ result: 'duplicate', digest: x.digest }] });
    }
    expect((await store.acceptMany(BOTH, [{ ...b!, fingerprint: 'other' }])).results[0]).toMatchObject({ result: 'conflict', reason: `conflict: subject ${b!.key} is already anchored with another root (envelope digest ${b!.digest}); refused, not re-anchored` });
    // the batches of layout 3 (hex digests) read the same, and so do the proofs built on them
    const nb = (await store.getBatch('nostr', '1-aaaaaaaaaaaa'))!;
    expect(nb.digests.map((d) => d.toString('hex'))).toEqual([a!.digest, b!.digest, c!.digest]);
    const proof = (await new ProofExporter(store, { relays: [], calendars: [] }).export(b!.key))!;
    const tree = new BatchTree([a!, b!, c!].map((x) => Buffer.from(x.digest, 'hex')));
    expect(proof).toMatchObject({ digest: b!.digest, status: 'partial', nostr: { mode: 'batch', batch: { index: 1, size: 3, path: tree.path(1).map((h) => h.toString('hex')) } } });
    await redis.del(...(await redis.keys(`${k.base}:*`)));
  });

  it('a Redis of layout 4 (written by its scripts: witnesses, updated, confirmed:<w> and <w>:index in every hash): marked as the current layout, its subjects read, move on, prove and retire as they did', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix('layout4');
    // the release moves them on a minute after layout 4 confirmed them on Nostr
    let clock = 1_700_000_060_000;
    const store = new AnchorStore(redis, prefix, () => (clock += 1000));
    const k = store.keys;
    const old = (name: string) => readFileSync(join(REPO_ROOT, `test/fixtures/state-layout4/${name}.lua`), 'utf8');
    const now = 1_700_000_000_000;
    const iso = '2023-11-14T22:13:20Z';
    const subjects = [subject(), subject(), subject()].map((x) => ({ ...x, fingerprint: randomBytes(32).toString('hex'), nostrEvent: undefined }));
    // layout 4's scripts, called as its AnchorStore called them
    const akeys = [k.events, k.counts, k.byStatus('pending'), k.byStatus('rejected'), k.byWitness('nostr', 'pending'), k.byWitness('ots', 'pending'), k.inbox('nostr'), k.inbox('ots')];
    const aargs: Array<string | Buffer> = [String(now), iso, '100000', 'nostr,ots', '2'];
    for (const x of subjects) {
      akeys.push(k.subject(x.key), k.envelope(x.key), k.history(x.key), k.subject(x.key));
      aargs.push(x.key, 'receipt', x.envelopeCanonical, x.digest, Buffer.from(x.fingerprint, 'hex'), '', '', Buffer.from(x.digest, 'hex'));
    }
    await redis.set(k.schema, '4');
    await redis.eval(old('accept'), akeys.length, ...akeys, ...aargs);
    const members = subjects.map((x) => x.key);
    for (const [w, id] of [['nostr', '1-aaaaaaaaaaaa'], ['ots', '1-bbbbbbbbbbbb']] as const) {
      await redis.eval(old('cut-batch'), 5 + members.length, k.inbox(w), k.batchSeq(w), k.openBatches(w), k.batch(w, id), k.batchKeys(w, id), ...members.map((m) => k.subject(m)), w, String(now), iso, id, '1', ...members);
    }
    await redis.hset(k.batch('nostr', '1-aaaaaaaaaaaa'), { mode: 'batch', event: JSON.stringify({ id: 'e'.repeat(64), content: 'x' }) });
    const wkeys = [k.events, k.byWitness('nostr', 'pending'), k.byWitness('nostr', 'partial'), k.byWitness('nostr', 'failed'), k.byStatus('pending'), k.byStatus('partial'), k.byStatus('confirmed'), k.byStatus('failed'), k.meta, k.timeline(Math.floor((now + 5000) / 60_000)), k.counts, k.batchHistory('nostr', '1-aaaaaaaaaaaa'), ...members.flatMap((m) => [k.subject(m), k.history(m)])];
    await redis.eval(old('set-witness'), wkeys.length, ...wkeys, 'nostr', 'confirmed', '3', String(now + 5000), '2023-11-14T22:13:25Z', 'quorum', '100000', 'tok4', 'nostr,ots', ...members);
    expect(await redis.hget(k.subject(members[1]!), 'confirmed:nostr')).toBe(String(now + 5000));
    expect(await redis.hget(k.subject(members[1]!), 'witnesses')).toBe('nostr,ots');

    expect(await store.openSchema({ write: false })).toEqual({ found: 'layout 4', recorded: false });
    expect(await redis.get(k.schema)).toBe('4');
    expect(await store.openSchema({ write: true })).toEqual({ found: 'layout 4', recorded: true });
    expect(await redis.get(k.schema)).toBe(String(STATE_SCHEMA));
    expect(await store.openSchema({ write: true })).toEqual({ found: 'current', recorded: false });

    for (const [i, x] of subjects.entries()) {
      expect(await store.getRecord(x.key)).toMatchObject({ key: x.key, status: 'partial', digest: x.digest, createdMs: now, updatedMs: now + 5000, envelopeCanonical: x.envelopeCanonical, witnesses: { nostr: { status: 'confirmed', confirmedMs: now + 5000 }, ots: { status: 'pending', confirmedMs: null } }, batches: { nostr: { id: '1-aaaaaaaaaaaa', index: i }, ots: { id: '1-bbbbbbbbbbbb', index: i } } });
    }
    const proof = (await new ProofExporter(store, { relays: [], calendars: [] }).export(subjects[2]!.key))!;
    const tree = new BatchTree(subjects.map((x) => Buffer.from(x.digest, 'hex')));
    expect(proof).toMatchObject({ digest: subjects[2]!.digest, status: 'partial', nostr: { mode: 'batch', batch: { index: 2, size: 3, path: tree.path(2).map((h) => h.toString('hex')) } } });
    // layout 5 moves them on: the OTS confirmation as ms since created, the witnesses still their field
    await store.setWitnessMany(members, 'ots', 'confirmed', 2, 'bitcoin block 7', '1-bbbbbbbbbbbb');
    for (const x of subjects) {
      const rec = (await store.getRecord(x.key))!;
      expect(rec).toMatchObject({ status: 'confirmed', witnesses: { nostr: { status: 'confirmed', confirmedMs: now + 5000 }, ots: { status: 'confirmed' } } });
      expect(rec.witnesses.ots!.confirmedMs).toBe(rec.updatedMs);
      expect(rec.updatedMs).toBeGreaterThan(now + 5000);
      expect((await store.history(x.key)).map((h) => `${h.event} ${h.witness ?? ''}>${h.to ?? ''} ${h.status} ${h.detail ?? ''}`)).toEqual(['accepted > pending ', 'witness nostr>confirmed partial quorum', 'witness ots>confirmed confirmed bitcoin block 7']);
    }
    expect(await store.countByWitness(['nostr', 'ots'])).toEqual({ nostr: { pending: 0, partial: 0, confirmed: 3, failed: 0 }, ots: { pending: 0, partial: 0, confirmed: 3, failed: 0 } });
    // retention counts them out per witness from their `witnesses` field
    expect(await store.forget(members)).toEqual(members);
    expect(await store.countByStatus()).toEqual({ pending: 0, partial: 0, confirmed: 0, failed: 0, rejected: 0 });
    expect(await store.countByWitness(['nostr', 'ots'])).toEqual({ nostr: { pending: 0, partial: 0, confirmed: 0, failed: 0 }, ots: { pending: 0, partial: 0, confirmed: 0, failed: 0 } });
    await redis.del(...(await redis.keys(`${k.base}:*`)));
  });

  it('a Redis of layout 5 (written by its scripts: plain packed stream entries of UUID keys): marked 6, its entries and the new token entries read as one stream, in order', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix('layout5');
    const store = new AnchorStore(redis, prefix);
    const k = store.keys;
    const old = (name: string) => readFileSync(join(REPO_ROOT, `test/fixtures/state-layout5/${name}.lua`), 'utf8');
    const now = 1_700_000_000_000;
    const iso = '2023-11-14T22:13:20Z';
    const before = [randomUUID(), randomUUID(), randomUUID()].map((key) => ({ ...subject(key), fingerprint: randomBytes(32).toString('hex') }));
    const akeys = [k.events, k.counts, k.byStatus('pending'), k.byStatus('rejected'), k.byWitness('nostr', 'pending'), k.byWitness('ots', 'pending'), k.inbox('nostr'), k.inbox('ots')];
    const aargs: Array<string | Buffer> = [String(now), iso, '100000', 'nostr,ots', '2'];
    for (const x of before) {
      akeys.push(k.subject(x.key), k.envelope(x.key), k.history(x.key), k.subject(x.key));
      aargs.push(x.key, 'receipt', x.envelopeCanonical, x.digest, Buffer.from(x.fingerprint, 'hex'), '', '', Buffer.from(x.digest, 'hex'), '');
    }
    akeys.push(k.eventTally);
    await redis.set(k.schema, '5');
    await redis.eval(old('stream-lib') + old('accept'), akeys.length, ...akeys, ...aargs);
    const wkeys = [k.events, k.byWitness('ots', 'pending'), k.byWitness('ots', 'partial'), k.byWitness('ots', 'failed'), k.byStatus('pending'), k.byStatus('partial'), k.byStatus('confirmed'), k.byStatus('failed'), k.meta, k.timeline(Math.floor((now + 5000) / 60_000)), k.counts, k.meta, ...before.flatMap((x) => [k.subject(x.key), k.history(x.key)]), k.eventTally];
    await redis.eval(old('stream-lib') + old('set-witness'), wkeys.length, ...wkeys, 'ots', 'partial', '1', String(now + 5000), '2023-11-14T22:13:25Z', '', '100000', '', 'nostr,ots', ...before.map((x) => x.key));
    const plain = (await redis.xrange(k.events, '-', '+')).map(([, f]) => JSON.parse(f[1]!) as Record<string, unknown>);
    expect(plain.map((d) => Object.keys(d).includes('subjects') || Object.keys(d).includes('runs'))).toEqual([true, true]);

    expect(await store.openSchema({ write: true })).toEqual({ found: 'layout 5', recorded: true });
    expect(await redis.get(k.schema)).toBe(String(STATE_SCHEMA));
    const after = [randomUUID(), randomUUID()].map((key) => subject(key));
    await store.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] }, after);
    await store.setWitnessMany([...before, ...after].map((x) => x.key), 'nostr', 'confirmed', 2);
    const entries = (await redis.xrange(k.events, '-', '+')) as RawEntry[];
    expect(entries.slice(2).map(([, f]) => Object.keys(JSON.parse(f[1]!) as object).filter((x) => x === 'u' || x === 'ru'))).toEqual([['u'], ['ru']]);
    const events = entries.flatMap((e) => expandEntry(e)).map(({ event: e }) => `${e.type} ${e.key} ${e.witness ?? ''}>${e.to ?? ''} ${e.status}${e.digest ? ` ${e.digest}` : ''}`);
    expect(events).toEqual([
      ...before.map((x) => `accepted ${x.key} > pending ${x.digest}`),
      ...before.map((x) => `state ${x.key} ots>partial partial`),
      ...after.map((x) => `accepted ${x.key} > pending ${x.digest}`),
      ...[...before, ...after].map((x) => `state ${x.key} nostr>confirmed partial`),
    ]);
    await redis.del(...(await redis.keys(`${k.base}:*`)));
  });

  it.each([
    [String(STATE_SCHEMA + 1), new RegExp(`is layout ${STATE_SCHEMA + 1} \\(\\{[^}]+\\}:schema\\), newer than this release knows \\(${STATE_SCHEMA}\\): run the release that wrote it, or set redis\\.prefix to a prefix of its own$`)],
    ['banana', new RegExp(`has an unknown layout version "banana" in \\{[^}]+\\}:schema \\(this release writes ${STATE_SCHEMA}\\): it was not written by aer1-anchor, or set redis\\.prefix`)],
  ])('a layout it does not know (%s): Daemon.start throws redis_schema and writes nothing', { timeout: 30_000 }, async (version, line) => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const keys = new AnchorStore(redis, config.redis.prefix).keys;
    await redis.set(keys.schema, version);
    const err = await startDaemon(config).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).code).toBe('redis_schema');
    expect((err as Error).message).toMatch(line);
    expect(await redis.get(keys.schema)).toBe(version);
    expect(await redis.exists(keys.byStatus('pending'), keys.inbox('ots'))).toBe(0);
  });

  it('aer1-anchord refuses a newer layout: exit 2 and one line; aer1-anchor status the same', { timeout: 40_000 }, async () => {
    const dir = tempDir('schema');
    const config = testConfig({ prefix: uniquePrefix('schema'), overrides: { ots: { enabled: true } } });
    const keys = new AnchorStore(redis, config.redis.prefix).keys;
    await redis.set(keys.schema, String(STATE_SCHEMA + 1));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ ...config, redis: { ...config.redis, url: SHARED_REDIS_URL } }));
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchord.js'), '--config', file], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((res) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
      child.once('exit', (c) => {
        clearTimeout(timer);
        res(c);
      });
    });
    expect(code).toBe(2);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^aer1-anchord: the state under redis\\.prefix \\{schema-[0-9a-f]+\\} is layout ${STATE_SCHEMA + 1} .*newer than this release knows \\(${STATE_SCHEMA}\\)`));
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js'), 'status', 'some-key', '--config', file], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir }, cwd: dir, timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toMatch(new RegExp(`^aer1-anchor: the state under redis\\.prefix \\{schema-[0-9a-f]+\\} is layout ${STATE_SCHEMA + 1} `));
  });
});
