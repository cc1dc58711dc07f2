/**
 * Retention (docs/reliability.md, Retention) on real Redis, dev relays and a dev calendar:
 * confirmed subjects are written to the proof archive and removed from Redis; the archive
 * holds one file per subject that aer1-verify-anchor checks offline; a restarted daemon
 * serves the archived proofs over HTTP and the CLI, byte for byte; a crash between the
 * archive write and the removal loses nothing; an archived key sent again is a duplicate,
 * never a new anchor; retention refuses to start with nowhere to hand proofs to.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/adapters/config/config.js';
import { startHttpServer, type HttpServer } from '../../src/adapters/http/server.js';
import { ProofArchive } from '../../src/adapters/archive/proof-archive.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { createLogger } from '../../src/daemon/logger.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { checkedFetch } from '../helpers/openapi.js';
import { cliVerify } from '../helpers/browser.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, prefixKeys, receiptFields, spawnDaemon, startCalendars, startRelays, stopChild, tempDir, testConfig, uniquePrefix, waitFor } from '../helpers/harness.js';

const N = 6;
const signingKey = generateSecretKey();

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        if (depth < 4) walk(p, depth + 1);
      } else out.push(p);
    }
  };
  walk(dir, 0);
  return out;
}

describe('retention: confirmed subjects retired to the proof archive', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let archiveDir = '';
  let prefix = '';
  let redis: Redis;
  const running: Array<{ daemon: Daemon; http: HttpServer | null }> = [];

  function config(retention: Record<string, unknown>, http = false): Config {
    return testConfig({
      relays,
      calendars,
      headersFile,
      prefix,
      overrides: { retention, archive: { dir: archiveDir }, ...(http ? { http: { enabled: true, host: '127.0.0.1', port: 0 } } : {}) },
    });
  }

  async function start(c: Config, afterArchive?: (key: string, path: string) => Promise<void> | void): Promise<{ daemon: Daemon; http: HttpServer | null }> {
    const log = createLogger(process.env.AER1_TEST_LOG ?? 'silent');
    const daemon = new Daemon({ config: c, redisUrl: SHARED_REDIS_URL, log, signingKey, ...(afterArchive ? { afterArchive } : {}) });
    await daemon.start();
    const http = c.http.enabled ? await startHttpServer({ daemon, log }) : null;
    const r = { daemon, http };
    running.push(r);
    return r;
  }

  async function stop(r: { daemon: Daemon; http: HttpServer | null }): Promise<void> {
    await r.http?.close();
    await r.daemon.stop();
    running.splice(running.indexOf(r), 1);
  }

  async function confirmAll(issuer: Issuer, keys: readonly string[]): Promise<void> {
    await waitFor(`${keys.length} subjects confirmed`, async () => {
      for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
      const records = await issuer.store.subjects.getRecords(keys);
      return records.every((r) => r?.status === 'confirmed');
    }, 60_000, 100);
  }

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    relays = await startRelays(2);
    calendars = await startCalendars(1, headersFile, 50);
    archiveDir = join(tempDir('archive'), 'proofs');
    prefix = uniquePrefix('retention');
    redis = new Redis(SHARED_REDIS_URL);
  });

  afterAll(async () => {
    for (const r of [...running]) await stop(r);
    await redis?.quit();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  const subjects = Array.from({ length: N }, () => receiptFields());
  const keys = subjects.map((s) => s.receipt_uuid);
  const served = new Map<string, string>();

  it('removes every confirmed subject from Redis once its proof is archived; one file each, verified offline', { timeout: 120_000 }, async () => {
    // first without retention: subjects confirmed, their proofs as the API serves them
    const a = await start(config({}, true));
    const issuer = new Issuer(a.daemon.config);
    try {
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      await confirmAll(issuer, keys);
      for (const key of keys) {
        const res = await checkedFetch(`${a.http!.url}/v1/anchors/${key}/proof`);
        expect(res.status).toBe(200);
        served.set(key, await res.text());
      }
      const base = a.daemon.store.keys.base;
      const before = await prefixKeys(redis, base);
      // their batches (Nostr and OTS) and every key of theirs: hash, key list, transitions, events
      const batchIds = [...new Set((await issuer.store.subjects.getRecords(keys)).flatMap((r) => [r!.batches.nostr?.id, r!.batches.ots?.id]).filter((id): id is string => !!id))];
      expect(batchIds.length).toBeGreaterThanOrEqual(2);
      const batchEvents = (await Promise.all(batchIds.map((id) => issuer.store.batches.batchField('nostr', id, 'event')))).flatMap((j) => (j ? [(JSON.parse(j) as { id: string }).id] : []));
      expect(before.filter((k) => batchIds.some((id) => k.includes(id))).length).toBeGreaterThanOrEqual(2 * batchIds.length);
      await stop(a);

      // a daemon with retention on retires them (its job scheduler runs the passes)
      const b = await start(config({ confirmedAfterMs: 1, intervalMs: 200 }));
      await waitFor('every subject retired', async () => (await issuer.count('confirmed')) === 0, 30_000, 100);
      // and with them their batches (a later pass drops one that still had work, e.g. NIP-03 attestations)
      await waitFor('no key of their batches left', async () => (await prefixKeys(redis, base)).every((k) => !batchIds.some((id) => k.includes(id)) && !batchEvents.some((id) => k.includes(id))), 30_000, 100);
      const after = await prefixKeys(redis, base);
      expect(after.filter((k) => k.includes(':ev:')), 'events left').toEqual([]);
      expect(await b.daemon.metrics.registry.getSingleMetricAsString('aer1_retention_retired_total')).toMatch(new RegExp(`^aer1_retention_retired_total ${N}$`, 'm'));
      await stop(b);
      for (const key of keys) expect(after.filter((k) => k.includes(key)), `keys left of ${key}`).toEqual([]);
      // each subject had at least its hash (its history in it; its envelope as claims in it or
      // under e:<key>), all of them gone (above); its own
      // event going with it: test/state/lua-scripts.test.ts, forget.lua
      expect(before.filter((k) => keys.some((key) => k.includes(key))).length).toBeGreaterThanOrEqual(N);
      expect(Number(await redis.hget(`${base}:meta`, 'retired'))).toBe(N);

      const archived = files(archiveDir);
      expect(archived.length).toBe(N);
      const archive = new ProofArchive(archiveDir);
      for (const key of keys) {
        const path = archive.pathFor(key);
        expect(archived).toContain(path);
        expect(readFileSync(path, 'utf8')).toBe(served.get(key));
        const cli = await cliVerify([path, '--headers', headersFile, '--network', 'regtest', '--expected-pubkey', signingKey.publicKey, '--require-confirmed']);
        expect(cli.code, cli.stdout + cli.stderr).toBe(0);
        expect(cli.verdict).toMatch(/^VERDICT: PASS/);
      }
    } finally {
      await issuer.close();
    }
  });

  it('a restarted daemon serves the archived proofs over HTTP and the CLI, byte for byte', { timeout: 60_000 }, async () => {
    const c = await start(config({}, true));
    try {
      for (const key of keys) {
        const proof = await checkedFetch(`${c.http!.url}/v1/anchors/${key}/proof`);
        expect(proof.status).toBe(200);
        expect(proof.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await proof.text()).toBe(served.get(key));
        const detail = await checkedFetch(`${c.http!.url}/v1/anchors/${key}`);
        expect(detail.status).toBe(200);
        expect(await detail.json()).toMatchObject({ key, status: 'confirmed', archived: true, witnesses: { nostr: 'confirmed', ots: 'confirmed' }, proof: `/v1/anchors/${key}/proof` });
      }
      const unknown = await checkedFetch(`${c.http!.url}/v1/anchors/no-such-key/proof`);
      expect(unknown.status).toBe(404);
      // a key that spells a path is only ever a name inside the archive
      for (const hostile of ['..%2F..%2F..%2F..%2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', 'a%2F..%2F..%2Fb']) {
        const res = await checkedFetch(`${c.http!.url}/v1/anchors/${hostile}/proof`);
        expect(res.status, hostile).toBe(404);
        expect(await res.text()).not.toMatch(/root:/);
      }
      const file = join(tempDir('cli'), 'config.json');
      writeFileSync(file, JSON.stringify({ redis: { prefix, url: SHARED_REDIS_URL }, archive: { dir: archiveDir }, nostr: { relays: relays.map((r) => r.url) }, ots: { calendars: calendars.map((x) => x.url), minCalendars: 1 } }));
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchor.js'), 'proof', keys[0]!, '--config', file], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '' } });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual(JSON.parse(served.get(keys[0]!)!));
      const status = spawnSync(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchor.js'), 'status', keys[0]!, '--config', file], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '' } });
      expect(status.status, status.stderr).toBe(0);
      expect(status.stdout).toContain(`${keys[0]}: confirmed (receipt), archived`);
      expect(status.stdout).toContain('retired from Redis; its proof is in the archive');
    } finally {
      await stop(c);
    }
  });

  it('an archived key sent again is a duplicate from the archive, never a new anchor; another root is a conflict', { timeout: 30_000 }, async () => {
    const d = await start(config({}));
    try {
      const intake = d.daemon.intakeProcessor();
      const digest = (JSON.parse(served.get(keys[1]!)!) as { digest: string }).digest;
      expect(await intake.process(keys[1], subjects[1])).toEqual({ key: keys[1], result: 'duplicate', digest });
      await expect(intake.process(keys[2], { ...subjects[2], output_sha256: 'ab'.repeat(32) })).rejects.toThrow(/conflict: subject .* retired to the proof archive/);
      const bulk = await intake.process(undefined, { subjects: [subjects[3], subjects[4]] });
      expect(bulk).toMatchObject({ created: 0, duplicate: 2 });
      expect(await d.daemon.store.subjects.getRecords([keys[1]!, keys[2]!, keys[3]!, keys[4]!])).toEqual([null, null, null, null]);
    } finally {
      await stop(d);
    }
  });

  it('a crash between the archive write and the removal loses nothing: the next pass finishes it', { timeout: 120_000 }, async () => {
    const fresh = Array.from({ length: 3 }, () => receiptFields());
    const freshKeys = fresh.map((s) => s.receipt_uuid);
    let crash = true;
    const crashed: string[] = [];
    // retention passes are run by hand here: the scheduler's interval is a day
    const e = await start(config({ confirmedAfterMs: 1, intervalMs: 86_400_000 }), (key) => {
      if (!crash) return;
      crashed.push(key);
      throw new Error('injected crash after the archive write');
    });
    const issuer = new Issuer(e.daemon.config);
    try {
      await issuer.enqueueMany(fresh.map((s) => ({ data: s, key: s.receipt_uuid })));
      await confirmAll(issuer, freshKeys);
      const first = await e.daemon.retention!.pass();
      expect(first).toMatchObject({ archived: 3, removed: 0, failed: 3 });
      expect(crashed.sort()).toEqual([...freshKeys].sort());
      const archive = new ProofArchive(archiveDir);
      for (const key of freshKeys) {
        // both copies exist: Redis still holds the subject, the archive its proof
        expect((await issuer.store.subjects.getRecord(key))?.status).toBe('confirmed');
        expect((await archive.read(key))?.proof.status).toBe('confirmed');
      }
      crash = false;
      const second = await e.daemon.retention!.pass();
      expect(second).toMatchObject({ archived: 3, removed: 3, failed: 0 });
      for (const key of freshKeys) {
        expect(await issuer.store.subjects.getRecord(key)).toBeNull();
        const cli = await cliVerify([archive.pathFor(key), '--headers', headersFile, '--network', 'regtest', '--expected-pubkey', signingKey.publicKey, '--require-confirmed']);
        expect(cli.verdict, cli.stdout).toMatch(/^VERDICT: PASS/);
      }
      expect(files(archiveDir).length).toBe(N + 3);
      // nothing left to do
      expect(await e.daemon.retention!.pass()).toEqual({ archived: 0, removed: 0, lean: 0, failed: 0, offered: 0, waiting: 0 });
    } finally {
      await issuer.close();
      await stop(e);
    }
  });
});

describe('retention: a batch half retired', () => {
  it("the other half's proofs still export and verify and their history reads the same; the last subject takes the batch with it", { timeout: 120_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const relays = await startRelays(1);
    const calendars = await startCalendars(1, headersFile, 50);
    const prefix = uniquePrefix('retention-half');
    const config = testConfig({ relays, calendars, headersFile, prefix, overrides: { http: { enabled: true, host: '127.0.0.1', port: 0 }, nostr: { mode: 'batch' } } });
    const log = createLogger(process.env.AER1_TEST_LOG ?? 'silent');
    const daemon = new Daemon({ config, redisUrl: SHARED_REDIS_URL, log, signingKey });
    const issuer = new Issuer(config);
    let http: HttpServer | null = null;
    try {
      await daemon.start();
      http = await startHttpServer({ daemon, log });
      const subjects = Array.from({ length: 6 }, () => receiptFields());
      const all = subjects.map((x) => x.receipt_uuid);
      await issuer.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));
      await waitFor('6 confirmed', async () => {
        for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
        return (await issuer.store.subjects.getRecords(all)).every((r) => r?.status === 'confirmed');
      }, 60_000, 100);
      // the largest group of subjects sharing one OTS and one Nostr batch (a busy machine may cut the six apart)
      const records = (await issuer.store.subjects.getRecords(all))!;
      const groups = new Map<string, string[]>();
      for (const r of records) {
        const pair = `${r!.batches.ots!.id} ${r!.batches.nostr!.id}`;
        groups.set(pair, [...(groups.get(pair) ?? []), r!.key]);
      }
      const inBatch = [...groups.values()].sort((a, b) => b.length - a.length)[0]!;
      const first = records.find((r) => r!.key === inBatch[0])!;
      const otsBatch = first.batches.ots!.id;
      const nostrBatch = first.batches.nostr!.id;
      expect(inBatch.length).toBeGreaterThanOrEqual(2);
      await waitFor('the batch has no work left', async () => !(await issuer.redis.sismember(issuer.store.keys.batchesWithWork('ots'), otsBatch)), 30_000, 100);
      const detail = async (key: string): Promise<{ history: unknown[] }> => (await (await checkedFetch(`${http!.url}/v1/anchors/${key}`)).json()) as { history: unknown[] };
      const proofs = new Map<string, unknown>();
      const histories = new Map<string, unknown>();
      for (const key of inBatch) {
        proofs.set(key, await (await checkedFetch(`${http.url}/v1/anchors/${key}/proof`)).json());
        histories.set(key, (await detail(key)).history);
      }
      const half = Math.floor(inBatch.length / 2);
      expect(await daemon.store.subjects.forget(inBatch.slice(0, half))).toEqual(inBatch.slice(0, half));
      const dir = tempDir('half');
      for (const key of inBatch.slice(half)) {
        const res = await checkedFetch(`${http.url}/v1/anchors/${key}/proof`);
        expect(res.status).toBe(200);
        const body = await res.text();
        expect(JSON.parse(body)).toEqual(proofs.get(key));
        expect((await detail(key)).history).toEqual(histories.get(key));
        const file = join(dir, `${key}.json`);
        writeFileSync(file, body);
        const cli = await cliVerify([file, '--headers', headersFile, '--network', 'regtest', '--expected-pubkey', signingKey.publicKey, '--require-confirmed']);
        expect(cli.verdict, cli.stdout + cli.stderr).toMatch(/^VERDICT: PASS/);
      }
      const base = issuer.store.keys.base;
      const batchKeys = async (): Promise<string[]> => (await prefixKeys(issuer.redis as Redis, base)).filter((k) => k.includes(otsBatch) || k.includes(nostrBatch));
      expect((await batchKeys()).length).toBeGreaterThanOrEqual(6);
      expect(await daemon.store.subjects.forget(inBatch.slice(half))).toEqual(inBatch.slice(half));
      expect(await batchKeys()).toEqual([]);
      expect((await prefixKeys(issuer.redis as Redis, base)).filter((k) => inBatch.some((key) => k.includes(key)))).toEqual([]);
    } finally {
      await http?.close();
      await daemon.stop();
      await issuer.close();
      await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    }
  });
});

describe('retention with two daemons', () => {
  it('retires each subject once: one file each, the retired count equal to the subjects', { timeout: 120_000 }, async () => {
    const M = 30;
    const headersFile = join(tempDir('headers'), 'headers.json');
    const relays = await startRelays(1);
    const calendars = await startCalendars(1, headersFile, 50);
    const archiveDir = join(tempDir('archive'), 'proofs');
    const prefix = uniquePrefix('retention-two');
    const config = testConfig({ relays, calendars, headersFile, prefix, overrides: { archive: { dir: archiveDir }, retention: { confirmedAfterMs: 1, intervalMs: 100, limit: 4 } } });
    const issuer = new Issuer(config);
    const daemons: Daemon[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const d = new Daemon({ config, redisUrl: SHARED_REDIS_URL, log: createLogger('silent'), signingKey });
        await d.start();
        daemons.push(d);
      }
      const subjects = Array.from({ length: M }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));
      await waitFor(`${M} retired`, async () => {
        for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
        return Number(await issuer.redis.hget(`${issuer.store.keys.base}:meta`, 'retired')) >= M;
      }, 90_000, 100);
      expect(Number(await issuer.redis.hget(`${issuer.store.keys.base}:meta`, 'retired'))).toBe(M);
      expect(await issuer.store.indexes.subjectCount()).toBe(0);
      expect(await issuer.redis.zcard(issuer.store.keys.byStatus('confirmed'))).toBe(0);
      expect(files(archiveDir).filter((f) => f.endsWith('.json')).length).toBe(M);
      const archive = new ProofArchive(archiveDir);
      for (const x of subjects) expect((await archive.read(x.receipt_uuid))?.proof.status).toBe('confirmed');
      // both daemons' metrics together count each subject once
      let total = 0;
      for (const d of daemons) total += Number(/^aer1_retention_retired_total (\d+)$/m.exec(await d.metrics.registry.getSingleMetricAsString('aer1_retention_retired_total'))?.[1] ?? 0);
      expect(total).toBe(M);
    } finally {
      for (const d of daemons) await d.stop();
      await issuer.close();
      await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    }
  });
});

describe('retention: the daemon SIGKILLed while it archives', () => {
  it('loses nothing: every subject is in Redis or in the archive, and a restart finishes the job', { timeout: 180_000 }, async () => {
    const M = 60;
    const headersFile = join(tempDir('headers'), 'headers.json');
    const relays = await startRelays(1);
    const calendars = await startCalendars(1, headersFile, 50);
    const archiveDir = join(tempDir('archive'), 'proofs');
    const prefix = uniquePrefix('retention-kill');
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile, { key: signingKey });
    const base = testConfig({ relays, calendars, headersFile, prefix, overrides: { archive: { dir: archiveDir } } });
    const issuer = new Issuer(base);
    const subjects = Array.from({ length: M }, () => receiptFields());
    const keys = subjects.map((x) => x.receipt_uuid);
    const archive = new ProofArchive(archiveDir);
    let stderr = '';
    try {
      // anchored and confirmed by a daemon without retention
      const first = new Daemon({ config: base, redisUrl: SHARED_REDIS_URL, log: createLogger('silent'), signingKey });
      await first.start();
      await issuer.enqueueMany(subjects.map((x) => ({ data: x, key: x.receipt_uuid })));
      await waitFor(`${M} confirmed`, async () => {
        for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
        return (await issuer.count('confirmed')) === M;
      }, 90_000, 100);
      await first.stop();

      // the built daemon retires 5 per pass; killed as soon as the first proof file appears
      const retaining = { ...base, retention: { ...base.retention, confirmedAfterMs: 1, intervalMs: 100, limit: 5 } };
      let child = spawnDaemon(retaining, SHARED_REDIS_URL, keyFile);
      child.stderr?.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString('utf8')).slice(-2000);
      });
      await waitFor('a first proof archived', () => existsSync(archiveDir) && files(archiveDir).some((f) => f.endsWith('.json')), 60_000, 5);
      child.kill('SIGKILL');
      await waitFor('the daemon gone', () => child.exitCode !== null || child.signalCode !== null, 10_000, 10);
      const inRedis = new Set((await issuer.store.subjects.getRecords(keys)).flatMap((r) => (r ? [r.key] : [])));
      const inArchive = new Set<string>();
      for (const k of keys) if (await archive.read(k)) inArchive.add(k);
      // nothing lost: each subject is in Redis or its proof in the archive (or both: the crash window)
      for (const k of keys) expect(inRedis.has(k) || inArchive.has(k), `${k} is nowhere`).toBe(true);
      console.log(`retention kill: at the kill ${inRedis.size} subjects in Redis, ${inArchive.size} archived, ${[...inArchive].filter((k) => inRedis.has(k)).length} in both`);

      child = spawnDaemon(retaining, SHARED_REDIS_URL, keyFile);
      try {
        await waitFor('every subject retired after the restart', async () => (await issuer.count('confirmed')) === 0, 60_000, 100);
      } finally {
        await stopChild(child);
      }
      expect(files(archiveDir).filter((f) => f.endsWith('.json')).length).toBe(M);
      for (const k of keys.slice(0, 3)) {
        const cli = await cliVerify([archive.pathFor(k), '--headers', headersFile, '--network', 'regtest', '--expected-pubkey', signingKey.publicKey, '--require-confirmed']);
        expect(cli.verdict, cli.stdout + cli.stderr).toMatch(/^VERDICT: PASS/);
      }
    } catch (err) {
      throw new Error(`${(err as Error).message}; daemon stderr: ${stderr}`);
    } finally {
      await issuer.close();
      await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    }
  });
});

describe('retention config', () => {
  it('refuses to start with nowhere to hand proofs to, naming the keys', () => {
    // the anchor log (on by default) is a place: subjects logged and final are retired lean
    expect(loadConfig({ env: {}, overrides: { retention: { confirmedDays: 30 } } }).retention.confirmedDays).toBe(30);
    const bad = (overrides: Record<string, unknown>) => () => loadConfig({ env: {}, overrides: { ...overrides, log: { level: 'silent', enabled: false } } });
    expect(bad({ retention: { confirmedDays: 30 } })).toThrow(/retention\.confirmedDays: .*nowhere to hand proofs to.*archive\.dir.*webhooks/);
    expect(bad({ retention: { confirmedAfterMs: 1000 } })).toThrow(/retention\.confirmedAfterMs: .*archive\.dir.*webhooks/);
    expect(loadConfig({ env: {}, overrides: { retention: { confirmedDays: 30 }, webhooks: [{ url: 'http://127.0.0.1:1/hook', secret: 'a-secret-of-16-chars-or-more' }] } }).retention.confirmedDays).toBe(30);
    expect(loadConfig({ env: {}, overrides: { retention: { confirmedDays: 30 }, archive: { dir: '/tmp/x' } } }).retention.confirmedDays).toBe(30);
    expect(loadConfig({ env: { AER1_RETENTION_CONFIRMED_DAYS: '7', AER1_ARCHIVE_DIR: '/tmp/a' } }).retention.confirmedDays).toBe(7);
  });

  it('aer1-anchord exits 2 with the message, before touching Redis', () => {
    const dir = tempDir('anchord');
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ retention: { confirmedDays: 30 }, log: { enabled: false }, redis: { url: 'redis://127.0.0.1:1' } }));
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchord.js'), '--config', file], { encoding: 'utf8', timeout: 30_000, cwd: dir, env: { PATH: process.env.PATH ?? '' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/retention\.confirmedDays: .*archive\.dir.*webhooks/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
