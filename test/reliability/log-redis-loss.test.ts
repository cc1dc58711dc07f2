/**
 * The anchor log when Redis goes down under it (a private redis-server, append-only file,
 * `appendfsync everysec`; the daemon in-process, log on, checkpoints every 100 ms, keeps
 * running throughout):
 * - Redis SIGKILLed while subjects are accepted and checkpoints written, then started again
 *   from its folder;
 * - a host crash that cut the append-only file's tail after the log folder had signed more
 *   entries (Redis stopped, the file cut back into an earlier command, `redis-check-aof
 *   --fix`, started again): Redis has lost accepts, its sequence and its `published` mark
 *   that the folder already holds, and hands those indexes out again until the publisher
 *   settles it from the files.
 * The issuer sends again whatever Redis does not hold as accepted, as a client does.
 * Afterwards: the entries the folder held before the fault are unchanged (no index reused);
 * every subject is in the log exactly once with its own digest — one whose acceptance Redis
 * lost after the folder signed its entry is accepted again with the envelope it was logged
 * with, and its proof carries `log` again; the folder passes `log verify` and Redis's index
 * names each key where the files hold it; subjects sent after the recovery get the next
 * indexes.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/adapters/config/config.js';
import { LogKeys } from '../../src/adapters/log/log-sequencer.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import type { LogEntry } from '../../src/core/log/entry.js';
import { cutAofTail, incrFile, killRedis } from '../helpers/redis-aof.js';
import { Issuer, privateRedis, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { expectLogAgrees, logEntries, type LogUnderTest } from './log-audit.js';

type Subject = ReturnType<typeof receiptFields>;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A private Redis, a dev calendar and the daemon with the log on in a temp folder. */
async function setUp(label: string): Promise<{ redis: EmbeddedRedis; config: Config; issuer: Issuer; log: LogUnderTest; keys: LogKeys }> {
  const redis = await privateRedis(true);
  const headersFile = join(tempDir('headers'), 'headers.json');
  const calendars = await startCalendars(1, headersFile);
  cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
  const dir = tempDir(`aer1-log-${label}`);
  const log = { dir, origin: `example.test/${label}` };
  const config = testConfig({
    calendars,
    headersFile,
    overrides: {
      queue: { stalledIntervalMs: 1000 },
      ots: { batchWindowMs: 300, batchMaxSize: 500 },
      log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: log.origin, checkpointIntervalMs: 100 },
    },
  });
  const daemon = await startDaemon(config, redis.url);
  cleanups.push(() => daemon.stop());
  const issuer = new Issuer(config, redis.url);
  cleanups.push(() => issuer.close());
  return { redis, config, issuer, log, keys: new LogKeys(issuer.store.keys.base) };
}

async function published(issuer: Issuer, keys: LogKeys): Promise<number> {
  return Number((await issuer.redis.get(keys.published)) ?? 0);
}

