/**
 * The anchor log in the daemon (log.enabled): accept.lua appends each subject it creates to
 * its shard's log in the same script call, in acceptance order (a duplicate or a conflict is
 * never logged, a key once), and the shard's LogService writes the tiles and a signed
 * checkpoint that `log verify`'s checks pass. Real Redis, real files.
 */
import { randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject } from '../../src/adapters/state/subjects.js';
import { LogService } from '../../src/adapters/log/log-service.js';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { DirectorySource } from '../../src/adapters/log/log-source.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { connectRedis } from '../../src/adapters/redis/connection.js';
import { decodeEntry } from '../../src/core/log/entry.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { createLogger } from '../../src/daemon/logger.js';
import { deletePrefix, SHARED_REDIS_URL, tempDir, uniquePrefix } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const subject = (key: string, kind = 'receipt', root = 'r'): AcceptSubject => ({
  key,
  kind,
  envelopeCanonical: `{"k":"${key}","r":"${root}"}`,
  digest: sha256Hex(`${key}/${root}`),
  fingerprint: sha256Hex(`fp-${key}/${root}`),
});

function setup(label: string) {
  const prefix = uniquePrefix(label);
  const redis = connectRedis(SHARED_REDIS_URL);
  const dir = tempDir('aer1-anchor-log');
  cleanups.push(async () => {
    await deletePrefix(redis, prefix);
    await redis.quit();
    rmSync(dir, { recursive: true, force: true });
  });
  const store = new AnchorStore(redis, prefix);
  const signer = generateSignerKey('example.test/aer1').signer;
  const service = new LogService(redis, { dir, origin: 'example.test/aer1', signer, intervalMs: 100_000, base: store.keys.base }, createLogger('silent'));
  store.subjects.logKeys = service.keys;
  return { redis, store, service, dir, signer };
}

const targets = { witnesses: ['ots'] as const, inboxes: ['ots'] as const };

describe('accept sequences into the anchor log', () => {
  it('appends each created subject in acceptance order, with its d, kind and key; duplicates and conflicts are not logged', async () => {
    const { store, service, dir, signer } = setup('logacc');
    await service.start();
    cleanups.push(() => service.stop());
    const r1 = await store.subjects.acceptMany(targets, [subject('a'), subject('b', 'workflow-close'), subject('a'), subject('c', 'chain-head')]);
    expect(r1.results.map((r) => r.result)).toEqual(['created', 'created', 'duplicate', 'created']);
    const r2 = await store.subjects.acceptMany(targets, [subject('b', 'workflow-close', 'another root'), subject('d')]);
    expect(r2.results.map((r) => r.result)).toEqual(['conflict', 'created']);
    expect(await service.sequencer.state()).toEqual({ size: 4, published: 0 });
    expect(await service.sequencer.indexOf('d')).toBe(3);

    expect(await service.tick()).toEqual({ size: 4 });
    const writer = await LogWriter.open({ dir, origin: 'example.test/aer1', signer });
    const entries = writer.entries(0, 4).map((e) => decodeEntry(e));
    expect(entries.map((e) => [e.key, e.kind])).toEqual([['a', 'receipt'], ['b', 'workflow_close'], ['c', 'job_timeline'], ['d', 'receipt']]);
    expect(entries.map((e) => Buffer.from(e.digest).toString('hex'))).toEqual(['a/r', 'b/r', 'c/r', 'd/r'].map((x) => sha256Hex(x)));
    const report = await verifyLog(new DirectorySource(dir), { trusted: [parseVerifierKey(signer.verifierKey)] });
    expect(report.verdict).toBe('PASS');
    expect(report.checkpoint?.size).toBe(4);
    // nothing new: no new checkpoint
    const before = statSync(join(dir, 'checkpoint')).mtimeMs;
    expect(await service.tick()).toBeNull();
    expect(statSync(join(dir, 'checkpoint')).mtimeMs).toBe(before);
  });

  it('a bulk accept of 600 subjects (three script calls) logs all of them once, in order', async () => {
    const { store, service } = setup('logbulk');
    await service.start();
    cleanups.push(() => service.stop());
    const keys = Array.from({ length: 600 }, () => randomBytes(8).toString('hex'));
    await store.subjects.acceptMany(targets, keys.map((k) => subject(k)));
    await store.subjects.acceptMany(targets, keys.slice(0, 300).map((k) => subject(k)));
    expect(await service.tick()).toEqual({ size: 600 });
    expect(await Promise.all([0, 299, 599].map((i) => service.sequencer.indexOf(keys[i]!)))).toEqual([0, 299, 599]);
  });

  it('without the log, accept writes no log key', async () => {
    const { store, service, redis } = setup('lognone');
    store.subjects.logKeys = null;
    await store.subjects.acceptMany(targets, [subject('x')]);
    expect(await redis.exists(service.keys.size, service.keys.index, service.keys.tail)).toBe(0);
  });

  it('one publisher at a time: a second service on the shard waits while the lease is held, and takes over the same folder once it is let go', async () => {
    const { store, service, redis, dir, signer } = setup('loglease');
    await service.start();
    const other = new LogService(redis, { dir, origin: 'example.test/aer1', signer, intervalMs: 100_000, base: store.keys.base }, createLogger('silent'));
    cleanups.push(() => other.stop());
    await store.subjects.acceptMany(targets, [subject('a')]);
    expect(await service.tick()).toEqual({ size: 1 });
    await store.subjects.acceptMany(targets, [subject('b')]);
    expect(await other.tick()).toBeNull();
    expect(await service.sequencer.state()).toEqual({ size: 2, published: 1 });
    await service.stop();
    expect(await other.tick()).toEqual({ size: 2 });
  });
});

