/**
 * The embedded Redis: one redis-server per data folder, ever. The built `aer1-anchord`
 * (a child process, 127.0.0.1:6379 not used) starts one; SIGKILLed, it leaves the server
 * running and the next start reuses it (same pid, same data); a server in the folder that
 * is not recorded is stopped before a new one starts on the same append-only file; the
 * CLI finds the server through the folder's aer1-redis.json, with no flags.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_REDIS_FILE, readEmbeddedRedisRecord, redisServersIn } from '../../src/daemon/embedded-redis.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { REPO_ROOT, receiptFields, spawnAnchord, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const anchor = join(REPO_ROOT, 'bin/aer1-anchor.js');

describe('the embedded redis-server of a data folder', () => {
  const home = tempDir('embedded');
  const dataDir = join(home, 'var', 'redis');
  const configFile = join(home, 'config.json');
  let relays: DevRelay[] = [];
  const children: ChildProcess[] = [];
  let prefix = '';

  beforeAll(async () => {
    relays = await startRelays(1);
    const keyFile = join(home, 'nostr.key');
    writeKeyFile(keyFile);
    const config = testConfig({ relays });
    prefix = config.redis.prefix;
    const redis = { ...config.redis, url: null, localDefault: false, embedded: true, embeddedDir: dataDir };
    writeFileSync(configFile, JSON.stringify({ ...config, redis, nostr: { ...config.nostr, keyFile }, log: { ...config.log, level: 'info' } }));
  });

  afterAll(async () => {
    for (const c of children) await stopChild(c);
    // a failed test may leave the folder's server running: stop it by its pid
    for (const pid of redisServersIn(dataDir)) process.kill(pid, 'SIGTERM');
    await waitFor('the folder has no redis-server', () => redisServersIn(dataDir).length === 0, 10_000, 50);
    await Promise.all(relays.map((r) => r.close()));
    rmSync(home, { recursive: true, force: true });
  });

  /** Starts the daemon and waits for its ready line; returns the child and its log so far. */
  async function startAnchord(): Promise<{ child: ChildProcess; log: () => string }> {
    const child = spawnAnchord(['--config', configFile], { cwd: home, env: { PATH: process.env.PATH ?? '', HOME: home } });
    children.push(child);
    let log = '';
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString('utf8');
    });
    await waitFor('aer1-anchord ready', () => {
      if (child.exitCode !== null) throw new Error(`aer1-anchord exited ${child.exitCode}: ${log}`);
      return log.includes('aer1-anchord ready');
    }, 30_000, 20);
    return { child, log: () => log };
  }

  function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync(process.execPath, [anchor, ...args, '--config', configFile], { cwd: home, env: { PATH: process.env.PATH ?? '', HOME: home }, encoding: 'utf8', timeout: 30_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  /** The subject's record, read from the Redis the folder's record names. */
  async function recordOf(key: string): Promise<unknown> {
    const redis = new Redis(readEmbeddedRedisRecord(dataDir)!.url, { maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    try {
      return await new AnchorStore(redis, prefix).subjects.getRecord(key);
    } finally {
      redis.disconnect();
    }
  }

  it('survives a SIGKILLed daemon, is reused by the next start, and the CLI finds it without flags', async () => {
    const first = await startAnchord();
    expect(first.log()).toMatch(/Redis: embedded \(data in [^;]+; pid \d+\)/);
    const servers = redisServersIn(dataDir);
    expect(servers).toHaveLength(1);
    const record = readEmbeddedRedisRecord(dataDir)!;
    expect(record).toMatchObject({ pid: servers[0], dir: dataDir, url: `redis://127.0.0.1:${record.port}` });

    const subject = receiptFields();
    const file = join(home, 'subject.json');
    writeFileSync(file, JSON.stringify(subject));
    const enqueued = cli('enqueue', file);
    expect(enqueued.status, enqueued.stderr).toBe(0);
    await waitFor('the subject accepted', () => recordOf(subject.receipt_uuid), 30_000, 50);

    first.child.kill('SIGKILL');
    await waitFor('the daemon gone', () => first.child.exitCode !== null || first.child.signalCode !== null, 10_000, 20);
    expect(redisServersIn(dataDir)).toEqual(servers); // left running, on purpose

    const second = await startAnchord();
    expect(second.log()).toMatch(new RegExp(`reused the one still running, pid ${servers[0]}`));
    expect(redisServersIn(dataDir)).toEqual(servers);
    expect(await recordOf(subject.receipt_uuid)).toMatchObject({ key: subject.receipt_uuid });
    const status = cli('status', subject.receipt_uuid, '--json');
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toContain(subject.receipt_uuid);

    // a clean stop takes the server with it and removes the record
    second.child.kill('SIGTERM');
    await waitFor('the daemon stopped', () => second.child.exitCode !== null, 30_000, 20);
    expect(second.child.exitCode).toBe(0);
    expect(redisServersIn(dataDir)).toEqual([]);
    expect(existsSync(join(dataDir, EMBEDDED_REDIS_FILE))).toBe(false);
    const none = cli('status', subject.receipt_uuid);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/no running embedded redis-server is recorded in .*aer1-redis\.json/);
  });

  it('stops a server working in the folder that it cannot reuse before starting one, on the same data; a dead holder\'s lock is taken over', async () => {
    const subject = receiptFields();
    const first = await startAnchord();
    const file = join(home, 'subject2.json');
    writeFileSync(file, JSON.stringify(subject));
    expect(cli('enqueue', file).status).toBe(0);
    await waitFor('the subject accepted', () => recordOf(subject.receipt_uuid), 30_000, 50);
    const [orphan] = redisServersIn(dataDir);
    first.child.kill('SIGKILL');
    await waitFor('the daemon gone', () => first.child.signalCode !== null, 10_000, 20);
    // the record lost and a start lock left by a dead process: the server is not provably the record's
    rmSync(join(dataDir, EMBEDDED_REDIS_FILE));
    writeFileSync(join(dataDir, 'aer1-redis.lock'), '999999999\n');

    const second = await startAnchord();
    const now = redisServersIn(dataDir);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(orphan);
    expect(second.log()).not.toContain('reused');
    expect(await recordOf(subject.receipt_uuid)).toMatchObject({ key: subject.receipt_uuid });
    second.child.kill('SIGTERM');
    await waitFor('the daemon stopped', () => second.child.exitCode !== null, 30_000, 20);
    expect(redisServersIn(dataDir)).toEqual([]);
  });
});
