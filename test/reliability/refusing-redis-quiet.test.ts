/**
 * Issue 29, reproduction 4: a Redis that refuses writes (`maxmemory`, `noeviction`) under the
 * built daemon with 5,000 subjects queued, held 30 s. Nothing can progress, so the daemon must
 * back off instead of spinning: over the hold (counters read at its start and end, not timed
 * assertions) its log grows at most 10 KB/s, it uses at most 0.1 of a core (utime + stime from
 * /proc), and Redis processes at most 2,000 commands a second (INFO total_commands_processed on
 * this private redis-server); the refusal is logged once, with reminders, never per command.
 * When Redis takes writes again the work resumes at once and every subject is confirmed.
 */
import { readFileSync } from 'node:fs';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { Issuer, privateRedis, receiptFields, spawnDaemon, startCalendars, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, report, tapRelay } from './audit.js';

const N = Number(process.env.AER1_REFUSING_REDIS_N ?? 5000);
const HOLD_MS = Number(process.env.AER1_REFUSING_REDIS_HOLD_MS ?? 30_000);
/** Room above the queued jobs' footprint: some subjects get in before Redis is full. */
const HEADROOM_BYTES = 2 * 1024 * 1024;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function infoField(redis: Issuer['redis'], section: string, field: string): Promise<number> {
  const m = new RegExp(`^${field}:(\\d+)`, 'm').exec(await redis.info(section));
  return m ? Number(m[1]) : 0;
}

async function oomErrors(redis: Issuer['redis']): Promise<number> {
  return Number(/errorstat_OOM:count=(\d+)/.exec(await redis.info('errorstats'))?.[1] ?? 0);
}

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  // /proc/<pid>/stat: fields 14 and 15 (utime, stime) after the command name in parentheses
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

describe('a Redis refusing writes (maxmemory, noeviction) under the built daemon', () => {
  it(`${N} subjects, held ${HOLD_MS / 1000} s: log ≤ 10 KB/s, CPU ≤ 0.1 core, Redis ≤ 2,000 commands/s; then all confirmed`, { timeout: 60_000 + HOLD_MS + N * 30 }, async () => {
    const redis = await privateRedis(true);
    cleanups.push(() => redis.stop());
    const relays = await startRelays(1);
    cleanups.push(() => Promise.all(relays.map((r) => r.close())));
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(1, headersFile);
    cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: {
        queue: { stalledIntervalMs: 1000 },
        reconcile: { intervalMs: 2000 },
        nostr: { mode: 'batch', batchMaxSize: 1000 },
        ots: { batchWindowMs: 300, batchMaxSize: 1000 },
        log: { level: 'info', format: 'json' },
      },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config, redis.url);
    cleanups.push(() => issuer.close());
    const subjects = Array.from({ length: N }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    const limit = (await infoField(issuer.redis, 'memory', 'used_memory')) + HEADROOM_BYTES;
    await issuer.redis.config('SET', 'maxmemory', String(limit));
    await issuer.redis.config('SET', 'maxmemory-policy', 'noeviction');

    let logBytes = 0;
    let log = '';
    const child: ChildProcess = spawnDaemon(config, redis.url, keyFile);
    cleanups.push(() => stopChild(child));
    child.stderr?.on('data', (d: Buffer) => {
      logBytes += d.length;
      if (log.length < 4_000_000) log += d.toString('utf8');
    });
    if (process.env.AER1_REFUSING_REDIS_LOG) cleanups.push(async () => (await import('node:fs')).writeFileSync(process.env.AER1_REFUSING_REDIS_LOG!, log));

    await waitFor('Redis refusing writes (OOM)', async () => (await oomErrors(issuer.redis)) > 0, 120_000, 100);
    // the hold, measured from counters at its start and end
    const start = { at: Date.now(), log: logBytes, cpu: cpuSeconds(child.pid!), commands: await infoField(issuer.redis, 'stats', 'total_commands_processed'), oom: await oomErrors(issuer.redis), logText: log.length };
    await new Promise((r) => setTimeout(r, HOLD_MS)); // the fault's length: Redis stays full this long
    const end = { at: Date.now(), log: logBytes, cpu: cpuSeconds(child.pid!), commands: await infoField(issuer.redis, 'stats', 'total_commands_processed'), oom: await oomErrors(issuer.redis) };
    const holdS = (end.at - start.at) / 1000;
    const holdLog = log.slice(start.logText);
    const acceptedAtRaise = await issuer.state.subjectCount();
    await issuer.redis.config('SET', 'maxmemory', '0');
    const raisedAt = Date.now();
    await waitFor('intake resuming', async () => (await issuer.state.subjectCount()) > acceptedAtRaise, 15_000, 100);
    const resumedMs = Date.now() - raisedAt;
    await confirmAll(issuer, keys, calendars, 60_000 + N * 20);
    const recoveredMs = Date.now() - raisedAt;

    const figures = {
      holdS: holdS.toFixed(1),
      logBytesPerS: Math.round((end.log - start.log) / holdS),
      cpuCores: ((end.cpu - start.cpu) / holdS).toFixed(3),
      redisCommandsPerS: Math.round((end.commands - start.commands) / holdS),
      refusedPerS: Math.round((end.oom - start.oom) / holdS),
      holdLogLines: holdLog.split('\n').filter((l) => l.trim() !== '').length,
      stackLines: holdLog.split('\n').filter((l) => l.includes('"stack"')).length,
      acceptedAtRaise,
      resumedMs,
      recoveredMs,
    };
    const result = await audit('refusing-redis-quiet', issuer, keys, taps, { historySample: 200 });
    report(result, figures);
    expect(figures.logBytesPerS, JSON.stringify(figures)).toBeLessThanOrEqual(10 * 1024);
    expect(Number(figures.cpuCores), JSON.stringify(figures)).toBeLessThanOrEqual(0.1);
    expect(figures.redisCommandsPerS, JSON.stringify(figures)).toBeLessThanOrEqual(2000);
    // once with reminders: no stack per refused command
    expect(figures.stackLines, holdLog.slice(0, 3000)).toBe(0);
    expect(result.lost).toBe(0);
    expect(result.confirmed).toBe(N);
  });
});
