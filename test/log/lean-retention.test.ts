/**
 * Lean retirement (docs/reliability.md, Retention) on real Redis, two dev relays and a dev
 * calendar speaking the real OTS protocol: with the anchor log on and no archive or webhook,
 * confirmed subjects whose checkpoint event was accepted and whose checkpoint's OTS proof is
 * in a Bitcoin block leave Redis but for their log:idx value; GET serves each proof byte for
 * byte as before, the verifier passes it, and GET of the subject says `retired: "log"` with
 * its log index. Each retired subject's `.ots`, rebuilt from the log, is read by
 * python-opentimestamps (test/witness/ots/python-ots.py) with the envelope's digest as its file
 * digest and the same attestations on the same messages as our codec, the Bitcoin one on the
 * block's merkle root. A subject not final yet is not retired lean. A retired key sent again is a
 * duplicate (never anchored twice), another root a conflict. `aer1-anchor status` and the
 * package's AnchorStatusReader answer for a retired subject as GET does. Subjects with a Nostr
 * event of their own (envelope mode) stay in Redis, and a pass looks past such subjects (a
 * whole page of them) to retire the subjects behind them.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logDir, logKeyFile, type Config } from '../../src/adapters/config/config.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { leanValue } from '../../src/adapters/retention/lean.js';
import { readSubject } from '../../src/adapters/intake/job-data.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/index.js';
import { loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import { parseVerifierKey } from '../../src/core/log/note.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { parseDetached } from '../../src/core/ots/codec.js';
import { allAttestations } from '../../src/core/ots/timestamp.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { createLogger } from '../../src/daemon/logger.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { AnchorStatusReader } from '../../src/package/status-reader.js';
import { checkedFetch } from '../helpers/openapi.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, deletePrefix, prefixKeys, receiptFields, runAnchorCli, startCalendars, startDaemon, startRelays, tempDir, testConfig, uniquePrefix, waitFor } from '../helpers/harness.js';

const N = 12;
const PYTHON = '/usr/bin/python3';
/** python-opentimestamps as an independent reader: one JSON line per file (round trip, hash op, file digest, [kind, detail, message hex] per attestation). */
const PYTHON_OTS = join(REPO_ROOT, 'test/witness/ots/python-ots.py');
/** An attestation as both readers describe it: kind, its uri or height (or tag:payload), and the hex message it commits to. */
type Described = [string, string | number, string];
type PythonReading = { file: string; ok: boolean; error?: string; roundtrip?: boolean; hash_op?: string; digest?: string; attestations?: Described[] };
const sorted = (list: Described[]): Described[] => list.map((d) => JSON.stringify(d)).sort().map((d) => JSON.parse(d) as Described);
const signingKey = generateSecretKey();
const BATCH_MODE = { mode: 'batch', batchWindowMs: 300, batchMaxSize: 5 };

