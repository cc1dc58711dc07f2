/**
 * `aer1-anchor enqueue | status | proof` against a running daemon, and `aer1-anchord`'s
 * SIGTERM: the built binaries, real Redis, real dev relays and a dev calendar.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, spawnDaemon, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const CLI = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');

function cli(args: string[], configFile: string) {
  return spawnSync(process.execPath, [CLI, ...args, '--config', configFile], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', REDIS_URL: SHARED_REDIS_URL },
    timeout: 30_000,
  });
}

const WORKFLOW = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/workflow-receipt-example.json'), 'utf8')) as Record<string, unknown>;

describe('client commands against a running daemon', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let daemon: Daemon;
  let issuer: Issuer;
  let configFile = '';
  let dir = '';

  beforeAll(async () => {
    dir = tempDir('cli');
    const headersFile = join(dir, 'headers.json');
    relays = await startRelays(2);
    calendars = await startCalendars(1, headersFile);
    const config = testConfig({ relays, calendars, headersFile });
    configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ redis: { prefix: config.redis.prefix }, nostr: { relays: config.nostr.relays }, ots: { calendars: config.ots.calendars, minCalendars: 1 } }));
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('needs the built CLI (npm test builds it)', () => {
    expect(existsSync(CLI), `${CLI} is missing: run npm run build`).toBe(true);
  });

  it('enqueues a workflow close, shows its status, prints and attaches its proof', async () => {
    const wfFile = join(dir, 'workflow.json');
    const wf = { ...WORKFLOW, receipt_id: `cli-${Date.now()}` };
    writeFileSync(wfFile, JSON.stringify(wf));
    const enq = cli(['enqueue', wfFile, '--json'], configFile);
    expect(enq.status, enq.stderr).toBe(0);
    expect(JSON.parse(enq.stdout)).toEqual([{ file: wfFile, key: wf.receipt_id, result: 'queued', status: null }]);

    await waitFor('nostr confirmed', async () => (await issuer.store.subjects.getRecord(wf.receipt_id))?.witnesses.nostr?.status === 'confirmed');
    const status = cli(['status', wf.receipt_id], configFile);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^${wf.receipt_id}: (partial|pending|confirmed) \\(workflow-close\\)`));
    for (const r of relays) expect(status.stdout).toContain(`${r.url}: accepted`);
    expect(status.stdout).toContain('history:');

    const again = cli(['enqueue', wfFile], configFile);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/already anchored/);

    const proof = cli(['proof', wf.receipt_id], configFile);
    expect(proof.status, proof.stderr).toBe(0);
    const p = JSON.parse(proof.stdout) as { version: string; envelope: Record<string, unknown>; digest: string; nostr: { event: { content: string } } };
    expect(p.version).toBe('aer1-anchor-proof-v1');
    expect(p.envelope).toMatchObject({ subject: 'workflow-close', receipt_uuid: wf.receipt_id, step_count: 5, merkle_version: 'receipt-id-v0' });
    expect(p.nostr.event.content).toBe(canonicalJson(p.envelope));

    const attached = cli(['proof', wf.receipt_id, '--attach', wfFile], configFile);
    expect(attached.status, attached.stderr).toBe(0);
    const withProof = JSON.parse(readFileSync(wfFile, 'utf8')) as { anchor_proof: { digest: string } };
    expect(withProof.anchor_proof.digest).toBe(p.digest);
  });

  it('status lists the relays and calendars the subject was sent to, from state, not those of the config in force', async () => {
    const s = receiptFields();
    const file = join(dir, 'sent-to.json');
    writeFileSync(file, JSON.stringify(s));
    expect(cli(['enqueue', file], configFile).status).toBe(0);
    await waitFor('nostr confirmed and the OTS batch submitted', async () => {
      const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
      const batch = r?.batches.ots;
      return r?.witnesses.nostr?.status === 'confirmed' && batch && (await issuer.store.batches.batchField('ots', batch.id, 'submitted')) === '1';
    });
    // The operator moves to other relays and another calendar (nothing listens there).
    const movedFile = join(dir, 'moved-config.json');
    const moved = { relays: ['ws://127.0.0.1:9/moved-relay'], calendars: ['http://127.0.0.1:9/moved-calendar'] };
    writeFileSync(movedFile, JSON.stringify({ redis: { prefix: JSON.parse(readFileSync(configFile, 'utf8')).redis.prefix }, nostr: { relays: moved.relays }, ots: { calendars: moved.calendars, minCalendars: 1 } }));

    const text = cli(['status', s.receipt_uuid], movedFile);
    expect(text.status, text.stderr).toBe(0);
    for (const r of relays) expect(text.stdout).toContain(`    ${r.url}: accepted`);
    expect(text.stdout).toContain(`    ${calendars[0]!.url}: pending`);
    expect(text.stdout).not.toContain('moved-relay');
    expect(text.stdout).not.toContain('moved-calendar');

    const json = cli(['status', s.receipt_uuid, '--json'], movedFile);
    expect(json.status, json.stderr).toBe(0);
    const view = JSON.parse(json.stdout) as { witnesses: { nostr: { relays: Array<{ url: string; status: string }> }; ots: { calendars: Array<{ url: string; status: string }> } } };
    expect(view.witnesses.nostr.relays.map((r) => [r.url, r.status])).toEqual(relays.map((r) => [r.url, 'accepted']));
    expect(view.witnesses.ots.calendars.map((c) => [c.url, c.status])).toEqual([[calendars[0]!.url, 'pending']]);

    // the proof names the same relays and calendar: where the subject was sent, not the config's
    const proof = cli(['proof', s.receipt_uuid], movedFile);
    expect(proof.status, proof.stderr).toBe(0);
    const p = JSON.parse(proof.stdout) as { nostr: { relays: Array<{ url: string; status: string }> }; ots: { calendars: Array<{ url: string; status: string }> } };
    expect(p.nostr.relays.map((r) => [r.url, r.status])).toEqual(relays.map((r) => [r.url, 'accepted']));
    expect(p.ots.calendars.map((c) => [c.url, c.status])).toEqual([[calendars[0]!.url, 'pending']]);
  });

  it('refuses a conflicting root and a malformed file with reasons (exit 1), an unreadable file with exit 2', () => {
    const s = receiptFields();
    const a = join(dir, 'a.json');
    writeFileSync(a, JSON.stringify(s));
    expect(cli(['enqueue', a], configFile).status).toBe(0);
    return waitFor('accepted', () => issuer.store.subjects.getRecord(s.receipt_uuid)).then(() => {
      writeFileSync(a, JSON.stringify({ ...s, output_sha256: 'cd'.repeat(32) }));
      const conflict = cli(['enqueue', a], configFile);
      expect(conflict.status).toBe(1);
      expect(conflict.stdout).toMatch(/refused: conflict: subject .* already anchored with another root/);
      writeFileSync(a, JSON.stringify({ subject: 'receipt', receipt_uuid: 'x', output_sha256: 'nothex' }));
      const bad = cli(['enqueue', a], configFile);
      expect(bad.status).toBe(1);
      expect(bad.stdout).toMatch(/output_sha256/);
      const missing = cli(['enqueue', join(dir, 'nope.json')], configFile);
      expect(missing.status).toBe(2);
      expect(missing.stderr).toMatch(/cannot read .*nope\.json/);
      const unknown = cli(['status', 'no-such-key'], configFile);
      expect(unknown.status).toBe(1);
    });
  });
  it('enqueues several files as one bulk job, each file reported in its place', async () => {
    const good = [receiptFields(), receiptFields(), receiptFields()];
    const files = good.map((g, i) => {
      const f = join(dir, `bulk-${i}.json`);
      writeFileSync(f, JSON.stringify(g));
      return f;
    });
    const badFile = join(dir, 'bulk-bad.json');
    writeFileSync(badFile, JSON.stringify({ subject: 'receipt', receipt_uuid: 'y', output_sha256: 'nothex' }));
    const r = cli(['enqueue', files[0]!, badFile, files[1]!, files[2]!, '--json'], configFile);
    expect(r.status).toBe(1); // one file refused
    const out = JSON.parse(r.stdout) as Array<{ file: string; key?: string; result?: string; job?: string; error?: string }>;
    expect(out.map((o) => o.file)).toEqual([files[0], badFile, files[1], files[2]]);
    expect(out[1]!.error).toMatch(/output_sha256/);
    const jobs = new Set(out.filter((o) => o.result === 'queued').map((o) => o.job));
    expect(jobs.size).toBe(1);
    expect([...jobs][0]).toMatch(/^bulk-/);
    for (const g of good) await waitFor(`${g.receipt_uuid} accepted`, () => issuer.store.subjects.getRecord(g.receipt_uuid));
    const text = cli(['enqueue', ...files], configFile);
    expect(text.status).toBe(0);
    expect(text.stdout.trim().split('\n')).toHaveLength(3);
    expect(text.stdout).toMatch(/already anchored/);
  });
});


describe('aer1-anchord and SIGTERM', () => {
  it('stops taking jobs, finishes what is in flight and exits 0; a restart finishes the rest', { timeout: 120_000 }, async () => {
    const relays = await startRelays(2);
    const config = testConfig({ relays });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 200 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      const child = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
      await waitFor('some accepted', async () => (await issuer.store.indexes.subjectCount()) >= 20, 30_000, 20);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const second = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
      try {
        await waitFor('200 confirmed', async () => (await issuer.count('confirmed')) === 200, 90_000, 250);
      } finally {
        const done = new Promise((r) => second.once('exit', r));
        second.kill('SIGTERM');
        await done;
      }
      for (const relay of relays) expect(relay.eventCount()).toBe(200);
    } finally {
      await issuer.close();
      await Promise.all(relays.map((r) => r.close()));
    }
  });
});

