/**
 * Crash windows: the state a SIGKILL can leave between two writes, made on purpose, and
 * the daemon's recovery from it. Each case was first seen in the SIGKILL run
 * (daemon-kill.test.ts) and is pinned here deterministically.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { LogFolder } from '../../src/adapters/log/log-folder.js';
import { LogKeys } from '../../src/adapters/log/log-sequencer.js';
import { expectLogAgrees } from './log-audit.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, spawnDaemon, startCalendars, startDaemon, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';

describe('killed between a relay report and the witness move', () => {
  it('the relay\'s next take of the event moves the witness the report already says', { timeout: 60_000 }, async () => {
    const [relay] = await startRelays(1);
    relay!.faults.silent = true;
    const config = testConfig({ relays: [relay!], overrides: { nostr: { publishTimeoutMs: 1000, backoffMs: 500, backoffMaxMs: 500, maxAttempts: 1000 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      // signed at its cut under auto mode (the default), at intake under envelope mode
      const record = await waitFor('accepted and signed', async () => {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        return r?.nostrEventId ? r : null;
      });
      const eventId = record!.nostrEventId!;
      await waitFor('a first failed attempt', async () => (await issuer.store.events.relayReports(eventId)).length > 0, 30_000);
      // What a crash right after set-relays.lua leaves: the relay's final report, the witness not moved.
      await new RelayOutbox(issuer.store.events, [relay!.url]).record(relay!.url, [{ id: eventId, report: { url: relay!.url, status: 'accepted', message: '', at: new Date().toISOString(), attempts: 1, final: true } }]);
      expect((await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status).toBe('pending');
      await waitFor('the witness confirmed from the recorded report', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'confirmed', 30_000);
      const history = await issuer.store.subjects.history(s.receipt_uuid);
      expect(history.at(-1)).toMatchObject({ witness: 'nostr', from: 'pending', to: 'confirmed', detail: `${relay!.url}: accepted` });
    } finally {
      await daemon.stop();
      await issuer.close();
      await relay!.close();
    }
  });
});

const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');

describe('killed twice while the same publish is in flight', () => {
  it('needs the built daemon (npm test builds it)', () => {
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
  });

  it('the publish is handed back after each crash and done once the relay answers', { timeout: 120_000 }, async () => {
    const [relay] = await startRelays(1);
    relay!.faults.silent = true;
    // a publish that stays in flight long enough to be killed twice
    const config = testConfig({ relays: [relay!], overrides: { queue: { stalledIntervalMs: 1000 }, nostr: { publishTimeoutMs: 60_000, maxAttempts: 1000 } } });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config);
    const outboxKey = new RelayOutbox(issuer.store.events, [relay!.url]).key(relay!.url);
    // the lease a daemon last took the publish under: each new daemon's take moves it past the dead one's
    let lease = 0;
    let child: ChildProcess | null = null;
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      for (let round = 0; round < 2; round++) {
        child = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
        let stderr = '';
        child.stderr?.on('data', (d: Buffer) => {
          stderr = (stderr + d.toString('utf8')).slice(-2000);
        });
        const record = await waitFor('accepted and signed', async () => {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        return r?.nostrEventId ? r : null;
      }, 30_000);
        const eventId = record!.nostrEventId!;
        // in flight: leased by this daemon (after the first kill: handed back, so leased anew), no answer recorded
        let seen = '';
        await waitFor(`publish in flight (round ${round + 1})`, async () => {
          const score = Number(await issuer.redis.zscore(outboxKey, eventId));
          const reports = await issuer.store.events.relayReports(eventId);
          seen = `lease ${score - Date.now()} ms ahead, previous ${lease - Date.now()}, ${reports.length} reports`;
          if (score > lease && score > Date.now() && reports.length === 0) {
            lease = score;
            return true;
          }
          return false;
        }, 60_000, 100).catch((err: unknown) => {
          throw new Error(`${(err as Error).message}; the relay outbox: ${seen}; daemon exit ${child?.exitCode ?? 'running'}, stderr: ${stderr}`);
        });
        child.kill('SIGKILL');
        await new Promise((r) => child!.once('exit', r));
        child = null;
      }
      relay!.faults.silent = false;
      child = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
      await waitFor('confirmed after the second restart', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 60_000);
      const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
      expect(relay!.events().filter((e) => e.id === record!.nostrEventId)).toHaveLength(1);
    } finally {
      if (child) await stopChild(child);
      await issuer.close();
      await relay!.close();
    }
  });
});

describe('killed between a batch\'s Bitcoin confirmation and the move of its subjects', () => {
  it('the next upgrade poll moves the subjects the batch record already confirms', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    const config = testConfig({ calendars: [calendar!], headersFile, overrides: { ots: { upgradeInitialMs: 500, upgradeMaxMs: 500 } } });
    let daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 3 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      const batchId = await waitFor('submitted', async () => {
        const ids = new Set<string>();
        for (const s of subjects) {
          const link = (await issuer.store.subjects.getRecord(s.receipt_uuid))?.batches.ots;
          if (!link || (await issuer.store.batches.batchField('ots', link.id, 'submitted')) !== '1') return null;
          ids.add(link.id);
        }
        return ids.size === 1 ? [...ids][0]! : null;
      }, 30_000);
      await daemon.stop();
      // What a crash right after the upgrade's setBatchFields leaves: the batch confirmed, its subjects not moved.
      const cal = JSON.parse((await issuer.store.batches.batchField('ots', batchId!, `cal:${calendar!.url}`))!) as Record<string, unknown>;
      await issuer.store.batches.setBatchFields('ots', batchId!, {
        [`cal:${calendar!.url}`]: JSON.stringify({ ...cal, status: 'confirmed', message: 'Bitcoin block 7' }),
        bitcoin: JSON.stringify({ height: 7, block_hash: '00'.repeat(32), time: 1_769_860_800 }),
      });
      expect(await issuer.witnessCount('ots', 'confirmed')).toBe(0);
      daemon = await startDaemon(config);
      await waitFor('subjects confirmed from the batch record', async () => (await issuer.witnessCount('ots', 'confirmed')) === 3, 30_000);
      const history = await issuer.store.subjects.history(subjects[0]!.receipt_uuid);
      expect(history.at(-1)).toMatchObject({ witness: 'ots', to: 'confirmed', detail: 'Bitcoin block 7' });
    } finally {
      await daemon.stop();
      await issuer.close();
      await calendar!.close();
    }
  });
});

describe('killed between a batch\'s submission and the move of its subjects', () => {
  it('the next run of the submit job moves the subjects to pending, saying how many calendars hold the root', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    const [good, bad] = [calendars[0]!, calendars[1]!];
    bad.setMode('error500');
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2, submitBackoffMs: 2000, upgradeMaxMs: 2000 } } });
    let daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      await waitFor('partial: one calendar of the two needed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'partial', 30_000);
      await daemon.stop();
      // What a crash right after the submit's setBatchFields leaves once both calendars held the root:
      // the batch marked submitted, its subjects still partial.
      const batchId = (await issuer.store.subjects.getRecord(s.receipt_uuid))!.batches.ots!.id;
      const held = JSON.parse((await issuer.store.batches.batchField('ots', batchId, `cal:${good.url}`))!) as Record<string, unknown>;
      await issuer.store.batches.setBatchFields('ots', batchId, { [`cal:${bad.url}`]: JSON.stringify({ ...held, url: bad.url }), submitted: '1' });
      bad.setMode('ok');
      daemon = await startDaemon(config);
      await waitFor('pending once the submit job runs again', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'pending', 30_000);
      const history = await issuer.store.subjects.history(s.receipt_uuid);
      expect(history.at(-1)).toMatchObject({ witness: 'ots', from: 'partial', to: 'pending', detail: '2 of 2 calendars hold the batch root' });
    } finally {
      await daemon.stop();
      await issuer.close();
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});

describe('killed between keeping a checkpoint and renaming the live one into place', () => {
  it('the restart starts from the kept checkpoint: it serves that size, logs the next subject after it and loses none', { timeout: 60_000 }, async () => {
    const dir = tempDir('aer1-log-kept');
    const [relay] = await startRelays(1);
    const config = testConfig({ relays: [relay!], overrides: { log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/kept', checkpointIntervalMs: 100 } } });
    const folder = new LogFolder(join(dir, 'log'));
    let daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    const published = new LogKeys(issuer.store.keys.base).published;
    // in the folder, and Redis told
    const logged = (n: number) => async (): Promise<boolean> => folder.checkpoint()?.size === n && Number(await issuer.redis.get(published)) === n;
    try {
      const subjects = Array.from({ length: 6 }, () => receiptFields());
      const enqueue = (from: number, to: number) => issuer.enqueueMany(subjects.slice(from, to).map((s) => ({ data: s, key: s.receipt_uuid })));
      await enqueue(0, 3);
      await waitFor('a checkpoint of 3', logged(3), 30_000);
      const live3 = readFileSync(join(dir, 'log', 'checkpoint'));
      await enqueue(3, 5);
      await waitFor('a checkpoint of 5', logged(5), 30_000);
      await daemon.stop();
      // what a crash after keeping checkpoints/5 and before the live rename leaves
      writeFileSync(join(dir, 'log', 'checkpoint'), live3);
      daemon = await startDaemon(config);
      expect(folder.checkpoint()).toEqual({ note: readFileSync(join(dir, 'log', 'checkpoints', '5'), 'utf8'), origin: 'example.test/kept', size: 5 });
      await enqueue(5, 6);
      await waitFor('a checkpoint of 6', logged(6), 30_000);
      const entries = await expectLogAgrees(issuer, { dir, origin: 'example.test/kept' }, subjects.map((s) => s.receipt_uuid));
      expect(entries[5]!.key).toBe(subjects[5]!.receipt_uuid);
    } finally {
      await daemon.stop();
      await issuer.close();
      await relay!.close();
    }
  });
});
