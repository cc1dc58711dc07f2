/**
 * The anchor log held against Redis after a fault (the log-* reliability cases): the
 * folder passes `log verify` at the expected size; it holds every expected subject exactly
 * once, each entry with the subject's own digest; Redis counts that size, its index names
 * each key at the index the files hold, and its tail is empty (everything published).
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { LogKeys } from '../../src/adapters/log/log-sequencer.js';
import { DirectorySource } from '../../src/adapters/log/log-source.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { decodeEntry, type LogEntry } from '../../src/core/log/entry.js';
import { parseVerifierKey } from '../../src/core/log/note.js';
import type { Issuer } from '../helpers/harness.js';

export interface LogUnderTest {
  /** The folder holding `log/` and `log.key` (log.dir and log.keyFile). */
  readonly dir: string;
  readonly origin: string;
}

/** The folder's entries from 0 to `to` (default: its checkpoint's size; the writer opened anew), decoded. */
export async function logEntries(log: LogUnderTest, to?: number): Promise<LogEntry[]> {
  const writer = await LogWriter.open({ dir: join(log.dir, 'log'), origin: log.origin, signer: loadLogKeyFile(join(log.dir, 'log.key')) });
  return writer.entries(0, to ?? writer.checkpointed.checkpoint.size).map((e) => decodeEntry(e));
}

/** Asserts the folder and Redis agree on exactly `keys` (in any order), each entry holding its subject's digest; returns the entries in log order. */
export async function expectLogAgrees(issuer: Issuer, log: LogUnderTest, keys: readonly string[]): Promise<LogEntry[]> {
  const n = keys.length;
  const signer = loadLogKeyFile(join(log.dir, 'log.key'));
  const report = await verifyLog(new DirectorySource(join(log.dir, 'log')), { trusted: [parseVerifierKey(signer.verifierKey)] });
  expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
  expect(report.checkpoint?.size).toBe(n);
  const entries = await logEntries(log, n);
  expect(new Set(entries.map((e) => e.key)).size, 'a key logged twice').toBe(n);
  expect(new Set(entries.map((e) => e.key))).toEqual(new Set(keys));
  const logKeys = new LogKeys(issuer.store.keys.base);
  expect(Number(await issuer.redis.get(logKeys.size))).toBe(n);
  expect(Number(await issuer.redis.get(logKeys.published))).toBe(n);
  expect(await issuer.redis.hlen(logKeys.index)).toBe(n);
  expect(await issuer.redis.llen(logKeys.tail)).toBe(0);
  const records = await issuer.store.subjects.getRecords(entries.map((e) => e.key));
  const idx = await issuer.redis.hmget(logKeys.index, ...entries.map((e) => e.key));
  const wrong = entries.flatMap((e, i) => {
    const problems: string[] = [];
    if (records[i]?.digest !== Buffer.from(e.digest).toString('hex')) problems.push(`entry ${i} (${e.key}): not the subject's digest`);
    if (idx[i] !== String(i)) problems.push(`entry ${i} (${e.key}): Redis's index says ${idx[i]}`);
    return problems;
  });
  expect(wrong.slice(0, 10)).toEqual([]);
  return entries;
}
