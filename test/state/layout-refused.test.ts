/**
 * One stored layout (`{prefix}:schema`, AnchorStore.openSchema): a fresh prefix is marked
 * STATE_SCHEMA on the daemon's first start; anything else under the prefix — a schema key with
 * another number (an earlier development layout, a newer release), one that is not a number,
 * or, without a schema key, the keys only the development layout before it wrote — makes
 * the daemon refuse to start and the CLI refuse to run: exit 2, one line saying what was
 * found and what to do, nothing written.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { STATE_SCHEMA } from '../../src/adapters/state/schema.js';
import type { StateKeys } from '../../src/adapters/state/keys.js';
import { UsageError } from '../../src/core/errors/errors.js';
import { REPO_ROOT, SHARED_REDIS_URL, startDaemon, tempDir, testConfig, uniquePrefix } from '../helpers/harness.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
});
afterAll(async () => {
  await redis?.quit();
});

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function keysUnder(k: StateKeys): Promise<string[]> {
  return (await redis.keys(`${k.base}*`)).sort();
}

/** The state's keys under the prefix (BullMQ's queue keys, which a Queue writes when made, left out). */
async function stateKeysUnder(k: StateKeys): Promise<string[]> {
  return (await keysUnder(k)).filter((key) => !key.startsWith(`${k.base}:aer1-anchor`));
}

async function dropKeys(k: StateKeys): Promise<void> {
  const left = await keysUnder(k);
  if (left.length > 0) await redis.del(...left);
}

/** What each older or foreign state looks like in Redis, and the one line it is refused with. */
const cases: Array<{ name: string; write: (k: StateKeys) => Promise<void>; line: (k: StateKeys) => string }> = [
  {
    name: 'a schema key of an earlier development layout (5)',
    write: async (k) => {
      await redis.set(k.schema, '5');
      await redis.hset(k.subject('old-1'), { status: 'pending', created: 1, witnesses: 'nostr', 'w:nostr': 'pending' });
    },
    line: (k) =>
      `the state under redis.prefix ${k.base} is layout 5 (${k.schema}), written by an earlier development release; this release reads only layout ${STATE_SCHEMA} and does not convert older ones; to start afresh, delete the keys under ${k.base} (redis-cli --scan --pattern '${k.base}*' | xargs redis-cli unlink) or set redis.prefix to a new prefix`,
  },
  {
    name: 'a schema key of a newer release',
    write: async (k) => {
      await redis.set(k.schema, String(STATE_SCHEMA + 1));
    },
    line: (k) => `the state under redis.prefix ${k.base} is layout ${STATE_SCHEMA + 1} (${k.schema}), newer than this release (layout ${STATE_SCHEMA}): run the release that wrote it, or set redis.prefix to a prefix of its own`,
  },
  {
    name: 'a schema key that is not a layout number',
    write: async (k) => {
      await redis.set(k.schema, 'banana');
    },
    line: (k) => `the state under redis.prefix ${k.base} has an unknown layout version "banana" in ${k.schema} (this release reads layout ${STATE_SCHEMA}): it was not written by aer1-anchor; set redis.prefix to a prefix of its own`,
  },
  {
    name: 'subjects without a schema key (the layout before the key existed: idx:all, no counts)',
    write: async (k) => {
      await redis.zadd(`${k.base}:idx:all`, 1, 'old-1');
      await redis.zadd(k.byStatus('pending'), 1, 'old-1');
      await redis.hset(k.subject('old-1'), { key: 'old-1', status: 'pending', created: 1 });
    },
    line: (k) =>
      `the state under redis.prefix ${k.base} has no layout version (${k.schema} is missing, ${k.base}:idx:all is there): it was written by a development release before layouts were numbered, which this release (layout ${STATE_SCHEMA}) does not read; to start afresh, delete the keys under ${k.base} (redis-cli --scan --pattern '${k.base}*' | xargs redis-cli unlink) or set redis.prefix to a new prefix`,
  },
  {
    name: 'an index of confirmed subjects per witness without a schema key (the same layout, its subjects retired)',
    write: async (k) => {
      await redis.zadd(`${k.base}:idx:w:ots:confirmed`, 1, 'old-2');
    },
    line: (k) => `the state under redis.prefix ${k.base} has no layout version (${k.schema} is missing, ${k.base}:idx:w:ots:confirmed is there)`,
  },
];

describe('one stored layout', () => {
  it(`a fresh prefix: the daemon marks it layout ${STATE_SCHEMA} on first start and opens it as it is after; a client writes nothing`, { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const store = new AnchorStore(redis, config.redis.prefix);
    try {
      expect(await store.openSchema({ write: false })).toEqual({ found: 'fresh', recorded: false });
      expect(await redis.get(store.keys.schema)).toBeNull();
      const daemon = await startDaemon(config);
      try {
        expect(await redis.get(store.keys.schema)).toBe(String(STATE_SCHEMA));
        expect(await store.openSchema({ write: true })).toEqual({ found: 'current', recorded: false });
      } finally {
        await daemon.stop();
      }
    } finally {
      await dropKeys(store.keys);
    }
  });

  it('state of this layout written before any daemon opened the prefix (no schema key, no older keys) is marked and opened', { timeout: 30_000 }, async () => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const store = new AnchorStore(redis, config.redis.prefix);
    try {
      await store.subjects.acceptMany({ witnesses: ['ots'], inboxes: ['ots'] }, [{ key: 'k-1', kind: 'receipt', envelopeCanonical: '{"k":"k-1"}', digest: 'a'.repeat(64), fingerprint: 'b'.repeat(64) }]);
      expect(await store.openSchema({ write: false })).toEqual({ found: 'fresh', recorded: false });
      expect(await store.openSchema({ write: true })).toEqual({ found: 'fresh', recorded: true });
      expect(await redis.get(store.keys.schema)).toBe(String(STATE_SCHEMA));
      expect((await store.subjects.getRecord('k-1'))?.status).toBe('pending');
    } finally {
      await dropKeys(store.keys);
    }
  });

  it.each(cases)('$name: Daemon.start throws redis_schema with its one line and writes nothing', { timeout: 30_000 }, async (c) => {
    const config = testConfig({ overrides: { ots: { enabled: true } } });
    const k = new AnchorStore(redis, config.redis.prefix).keys;
    try {
      await c.write(k);
      const before = await stateKeysUnder(k);
      const err = await startDaemon(config).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('redis_schema');
      expect((err as Error).message).toMatch(new RegExp(`^${escape(c.line(k))}`));
      expect((err as Error).message).not.toContain('\n');
      // nothing written to the state: the same keys, the schema key as it was
      expect(await stateKeysUnder(k)).toEqual(before);
      expect(before.length).toBeGreaterThan(0);
    } finally {
      await dropKeys(k);
    }
  });

  it('aer1-anchord refuses an earlier layout: exit 2 and its one line; aer1-anchor status the same', { timeout: 40_000 }, async () => {
    const dir = tempDir('layout');
    const config = testConfig({ prefix: uniquePrefix('layout'), overrides: { ots: { enabled: true } } });
    const k = new AnchorStore(redis, config.redis.prefix).keys;
    const older = cases[0]!;
    try {
      await older.write(k);
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
      expect(stderr.trim().split('\n')).toEqual([`aer1-anchord: ${older.line(k)}`]);
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js'), 'status', 'some-key', '--config', file], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: dir }, cwd: dir, timeout: 20_000 });
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([`aer1-anchor: ${older.line(k)}`]);
    } finally {
      await dropKeys(k);
    }
  });
});
