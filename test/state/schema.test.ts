/**
 * The state's layout version (`{prefix}:schema`, AnchorStore.openSchema): a fresh prefix is
 * marked 2 on first start; a Redis written by the layout before the key existed (layout 1:
 * subjects, every envelope under e:<key>, no schema key) is read as it is and marked 2; a
 * layout this release does not know makes aer1-anchord refuse to start (exit 2, one line)
 * and aer1-anchor status refuse the same way, writing nothing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnchorStore, STATE_SCHEMA } from '../../src/adapters/state/anchor-store.js';
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
  it('a fresh prefix: the daemon marks it layout 2 on first start, and finds it current after', { timeout: 30_000 }, async () => {
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

  it('a Redis written by layout 1 (envelope under e:<key> beside the event, no schema key): read as it is, marked 2', { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const store = new AnchorStore(redis, config.redis.prefix);
    const s = subject();
    await store.accept({ ...s, ...BOTH });
    // what layout 1 wrote besides: the envelope's own copy; and no schema key
    await redis.set(store.keys.envelope(s.key), s.envelopeCanonical);
    expect(await redis.get(store.keys.schema)).toBeNull();
    // a client writes nothing, and reads the subject
    expect(await store.openSchema({ write: false })).toEqual({ found: 'layout 1', recorded: false });
    expect(await redis.get(store.keys.schema)).toBeNull();
    const daemon = await startDaemon(config);
    try {
      expect(await redis.get(store.keys.schema)).toBe('2');
      expect(await daemon.store.getRecord(s.key)).toMatchObject({ status: 'pending', envelopeCanonical: s.envelopeCanonical, digest: s.digest, nostrEventId: s.nostrEvent.id });
    } finally {
      await daemon.stop();
    }
  });

  it.each([
    ['3', /is layout 3 \(\{[^}]+\}:schema\), newer than this release knows \(2\): run the release that wrote it, or set redis\.prefix to a prefix of its own$/],
    ['banana', /has an unknown layout version "banana" in \{[^}]+\}:schema \(this release writes 2\): it was not written by aer1-anchor, or set redis\.prefix/],
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
    await redis.set(keys.schema, '3');
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
    expect(lines[0]).toMatch(/^aer1-anchord: the state under redis\.prefix \{schema-[0-9a-f]+\} is layout 3 .*newer than this release knows \(2\)/);
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js'), 'status', 'some-key', '--config', file], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir }, cwd: dir, timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toMatch(/^aer1-anchor: the state under redis\.prefix \{schema-[0-9a-f]+\} is layout 3 /);
  });
});
