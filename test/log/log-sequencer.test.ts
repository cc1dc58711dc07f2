/**
 * Sequencing subjects into a shard's log in Redis (real Redis) and publishing them to the
 * log's files: a key is logged once; a crash between the checkpoint and Redis's update, and
 * a Redis that lost writes the files already hold (an AOF tail cut, restored here from a
 * DUMP taken before), are settled from the files: no index inside a signed checkpoint is
 * handed out again, no key is logged twice, and the files stay consistent with every
 * earlier checkpoint.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEntry, encodeEntry } from '../../src/core/log/entry.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { LogPublisher } from '../../src/adapters/log/log-publisher.js';
import { LogKeys, LogSequencer } from '../../src/adapters/log/log-sequencer.js';
import { DirectorySource } from '../../src/adapters/log/log-source.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/shared-redis.js';

const work = mkdtempSync(join(tmpdir(), 'aer1-log-seq-'));
let redis: Redis;
beforeAll(async () => {
  redis = new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: 1 });
  await redis.ping();
});
afterAll(async () => {
  await redis.quit();
  rmSync(work, { recursive: true, force: true });
});

const ORIGIN = 'example.test/aer1/0';
const signer = generateSignerKey(ORIGIN).signer;
const vkey = parseVerifierKey(signer.verifierKey);
const entry = (key: string, root = 'r'): Buffer => encodeEntry({ digest: createHash('sha256').update(`${key}/${root}`).digest(), kind: 'receipt', key });
const keysOf = (entries: Buffer[]): string[] => entries.map((e) => decodeEntry(e).key);

async function setup(name: string) {
  const keys = new LogKeys(`{${uniquePrefix('log')}}`);
  const sequencer = new LogSequencer(redis, keys);
  const dir = join(work, name);
  let writer = await LogWriter.open({ dir, origin: ORIGIN, signer });
  return {
    keys,
    sequencer,
    dir,
    get writer() {
      return writer;
    },
    publisher: () => new LogPublisher(sequencer, writer),
    reopen: async () => {
      writer = await LogWriter.open({ dir, origin: ORIGIN, signer });
    },
    logged: () => keysOf(writer.entries(0, writer.checkpointed.checkpoint.size)),
  };
}

describe('LogSequencer and LogPublisher', () => {
  it('gives each key the next index once (also twice in one call), and publishes the tail to the files', async () => {
    const s = await setup('basic');
    const first = await s.sequencer.sequence([entry('a'), entry('b'), entry('a'), entry('c')]);
    expect(first).toEqual([{ index: 0, added: true }, { index: 1, added: true }, { index: 0, added: false }, { index: 2, added: true }]);
    expect(await s.sequencer.sequence([entry('b', 'another root')])).toEqual([{ index: 1, added: false }]);
    expect(await s.sequencer.state()).toEqual({ size: 3, published: 0 });
    const out = await s.publisher().publish();
    expect(out.checkpoint?.size).toBe(3);
    expect(s.logged()).toEqual(['a', 'b', 'c']);
    expect(await s.sequencer.state()).toEqual({ size: 3, published: 3 });
    expect(await redis.llen(s.keys.tail)).toBe(0);
    expect(await s.sequencer.indexOf('c')).toBe(2);
    expect((await s.publisher().publish()).checkpoint).toBeNull();
  });

  it('settles a crash between the checkpoint and Redis\'s update: nothing logged twice', async () => {
    const s = await setup('crash');
    await s.sequencer.sequence(['a', 'b', 'c'].map((k) => entry(k)));
    // the publisher's first half: the files, and then the process dies
    for (const e of await s.sequencer.tail(10)) s.writer.appendEncoded(e);
    await s.writer.checkpoint();
    await s.reopen();
    await s.sequencer.sequence([entry('d')]);
    const out = await s.publisher().publish();
    expect(out).toMatchObject({ resequenced: 0, lost: 0, checkpoint: { size: 4 } });
    expect(s.logged()).toEqual(['a', 'b', 'c', 'd']);
    expect(await s.sequencer.state()).toEqual({ size: 4, published: 4 });
  });

  it('settles a crash between keeping a checkpoint and renaming the live one: the kept size stands, no index handed out twice', async () => {
    const s = await setup('kept');
    await s.sequencer.sequence(['a', 'b', 'c'].map((k) => entry(k)));
    await s.publisher().publish();
    const live = readFileSync(join(s.dir, 'checkpoint'));
    await s.sequencer.sequence(['d', 'e'].map((k) => entry(k)));
    // the publisher's first half up to checkpoints/5 kept; the process dies before the live rename
    for (const e of await s.sequencer.tail(10)) s.writer.appendEncoded(e);
    await s.writer.checkpoint();
    writeFileSync(join(s.dir, 'checkpoint'), live);
    await s.reopen();
    expect(await s.sequencer.sequence([entry('f'), entry('d')])).toEqual([{ index: 5, added: true }, { index: 3, added: false }]);
    const out = await s.publisher().publish();
    expect(out).toMatchObject({ resequenced: 0, lost: 0, checkpoint: { size: 6 } });
    expect(s.logged()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(await s.sequencer.state()).toEqual({ size: 6, published: 6 });
  });

  it('settles a Redis that lost writes the files hold: the signed indexes stay, the reused ones are sequenced anew, a key re-sent is not logged twice', async () => {
    const s = await setup('lost');
    await s.sequencer.sequence(Array.from({ length: 10 }, (_, i) => entry(`a${i}`)));
    await s.publisher().publish();
    const snapshot = await Promise.all(s.keys.all.map(async (k) => [k, await redis.dumpBuffer(k)] as const));
    await s.sequencer.sequence(Array.from({ length: 5 }, (_, i) => entry(`b${i}`)));
    await s.publisher().publish();
    const signedAt15 = readFileSync(join(s.dir, 'checkpoint'));
    // Redis comes back without the last writes (as after an AOF tail cut)
    for (const [k, v] of snapshot) {
      if (v === null) await redis.del(k);
      else await redis.restore(k, 0, v, 'REPLACE');
    }
    expect(await s.sequencer.state()).toEqual({ size: 10, published: 10 });
    // new subjects get indexes 10…: the files signed those for b0…b4; b2's job is retried
    const given = await s.sequencer.sequence([entry('c0'), entry('c1'), entry('c2'), entry('b2')]);
    expect(given.map((g) => g.index)).toEqual([10, 11, 12, 13]);
    const out = await s.publisher().publish();
    expect(out.resequenced).toBe(4);
    // b0…b4: signed in the files, unknown to Redis at their index (b2 given 13 meanwhile)
    expect(out.lost).toBe(5);
    expect(s.logged()).toEqual([...Array.from({ length: 10 }, (_, i) => `a${i}`), 'b0', 'b1', 'b2', 'b3', 'b4', 'c0', 'c1', 'c2']);
    expect(await s.sequencer.state()).toEqual({ size: 18, published: 18 });
    expect(await s.sequencer.indexOf('b2')).toBe(12);
    expect(await s.sequencer.indexOf('c0')).toBe(15);
    const report = await verifyLog(new DirectorySource(s.dir), { trusted: [vkey], older: [{ name: 'checkpoint at 15', note: signedAt15 }] });
    expect(report.verdict).toBe('PASS');
    expect(report.checks.find((c) => c.name === 'consistency')?.detail).toMatch(/size 15 is a prefix of size 18/);
  });

  it('refuses a log folder behind Redis (restored from an old copy)', async () => {
    const s = await setup('behind');
    await s.sequencer.sequence([entry('a')]);
    await s.publisher().publish();
    const other = await setup('behind-empty');
    const stale = new LogPublisher(s.sequencer, other.writer);
    await expect(stale.publish()).rejects.toThrow(/the log folder holds 0 entries, Redis says 1 were published/);
  });
});
