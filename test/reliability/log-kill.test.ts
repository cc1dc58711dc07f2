/**
 * The anchor log through crashes: the daemon (built `aer1-anchord`, a child process, log on,
 * checkpoints every 100 ms) SIGKILLed three times while 1,500 subjects are accepted and
 * logged — during intake, just after the publisher's checkpoint, and during the last wave's
 * intake — and restarted each
 * time (a restart waits out the dead daemon's publisher lease). Afterwards: the folder's log
 * passes `log verify`; it holds every accepted subject exactly once, each entry with the
 * subject's own digest; Redis's index names each key at the index the files hold it; no
 * index was handed out twice (size = entries = subjects). The OpenTimestamps witness cuts its
 * batches from the log's checkpoints (docs/log.md, "Witnessing checkpoints"): every subject
 * ends confirmed, each in exactly one batch, every batch rooted in a checkpoint the log kept.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { LogKeys } from '../../src/adapters/log/log-sequencer.js';
import { expectLogAgrees } from './log-audit.js';
import { Issuer, REPO_ROOT, privateRedis, receiptFields, spawnDaemon, startCalendars, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const N = 1500;
const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');

describe('the anchor log with the daemon SIGKILLed three times', () => {
  let redis: EmbeddedRedis | null = null;
  let calendars: DevCalendar[] = [];
  let child: ChildProcess | null = null;
  afterAll(async () => {
    if (child) await stopChild(child);
    await redis?.stop();
    await Promise.all(calendars.map((c) => c.close()));
  });

  it('needs the built daemon (npm test builds it)', () => {
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
  });

  it('loses, doubles and reorders nothing, and reuses no index', { timeout: 300_000 }, async () => {
    redis = await privateRedis(true);
    const headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    const dir = tempDir('aer1-log-kill');
    const logDir = join(dir, 'log');
    const config = testConfig({
      calendars,
      headersFile,
      overrides: {
        queue: { stalledIntervalMs: 1000 },
        ots: { batchWindowMs: 300, batchMaxSize: 500 },
        log: { enabled: true, dir: logDir, keyFile: join(dir, 'log.key'), origin: 'example.test/kill', checkpointIntervalMs: 100 },
      },
    });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config, redis.url);
    const logKeys = new LogKeys(issuer.store.keys.base);
    const subjects = Array.from({ length: N }, () => receiptFields());
    try {
      // three waves, one before each kill point, so each kill finds work to interrupt
      const waves = [subjects.slice(0, 600), subjects.slice(600, 1200), subjects.slice(1200)];
      const accepted = async (): Promise<number> => issuer.store.indexes.subjectCount();
      const published = async (): Promise<number> => Number((await issuer.redis.get(logKeys.published)) ?? 0);
      let before = 0;
      const points: Array<[string, () => Promise<boolean>]> = [
        ['intake', async () => (await accepted()) >= 300],
        // the restarted daemon's first checkpoint (after the dead one's lease ran out): killed as it has just published
        ['publishing', async () => (await published()) > before],
        ['intake of the last wave', async () => (await accepted()) >= 1300],
      ];
      let stderr = '';
      const spawn = (): ChildProcess => {
        const c = spawnDaemon(config, redis!.url, keyFile);
        c.stderr?.on('data', (d: Buffer) => {
          stderr = (stderr + d.toString('utf8')).slice(-3000);
        });
        return c;
      };
      const withStderr = (err: unknown): never => {
        throw new Error(`${(err as Error).message}; daemon exit ${child?.exitCode ?? 'running'}, stderr: ${stderr}`);
      };
      const kills: string[] = [];
      const started = Date.now();
      for (const [i, [name, reached]] of points.entries()) {
        await issuer.enqueueMany(waves[i]!.map((s) => ({ data: s, key: s.receipt_uuid })));
        before = await published();
        child = spawn();
        await waitFor(`kill point ${name}`, reached, 120_000, 20).catch(withStderr);
        child.kill('SIGKILL');
        await new Promise((r) => child!.once('exit', r));
        child = null;
        kills.push(`${name}: ${await accepted()} accepted, ${await published()} logged`);
      }
      // the kills during intake left accepted subjects not yet logged (the tail the next daemon published)
      expect([kills[0], kills[2]].filter((k) => /: (\d+) accepted, \1 logged$/.test(k!)), kills.join('; ')).toEqual([]);
      child = spawn();
      // the dead daemon's lease runs out (10 s) before the new one publishes
      await waitFor('every subject accepted and in a checkpoint', async () => (await accepted()) === N && (await published()) === N, 120_000, 100).catch(withStderr);
      // the checkpoints are what the calendar was given: every subject ends confirmed once it mines
      await waitFor('every subject confirmed', async () => {
        if ((await issuer.count('confirmed')) === N) return true;
        await calendars[0]!.mine();
        return false;
      }, 120_000, 500).catch(withStderr);
      await stopChild(child);
      child = null;
      console.log(`log-kill: ${kills.join('; ')}; all logged after ${Date.now() - started} ms`);

      await expectLogAgrees(issuer, { dir, origin: 'example.test/kill' }, subjects.map((s) => s.receipt_uuid));
      const records = await issuer.store.subjects.getRecords(subjects.map((s) => s.receipt_uuid));
      // each subject in one OTS batch, each batch's keys its own, each batch rooted in a kept checkpoint
      const batchIds = new Set(records.map((r) => r!.batches.ots!.id));
      const batched: string[] = [];
      for (const id of batchIds) {
        const batch = (await issuer.store.batches.getBatch('ots', id))!;
        expect(batch.fields.note, `batch ${id}`).toBe(readFileSync(join(logDir, 'checkpoints', batch.fields.cp!), 'utf8'));
        batched.push(...(await issuer.store.batches.batchKeys('ots', id)));
      }
      expect(batched.length).toBe(N);
      expect(new Set(batched).size).toBe(N);
    } finally {
      await issuer.close();
    }
  });
});