/** Sends the subjects Redis does not hold as accepted (again, as an issuer does) until it holds them all; bounded. */
async function acceptAll(issuer: Issuer, subjects: readonly Subject[]): Promise<void> {
  for (let round = 0; round < 12; round++) {
    const records = await issuer.store.subjects.getRecords(subjects.map((s) => s.receipt_uuid));
    const missing = subjects.filter((_, i) => !records[i]);
    if (missing.length === 0) return;
    await issuer.enqueueMany(missing.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor(`${missing.length} subjects accepted`, async () => (await issuer.store.subjects.getRecords(missing.map((s) => s.receipt_uuid))).every(Boolean), 10_000, 100).catch(() => undefined);
  }
  throw new Error('subjects still not accepted after 12 rounds of sending them again');
}

/**
 * Everything accepted and published, the log and Redis agree (each entry with its subject's
 * digest), the folder's entries before the fault unchanged; the proof of each key in `lost`
 * carries `log` at its entry; subjects sent afterwards get the next indexes.
 */
async function expectRecovered(issuer: Issuer, keys: LogKeys, log: LogUnderTest, subjects: readonly Subject[], before: readonly LogEntry[], lost: ReadonlySet<string> = new Set()): Promise<void> {
  await acceptAll(issuer, subjects);
  const n = subjects.length;
  await waitFor(`all ${n} published`, async () => (await published(issuer, keys)) === n, 60_000, 50);
  const entries = await expectLogAgrees(issuer, log, subjects.map((s) => s.receipt_uuid));
  expect(entries.slice(0, before.length), 'an entry the folder held before the fault changed').toEqual(before);
  const exporter = new ProofExporter(issuer.store, { relays: [], calendars: [] }, { dir: join(log.dir, 'log') });
  const logIndexes = await Promise.all([...lost].map(async (key) => (await exporter.export(key))?.log?.index ?? null));
  expect(logIndexes, 'a subject sent again after Redis lost its acceptance: its proof\'s log').toEqual([...lost].map((key) => entries.findIndex((e) => e.key === key)));

  const fresh = Array.from({ length: 200 }, () => receiptFields());
  await issuer.enqueueMany(fresh.map((s) => ({ data: s, key: s.receipt_uuid })));
  await waitFor('the fresh subjects published', async () => (await published(issuer, keys)) === n + fresh.length, 60_000, 50);
  const after = await expectLogAgrees(issuer, log, [...subjects, ...fresh].map((s) => s.receipt_uuid));
  expect(new Set(after.slice(n).map((e) => e.key))).toEqual(new Set(fresh.map((s) => s.receipt_uuid)));
}

describe('the anchor log when Redis loses its process or its last writes', () => {
  it('Redis SIGKILLed during intake and checkpoints: nothing lost, doubled or renumbered', { timeout: 240_000 }, async () => {
    const { redis, issuer, log, keys } = await setUp('redis-kill');
    let server = redis;
    cleanups.push(() => server.stop());
    const subjects = Array.from({ length: 1500 }, () => receiptFields());
    await issuer.enqueueMany(subjects.slice(0, 1000).map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('subjects accepted and a checkpoint written', async () => (await issuer.store.indexes.subjectCount()) >= 300 && (await published(issuer, keys)) > 0, 60_000, 20);

    await killRedis(server);
    const before = await logEntries(log);
    server = await startEmbeddedRedis({ dir: redis.dir, port: redis.port });
    console.log(`log-redis-kill: killed with ${before.length} entries in the folder`);
    // the last wave after the restart
    await issuer.enqueueMany(subjects.slice(1000).map((s) => ({ data: s, key: s.receipt_uuid })));
    await expectRecovered(issuer, keys, log, subjects, before);
  });

  it('an AOF tail cut after the folder signed more: Redis settled from the files, no index handed out twice', { timeout: 240_000 }, async () => {
    const { redis, issuer, log, keys } = await setUp('aof-cut');
    let server = redis;
    cleanups.push(() => server.stop());
    const subjects = Array.from({ length: 1500 }, () => receiptFields());
    const first = subjects.slice(0, 600);
    await issuer.enqueueMany(first.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('the first wave published', async () => (await published(issuer, keys)) === first.length, 60_000, 20);
    const aof = incrFile(redis.dir);
    const kept = statSync(aof).size;

    // the second wave, accepted and signed into the folder: the writes the cut loses
    await issuer.enqueueMany(subjects.slice(600, 1200).map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('part of the second wave published', async () => (await published(issuer, keys)) >= first.length + 200, 60_000, 20);
    expect(incrFile(redis.dir), 'Redis rewrote its append-only file meanwhile').toBe(aof);
    // into the last command before the mark: redis-check-aof drops it whole
    const cut = await cutAofTail(server, aof, kept - 5);
    server = cut.redis;
    const before = await logEntries(log);
    const redisPublished = await published(issuer, keys);
    console.log(`log-aof-cut: folder ${before.length} entries, Redis after the cut: published ${redisPublished}, ${await issuer.store.indexes.subjectCount()} accepted; redis-check-aof: ${cut.fix.split('\n').pop()}`);
    // accepted, logged and signed, then lost by Redis: sent again, each gets back the envelope
    // its entry holds (a key is logged once), and with it its entry's digest
    const records = await issuer.store.subjects.getRecords(before.map((e) => e.key));
    const lost = new Set(before.filter((_, i) => !records[i]).map((e) => e.key));
    // (not its `published`, which the running publisher may have settled from the files already)
    expect(lost.size, 'Redis lost the acceptances the folder holds').toBeGreaterThan(0);
    console.log(`log-aof-cut: ${lost.size} subjects logged whose acceptance Redis lost`);

    // the issuer sends again what Redis lost, and new subjects, while the publisher settles
    await issuer.enqueueMany(subjects.slice(1200).map((s) => ({ data: s, key: s.receipt_uuid })));
    await expectRecovered(issuer, keys, log, subjects, before, lost);
  });
});