describe('lean retirement: confirmed subjects retired to the anchor log', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let dir = '';
  let prefix = '';
  /** The daemons' key base (one shard), whose keys the file removes at the end. */
  let stateBase = '';
  let redis: Redis;
  const running: Array<{ daemon: Daemon; http: HttpServer }> = [];
  const subjects = Array.from({ length: N }, () => receiptFields());
  const keys = subjects.map((s) => s.receipt_uuid);
  const served = new Map<string, string>();

  function config(retention: Record<string, unknown>, nostr: Record<string, unknown> = BATCH_MODE): Config {
    return testConfig({
      relays,
      calendars,
      headersFile,
      prefix,
      overrides: {
        retention,
        nostr,
        ots: { batchWindowMs: 300 },
        log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/lean', checkpointIntervalMs: 100 },
        http: { enabled: true, host: '127.0.0.1', port: 0 },
      },
    });
  }

  async function start(c: Config): Promise<{ daemon: Daemon; http: HttpServer }> {
    const daemon = await startDaemon(c, SHARED_REDIS_URL, signingKey);
    stateBase = daemon.store.keys.base;
    const http = await startHttpServer({ daemon, log: createLogger('silent') });
    const r = { daemon, http };
    running.push(r);
    return r;
  }

  /** Enqueues `fresh` with retention off under `nostr` and waits until each is confirmed (Bitcoin block mined). */
  async function confirm(fresh: Array<ReturnType<typeof receiptFields>>, nostr: Record<string, unknown>): Promise<void> {
    const r = await start(config({}, nostr));
    const issuer = new Issuer(r.daemon.config);
    const keyList = fresh.map((s) => s.receipt_uuid);
    try {
      await issuer.enqueueMany(fresh.map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor('every OTS batch submitted to the calendar', async () => {
        const records = await issuer.store.subjects.getRecords(keyList);
        for (const rec of records) if (!rec?.batches.ots || (await issuer.store.batches.batchField('ots', rec.batches.ots.id, 'submitted')) !== '1') return false;
        return true;
      }, 60_000);
      await calendars[0]!.mine();
      await waitFor('all confirmed', async () => (await issuer.store.subjects.getRecords(keyList)).every((rec) => rec?.status === 'confirmed'), 60_000);
    } finally {
      await issuer.close();
      await stop(r);
    }
  }

  async function stop(r: { daemon: Daemon; http: HttpServer }): Promise<void> {
    await r.http.close();
    await r.daemon.stop();
    running.splice(running.indexOf(r), 1);
  }

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    relays = await startRelays(2);
    calendars = await startCalendars(1, headersFile, 50);
    dir = tempDir('lean');
    prefix = uniquePrefix('lean');
    redis = new Redis(SHARED_REDIS_URL);
  });

  afterAll(async () => {
    for (const r of [...running]) await stop(r);
    if (stateBase) await deletePrefix(redis, stateBase);
    await redis?.quit();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('retires every logged and final subject lean; GET serves its proof byte for byte as before, and it verifies', { timeout: 150_000 }, async () => {
    // first without retention: subjects confirmed, their proofs as the API serves them
    const a = await start(config({}));
    const issuer = new Issuer(a.daemon.config);
    try {
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor('nostr confirmed, every OTS batch held by the calendar', async () => {
        if ((await issuer.witnessCount('nostr', 'confirmed')) !== N) return false;
        const records = await issuer.store.subjects.getRecords(keys);
        for (const r of records) if (!r?.batches.ots || (await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) !== '1') return false;
        return true;
      }, 60_000);
      // not final yet (no Bitcoin block): not retired lean
      const exporter = new ProofExporter(a.daemon.store, { relays: [], calendars: [] }, { dir: logDir(a.daemon.config) });
      const early = (await a.daemon.store.subjects.getRecord(keys[0]!))!;
      expect(await leanValue(a.daemon.store, early, (await exporter.exportOf(early))!)).toBeNull();

      await calendars[0]!.mine();
      await waitFor('all confirmed', async () => (await issuer.count('confirmed')) === N, 60_000);
      for (const key of keys) {
        const res = await checkedFetch(`${a.http.url}/v1/anchors/${key}/proof`);
        expect(res.status).toBe(200);
        served.set(key, await res.text());
      }
      const records = await issuer.store.subjects.getRecords(keys);
      const batchIds = [...new Set(records.flatMap((r) => [`nostr:${r!.batches.nostr!.id}`, `ots:${r!.batches.ots!.id}`]))];
      expect(batchIds.length).toBeGreaterThanOrEqual(2);
      await stop(a);

      // a daemon with retention on and neither archive nor webhooks retires them lean
      const b = await start(config({ confirmedAfterMs: 1, intervalMs: 200 }));
      await waitFor('every subject retired', async () => (await issuer.count('confirmed')) === 0, 30_000, 100);
      const base = b.daemon.store.keys.base;
      // the batches' key and transition lists go once every subject of theirs is retired
      await waitFor('no batch key list left', async () => (await prefixKeys(redis, base)).every((k) => !k.includes(':bk:') && !k.includes(':bh:')), 30_000, 100);
      const left = await prefixKeys(redis, base);
      for (const key of keys) expect(left.filter((k) => k.includes(key)), `keys left of ${key}`).toEqual([]);
      // each batch's hash stays, once, for every retired subject of it
      for (const b2 of batchIds) expect(left).toContain(`${base}:b:${b2}`);
      for (const key of keys) expect((await redis.hgetBuffer(`${base}:log:idx`, key))!.toString('latin1')).toMatch(/^\d+:/);
      expect(Number(await redis.hget(`${base}:meta`, 'retired'))).toBe(N);

      const trusted = [parseVerifierKey(loadLogKeyFile(logKeyFile(b.daemon.config)).verifierKey)];
      for (const key of keys) {
        const res = await checkedFetch(`${b.http.url}/v1/anchors/${key}/proof`);
        expect(res.status).toBe(200);
        const text = await res.text();
        expect(text).toBe(served.get(key));
        const proof = JSON.parse(text) as AnchorProof;
        const report = await verifyAnchor({ value: proof }, { expectedPubkeys: [signingKey.publicKey], logKeys: trusted, headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: true });
        expect(report.verdict, report.reason).toBe('PASS');
        const detail = await checkedFetch(`${b.http.url}/v1/anchors/${key}`);
        expect(detail.status).toBe(200);
        expect(await detail.json()).toMatchObject({ key, status: 'confirmed', digest: proof.digest, retired: 'log', logIndex: proof.log!.index, witnesses: { nostr: 'confirmed', ots: 'confirmed' }, proof: `/v1/anchors/${key}/proof` });
      }
    } finally {
      await issuer.close();
    }
  });

  it('a retired subject\'s .ots, rebuilt from the log, is a standard file: python-opentimestamps reads digest d and the path to the same Bitcoin block', { timeout: 60_000 }, async () => {
    expect(spawnSync(PYTHON, ['-c', 'import opentimestamps'], { encoding: 'utf8' }).status, 'python-opentimestamps is not installed: apt-get install python3-opentimestamps').toBe(0);
    const b = running[0]!;
    const out = tempDir('lean-ots');
    const files: Array<{ key: string; file: string; digest: string; ours: Described[] }> = [];
    for (const key of keys) {
      // retired: nothing of it left in Redis, its proof is built from the log
      expect(await b.daemon.store.subjects.getRecord(key)).toBeNull();
      const res = await checkedFetch(`${b.http.url}/v1/anchors/${key}/proof`);
      expect(res.status).toBe(200);
      const proof = (await res.json()) as AnchorProof;
      expect(proof.ots?.status).toBe('confirmed');
      const bytes = Buffer.from(proof.ots!.proof!, 'base64');
      const file = join(out, `${key}.ots`);
      writeFileSync(file, bytes);
      // our own codec's reading: the file digest and every attestation with the message it commits to
      const ours = parseDetached(bytes);
      expect(ours.digest.toString('hex')).toBe(proof.digest);
      const atts = allAttestations(ours.timestamp).map(({ msg, attestation: a }): Described => [
        a.kind,
        a.kind === 'pending' ? a.uri : a.kind === 'unknown' ? `${a.tag.toString('hex')}:${a.payload.toString('hex')}` : a.height,
        msg.toString('hex'),
      ]);
      files.push({ key, file, digest: proof.digest, ours: sorted(atts) });
    }
    const py = spawnSync(PYTHON, [PYTHON_OTS, 'read', ...files.map((f) => f.file)], { encoding: 'utf8', maxBuffer: 16 << 20 });
    expect(py.status, py.stderr).toBe(0);
    const readings = new Map(py.stdout.trim().split('\n').map((l) => JSON.parse(l) as PythonReading).map((r) => [r.file, r]));
    const headers = new HeadersFileSource(headersFile);
    for (const f of files) {
      const r = readings.get(f.file);
      expect(r?.ok, `${f.key}: ${r?.error}`).toBe(true);
      expect(r!.roundtrip, f.key).toBe(true);
      expect(r!.hash_op).toBe('sha256');
      // python's file digest is the envelope's digest
      expect(r!.digest, f.key).toBe(f.digest);
      // python ran the ops from d through the log entry and inclusion path to each attestation and reached the messages our codec has
      expect(sorted(r!.attestations!), f.key).toEqual(f.ours);
      const bitcoin = r!.attestations!.filter((a) => a[0] === 'bitcoin');
      expect(bitcoin.length, f.key).toBeGreaterThanOrEqual(1);
      // and the Bitcoin commitment it reached is the merkle root of the block at that height
      for (const [, height, msg] of bitcoin) expect(msg).toBe((await headers.headerAt(height as number)).subarray(36, 68).toString('hex'));
    }
  });

  it('a retired key sent again is a duplicate, never a new anchor; another root is a conflict', { timeout: 30_000 }, async () => {
    const b = running[0]!;
    const intake = b.daemon.intakeProcessor();
    const digest = (JSON.parse(served.get(keys[1]!)!) as { digest: string }).digest;
    const size = await redis.get(`${b.daemon.store.keys.base}:log:size`);
    expect(await intake.process(keys[1], subjects[1])).toEqual({ key: keys[1], result: 'duplicate', digest });
    await expect(intake.process(keys[2], { ...subjects[2], output_sha256: 'ab'.repeat(32) })).rejects.toThrow(/conflict: subject .* retired from Redis, entry \d+ of the anchor log/);
    const bulk = await intake.process(undefined, { subjects: [subjects[3], subjects[4], { ...subjects[5], output_sha256: 'cd'.repeat(32) }] });
    expect(bulk).toMatchObject({ created: 0, duplicate: 2, conflict: 1 });
    expect(await b.daemon.store.subjects.getRecords(keys.slice(1, 6))).toEqual([null, null, null, null, null]);
    expect(await redis.get(`${b.daemon.store.keys.base}:log:size`)).toBe(size);
    // retired between the intake's look-up and the accept script: the script writes nothing for it
    const read = readSubject(subjects[6], { maxJobBytes: 1 << 20, maxSteps: 1000, maxEntries: 1000 });
    expect((await b.daemon.store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] }, [read])).results).toEqual([{ result: 'retired' }]);
    expect(await b.daemon.store.subjects.getRecord(keys[6]!)).toBeNull();
    expect(await redis.get(`${b.daemon.store.keys.base}:log:size`)).toBe(size);
  });

  it('aer1-anchor status and the status reader say a retired subject is retired to the anchor log, as GET does', { timeout: 60_000 }, async () => {
    const b = running[0]!;
    const key = keys[7]!;
    const res = await checkedFetch(`${b.http.url}/v1/anchors/${key}`);
    expect(res.status).toBe(200);
    const detail = (await res.json()) as { logIndex: number };
    const configFile = join(dir, 'client.json');
    writeFileSync(configFile, JSON.stringify({ redis: { prefix }, log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/lean' } }));
    const client = ['--config', configFile, '--redis-url', SHARED_REDIS_URL];
    const json = await runAnchorCli(['status', key, '--json', ...client]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(detail);
    const text = await runAnchorCli(['status', key, ...client]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^${key}: confirmed \\(receipt\\), retired to the anchor log at index ${detail.logIndex}\n`));
    expect(text.stdout).toContain('nostr: confirmed');

    expect(await new AnchorStatusReader(redis, { prefix, logDir: join(dir, 'log') }).get(key)).toEqual(detail);
    // without the log folder the reader cannot rebuild it, and says so rather than "no subject"
    await expect(new AnchorStatusReader(redis, { prefix }).get(key)).rejects.toThrow(new RegExp(`${key} is retired to the anchor log \\(entry ${detail.logIndex}\\).*logDir`));
  });

  it('keeps subjects with their own Nostr event (envelope mode) in Redis, and retires the logged subjects behind a page of them', { timeout: 180_000 }, async () => {
    for (const r of [...running]) await stop(r);
    // accepted first, so the oldest candidates: a whole page (retention.limit) of subjects that stay
    const own = Array.from({ length: 3 }, () => receiptFields());
    await confirm(own, { mode: 'envelope' });
    const behind = Array.from({ length: 3 }, () => receiptFields());
    await confirm(behind, BATCH_MODE);

    const c = await start(config({ confirmedAfterMs: 1, intervalMs: 200, limit: own.length - 1 }));
    const base = c.daemon.store.keys.base;
    await waitFor('the batch-mode subjects retired', async () => (await c.daemon.store.subjects.getRecords(behind.map((s) => s.receipt_uuid))).every((r) => r === null), 30_000, 100);
    for (const s of behind) expect((await redis.hgetBuffer(`${base}:log:idx`, s.receipt_uuid))!.toString('latin1')).toMatch(/^\d+:/);
    // the pass that retired them considered the older envelope-mode subjects first: they stay, whole, and GET shows them as before
    for (const s of own) {
      const record = await c.daemon.store.subjects.getRecord(s.receipt_uuid);
      expect(record).toMatchObject({ status: 'confirmed' });
      expect(record!.nostrEventId).toMatch(/^[0-9a-f]{64}$/);
      expect(await redis.hget(`${base}:log:idx`, s.receipt_uuid)).toMatch(/^\d+$/);
      const detail = await checkedFetch(`${c.http.url}/v1/anchors/${s.receipt_uuid}`);
      expect(await detail.json()).not.toHaveProperty('retired');
    }
    expect(Number(await redis.hget(`${base}:meta`, 'retired'))).toBe(N + behind.length);
  });
});
