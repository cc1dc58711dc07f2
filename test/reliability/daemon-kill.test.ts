/**
 * The daemon (the built `aer1-anchord`, a child process) SIGKILLed three times during a
 * run of 2,000 subjects through two dev relays and a dev calendar, restarted each time. Every
 * subject confirms, none is stored twice on a relay, and each history is whole.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { Issuer, REPO_ROOT, privateRedis, receiptFields, spawnDaemon, startCalendars, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, report, statusCounts, tapRelay, anchorEventCount } from './audit.js';

const N = 2000;
const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');

describe('the daemon SIGKILLed three times during 2,000 subjects', () => {
  let redis: EmbeddedRedis | null = null;
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let child: ChildProcess | null = null;
  afterAll(async () => {
    if (child) await stopChild(child);
    await redis?.stop();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('needs the built daemon (npm test builds it)', () => {
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
  });

  it('resumes after each kill: all confirmed, none stored twice, histories whole', { timeout: 300_000 }, async () => {
    redis = await privateRedis(true);
    relays = await startRelays(2);
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: { queue: { stalledIntervalMs: 1000 }, nostr: { maxAttempts: 1000 }, ots: { batchWindowMs: 300, batchMaxSize: 500 } },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config, redis.url);
    const subjects = Array.from({ length: N }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    const kills: Array<Record<string, number>> = [];
    try {
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      const accepted = async (): Promise<number> => issuer.store.indexes.subjectCount();
      const nostrConfirmed = async (): Promise<number> => issuer.witnessCount('nostr', 'confirmed');
      // Kill points: early intake, late intake, and while relays and the calendar are busy.
      const points: Array<[string, () => Promise<boolean>]> = [
        ['intake', async () => (await accepted()) >= 300],
        ['intake+relays', async () => (await accepted()) >= 1000],
        ['relays+calendar', async () => (await nostrConfirmed()) >= 1200 || (await accepted()) === N],
      ];
      let stderr = '';
      const spawn = (): ChildProcess => {
        const c = spawnDaemon(config, redis!.url, keyFile);
        c.stderr?.on('data', (d: Buffer) => {
          stderr = (stderr + d.toString('utf8')).slice(-2000);
        });
        return c;
      };
      const withStderr = (err: unknown): never => {
        throw new Error(`${(err as Error).message}; daemon exit ${child?.exitCode ?? 'running'}, stderr: ${stderr}`);
      };
      const started = Date.now();
      const phases: number[] = [];
      for (const [name, reached] of points) {
        phases.push(Date.now() - started);
        child = spawn();
        await waitFor(`kill point ${name}`, reached, 120_000, 20).catch(withStderr);
        child.kill('SIGKILL');
        await new Promise((r) => child!.once('exit', r));
        child = null;
        const counts = await statusCounts(issuer, keys);
        kills.push({ accepted: N - (counts.none ?? 0), confirmed: counts.confirmed ?? 0 });
        // still in flight at the kill
        expect(counts.confirmed ?? 0, `at kill ${name}`).toBeLessThan(N);
        if (name === 'intake+relays') await calendars[0]!.mine();
      }
      phases.push(Date.now() - started);
      child = spawn();
      await confirmAll(issuer, keys, calendars, 200_000).catch(withStderr);
      phases.push(Date.now() - started);
      await stopChild(child);
      child = null;

      const result = await audit('daemon-sigkill-x3', issuer, keys, taps, { historySample: 200 });
      for (const relay of relays) expect(anchorEventCount(relay)).toBe(N);
      report(result, { phasesMs: phases.join('/'), kills: kills.length, ...Object.fromEntries(kills.map((k, i) => [`kill${i + 1}`, `${k.accepted}acc/${k.confirmed}conf`])) });
    } finally {
      await issuer.close();
    }
  });
});

describe('the daemon SIGKILLed in the middle of bulk jobs', () => {
  let redis: EmbeddedRedis | null = null;
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let child: ChildProcess | null = null;
  afterAll(async () => {
    if (child) await stopChild(child);
    await redis?.stop();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('resumes the jobs: every subject accepted once and confirmed, none stored twice', { timeout: 240_000 }, async () => {
    const n = 3000;
    redis = await privateRedis(true);
    relays = await startRelays(1);
    const taps = relays.map(tapRelay);
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: { queue: { stalledIntervalMs: 1000, concurrency: 2 }, nostr: { mode: 'batch', maxAttempts: 1000, batchMaxSize: 1000 }, ots: { batchWindowMs: 300, batchMaxSize: 1000 } },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config, redis.url);
    const subjects = Array.from({ length: n }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    try {
      // three bulk jobs of 1,000 (four accept calls each)
      for (let i = 0; i < n; i += 1000) await issuer.queue.add(ANCHOR_JOB, { subjects: subjects.slice(i, i + 1000) }, { jobId: `bulk-kill-${i}`, ...ANCHOR_JOB_OPTIONS });
      child = spawnDaemon(config, redis.url, keyFile);
      const accepted = async (): Promise<number> => issuer.store.indexes.subjectCount();
      // some of a job's chunks in, not all of them
      await waitFor('a bulk job part-way', async () => (await accepted()) % 1000 !== 0, 60_000, 5);
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
      child = null;
      const atKill = await accepted();
      child = spawnDaemon(config, redis.url, keyFile);
      await waitFor(`all ${n} accepted after the restart`, async () => (await accepted()) === n, 90_000, 50);
      await confirmAll(issuer, keys, calendars, 150_000);
      await stopChild(child);
      child = null;
      const result = await audit('daemon-sigkill-bulk', issuer, keys, taps, { historySample: 300 });
      report(result, { acceptedAtKill: atKill });
    } finally {
      await issuer.close();
    }
  });
});
