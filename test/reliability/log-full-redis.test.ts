/**
 * The anchor log while Redis is full (maxmemory, noeviction), on a private redis-server:
 * an accept Redis refuses is neither accepted nor logged (one script: all or nothing); the
 * publisher, refused its lease, writes no checkpoint meanwhile; once Redis takes writes
 * again every entry counted before is published in order, none lost, doubled or given a
 * second index. (Files ahead of Redis, a crash or lost writes after a checkpoint, are
 * settled from the files: test/log/log-sequencer.test.ts.)
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject } from '../../src/adapters/state/subjects.js';
import { LogService } from '../../src/adapters/log/log-service.js';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { DirectorySource } from '../../src/adapters/log/log-source.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { connectRedis, type RedisClient } from '../../src/adapters/redis/connection.js';
import { decodeEntry } from '../../src/core/log/entry.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { createLogger } from '../../src/daemon/logger.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis, tempDir } from '../helpers/harness.js';

let redis: EmbeddedRedis | null = null;
let client: RedisClient | null = null;
const dir = tempDir('aer1-log-full');
afterAll(async () => {
  await client?.quit().catch(() => undefined);
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const subject = (key: string): AcceptSubject => ({ key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: sha256Hex(`d/${key}`), fingerprint: sha256Hex(`f/${key}`) });
const targets = { witnesses: ['ots'] as const, inboxes: ['ots'] as const };

describe('the anchor log with a full Redis', () => {
  it('refuses an accept whole, writes no checkpoint while full, and publishes every counted entry in order afterwards', { timeout: 60_000 }, async () => {
    redis = await privateRedis(true);
    client = connectRedis(redis.url);
    const store = new AnchorStore(client, 'full');
    const { signer } = generateSignerKey('example.test/full');
    const logDir = join(dir, 'log');
    const service = new LogService(client, { dir: logDir, origin: 'example.test/full', signer, intervalMs: 100_000, base: store.keys.base }, createLogger('silent'));
    store.subjects.logKeys = service.keys;
    await service.start();
    try {
      await store.subjects.acceptMany(targets, Array.from({ length: 300 }, (_, i) => subject(`a${i}`)));
      // full: the limit below what is used
      const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
      await client.config('SET', 'maxmemory', String(Math.floor(used / 2)));
      await expect(store.subjects.acceptMany(targets, [subject('refused')])).rejects.toThrow(/OOM/);
      expect(await client.hexists(service.keys.index, 'refused')).toBe(0);
      expect(await store.subjects.getRecord('refused')).toBeNull();
      // Redis refuses the publisher's lease: no checkpoint while full, the files do not run ahead
      expect(await service.tick()).toBeNull();
      expect((await LogWriter.open({ dir: logDir, origin: 'example.test/full', signer })).checkpointed.checkpoint.size).toBe(0);
      expect(await service.sequencer.state()).toEqual({ size: 300, published: 0 });

      await client.config('SET', 'maxmemory', '0');
      await store.subjects.acceptMany(targets, [subject('after'), subject('a5')]);
      expect(await service.tick()).toEqual({ size: 301 });
      expect(await service.sequencer.state()).toEqual({ size: 301, published: 301 });
      const writer = await LogWriter.open({ dir: logDir, origin: 'example.test/full', signer });
      const keys = writer.entries(0, 301).map((e) => decodeEntry(e).key);
      expect(keys).toEqual([...Array.from({ length: 300 }, (_, i) => `a${i}`), 'after']);
      expect(await service.sequencer.indexOf('after')).toBe(300);
      expect((await verifyLog(new DirectorySource(logDir), { trusted: [parseVerifierKey(signer.verifierKey)] })).verdict).toBe('PASS');
    } finally {
      await service.stop();
    }
  });
});