describe('aer1-anchord with log.enabled', () => {
  it('makes the log key on first start (mode 0600), prints the verifier key and origin, and keeps the key across restarts', { timeout: 30_000 }, async () => {
    const { runDaemon } = await import('../../src/daemon/main.js');
    const { testConfig } = await import('../helpers/harness.js');
    const { PassThrough } = await import('node:stream');
    const dir = tempDir('aer1-log-start');
    const prefix = uniquePrefix('logstart');
    const redis = connectRedis(SHARED_REDIS_URL);
    cleanups.push(async () => {
      await deletePrefix(redis, prefix);
      await redis.quit();
      rmSync(dir, { recursive: true, force: true });
    });
    const config = testConfig({ prefix, overrides: { redis: { url: SHARED_REDIS_URL }, ots: { enabled: true, calendars: ['http://127.0.0.1:1'] }, log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key') } } });
    const lines: string[] = [];
    const start = async () => {
      const out = new PassThrough();
      out.on('data', (d: Buffer) => lines.push(...d.toString('utf8').trim().split('\n')));
      const running = await runDaemon(config, createLogger('info', out, 'json'));
      await running.stop();
    };
    await start();
    expect(statSync(join(dir, 'log.key')).mode & 0o777).toBe(0o600);
    const printed = lines.map((l) => JSON.parse(l) as { msg: string; vkey?: string; origins?: string[] }).filter((l) => l.msg.startsWith('anchor log: '));
    expect(printed).toHaveLength(1);
    const vkey = parseVerifierKey(printed[0]!.vkey!);
    expect(vkey.name).toBe(`aer1-anchor/${prefix}`);
    expect(printed[0]!.origins).toEqual([`aer1-anchor/${prefix}`]);
    expect(printed[0]!.msg).toContain(vkey.text);
    expect(statSync(join(dir, 'log', 'checkpoint')).isFile()).toBe(true);
    lines.length = 0;
    await start();
    const again = lines.map((l) => JSON.parse(l) as { msg: string; vkey?: string }).find((l) => l.msg.startsWith('anchor log: '));
    expect(again?.vkey).toBe(vkey.text);
  });
});
