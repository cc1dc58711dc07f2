/**
 * A subject the anchor log holds, sent again once Redis no longer holds its acceptance
 * (real Redis, a log folder written by LogWriter): LoggedStamps finds the `anchored_at` its
 * entry was logged with — from Redis's index, or from the files while Redis is behind them —
 * so the same document gets back the same envelope; another document under the key is a
 * conflict (no stamp); a key Redis holds, or the log does not, is left alone. The window
 * comes from the times the checkpoints were kept (checkpoints/times, else the notes' mtimes).
 */
import { mkdtempSync, rmSync, unlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointHistory } from '../../src/adapters/log/checkpoint-history.js';
import { readSubject, type SubjectInput } from '../../src/adapters/intake/job-data.js';
import { LogFolder } from '../../src/adapters/log/log-folder.js';
import { LoggedStamps } from '../../src/adapters/log/logged-stamps.js';
import { LogKeys } from '../../src/adapters/log/log-sequencer.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import { deletePrefix, SHARED_REDIS_URL, uniquePrefix } from '../helpers/shared-redis.js';
import { receiptFields } from '../helpers/harness.js';

const work = mkdtempSync(join(tmpdir(), 'aer1-logged-stamps-'));
let redis: Redis;
const bases: string[] = [];
beforeAll(async () => {
  redis = new Redis(SHARED_REDIS_URL, { maxRetriesPerRequest: 1 });
  await redis.ping();
});
afterAll(async () => {
  for (const base of bases) await deletePrefix(redis, base);
  await redis.quit();
  rmSync(work, { recursive: true, force: true });
});

const ORIGIN = 'example.test/stamps';
const signer = generateSignerKey(ORIGIN).signer;
const LIMITS = { maxJobBytes: 64 * 1024 };
const read = (data: unknown, at: Date | string): SubjectInput => readSubject(data, LIMITS, at);

describe('checkpoint times', () => {
  it('bound an index by the first checkpoint covering it and the one two before; the notes\' mtimes stand in for a missing times file', async () => {
    const dir = join(work, 'times');
    let now = 0;
    const history = new CheckpointHistory(dir, () => now);
    for (const [size, at] of [[3, 1_000_000], [4, 2_000_000], [304, 3_000_000], [309, 4_000_000]] as const) {
      now = at;
      await history.record(size, `note ${size}\n`);
    }
    expect(history.acceptanceWindow(0, 500)).toEqual({ fromMs: 999_500, toMs: 1_000_000 });
    expect(history.acceptanceWindow(3, 500)).toEqual({ fromMs: 1_999_500, toMs: 2_000_000 });
    expect(history.acceptanceWindow(100, 500)).toEqual({ fromMs: 1_000_000, toMs: 3_000_000 });
    expect(history.acceptanceWindow(308, 500)).toEqual({ fromMs: 2_000_000, toMs: 4_000_000 });
    expect(history.acceptanceWindow(309, 500)).toBeNull();
    unlinkSync(join(dir, 'checkpoints', 'times'));
    utimesSync(join(dir, 'checkpoints', '4'), 7000, 7000);
    utimesSync(join(dir, 'checkpoints', '304'), 8000, 8000);
    expect(history.acceptanceWindow(300, 500)).toMatchObject({ toMs: 8_000_000 });
    expect(history.acceptanceWindow(3, 500)).toEqual({ fromMs: 6_999_500, toMs: 7_000_000 });
  });
});

describe('LoggedStamps', () => {
  it('gives a subject Redis lost the anchored_at its entry holds; another document under its key gets none; others are left alone', async () => {
    const dir = join(work, 'log');
    const keys = new LogKeys(`{${uniquePrefix('stamps')}}`);
    bases.push(keys.base);
    const first = new Date(Date.now() - 20_000);
    const docs = Array.from({ length: 6 }, () => receiptFields());
    const logged = docs.map((d) => read(d, first));
    const writer = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (const s of logged.slice(0, 3)) writer.append({ digest: Buffer.from(s.digest, 'hex'), kind: 'receipt', key: s.key });
    await writer.checkpoint();
    for (const s of logged.slice(3)) writer.append({ digest: Buffer.from(s.digest, 'hex'), kind: 'receipt', key: s.key });
    await writer.checkpoint();
    // Redis's index names the first checkpoint's keys (settled), and knows nothing of the second's (published 3)
    await redis.hset(keys.index, ...logged.slice(0, 3).flatMap((s, i) => [s.key, String(i)]));
    await redis.set(keys.published, 3);
    const heldKeys = new Set([logged[2]!.key]);
    const stamps = new LoggedStamps(redis, keys, new LogFolder(dir), async (ks) => ks.map((k) => heldKeys.has(k)));

    const again = docs.map((d) => read(d, new Date()));
    again[1] = read({ ...docs[1]!, output_sha256: 'ab'.repeat(32) }, new Date());
    const fresh = read(receiptFields(), new Date());
    const found = await stamps.find([...again, fresh]);
    const at = first.toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect(found).toEqual([
      { index: 0, digest: logged[0]!.digest, anchoredAt: at },
      { index: 1, digest: logged[1]!.digest, anchoredAt: null },
      null,
      { index: 3, digest: logged[3]!.digest, anchoredAt: at },
      { index: 4, digest: logged[4]!.digest, anchoredAt: at },
      { index: 5, digest: logged[5]!.digest, anchoredAt: at },
      null,
    ]);
    expect(read(docs[0]!, found[0]!.anchoredAt!).digest).toBe(logged[0]!.digest);
    // stamped as logged already: nothing to do
    expect(await stamps.find([logged[0]!])).toEqual([null]);
  });
});
