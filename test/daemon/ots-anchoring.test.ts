/**
 * The daemon end to end on OpenTimestamps: real Redis, two dev calendars speaking the
 * real protocol (in the main suite, one with the real server's Not-found second and one
 * answering gzip, a little late), python-opentimestamps as an independent reader of the
 * proofs we export. All the awkward answers at once: ots-awkward-calendars.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, REPO_ROOT, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const PYTHON = '/usr/bin/python3';

/** True once the subject's OTS batch has been submitted to at least m calendars. */
async function submitted(issuer: Issuer, key: string): Promise<boolean> {
  const link = (await issuer.store.subjects.getRecord(key))?.batches.ots;
  return link ? (await issuer.store.batches.batchField('ots', link.id, 'submitted')) === '1' : false;
}

/** Reads every proof with python-opentimestamps; returns per file: digest hex, attestations, re-serialization equal. */
function pythonRead(files: string[]): Array<{ file: string; digest: string; attestations: string[]; roundtrip: boolean }> {
  const script = `
import sys, json
from opentimestamps.core.timestamp import DetachedTimestampFile
from opentimestamps.core.serialize import BytesDeserializationContext, BytesSerializationContext
out = []
for path in json.load(sys.stdin):
    data = open(path, 'rb').read()
    f = DetachedTimestampFile.deserialize(BytesDeserializationContext(data))
    ctx = BytesSerializationContext()
    f.serialize(ctx)
    atts = sorted('%s@%s' % (type(a).__name__, getattr(a, 'height', getattr(a, 'uri', ''))) for _, a in f.timestamp.all_attestations())
    out.append({'file': path, 'digest': f.file_digest.hex(), 'attestations': atts, 'roundtrip': ctx.getbytes() == data})
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', script], { input: JSON.stringify(files), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`python-opentimestamps failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Array<{ file: string; digest: string; attestations: string[]; roundtrip: boolean }>;
}

describe('two dev calendars, m = 2', () => {
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let daemon: Daemon;
  let issuer: Issuer;
  let config: ReturnType<typeof testConfig>;

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    // As the real servers answer: one says Not found for a second after each round, one gzips.
    calendars = await startCalendars(2, headersFile, 100, [{ notFoundMs: 1000 }, { gzip: true, delayMs: 150 }]);
    config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2, batchWindowMs: 5000, batchMaxSize: 100_000 } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all(calendars.map((c) => c.close()));
  });

  it('python-opentimestamps is installed (Debian python3-opentimestamps)', () => {
    expect(spawnSync(PYTHON, ['-c', 'import opentimestamps'], { encoding: 'utf8' }).status, 'apt-get install python3-opentimestamps').toBe(0);
  });

  it('anchors 1,000 subjects with a few calendar submissions; python reads each proof with its own digest; mining confirms all', { timeout: 120_000 }, async () => {
    const subjects = Array.from({ length: 1000 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('1,000 submitted', async () => {
      for (const s of subjects) if (!(await submitted(issuer, s.receipt_uuid))) return false;
      return true;
    }, 60_000, 200);
    expect(await issuer.witnessCount('ots', 'pending')).toBe(1000);
    for (const c of calendars) {
      const received = c.stats().digestsReceived;
      expect(received).toBeGreaterThanOrEqual(1);
      expect(received).toBeLessThanOrEqual(5);
    }
    const exporter = new ProofExporter(issuer.store, { relays: [], calendars: config.ots.calendars });
    const dir = tempDir('proofs');
    const files: string[] = [];
    const digests = new Map<string, string>();
    for (const s of subjects) {
      const proof = await exporter.export(s.receipt_uuid);
      expect(proof?.ots?.status).toBe('pending');
      expect(proof?.ots?.calendars.map((c) => c.status)).toEqual(['pending', 'pending']);
      const file = join(dir, `${s.receipt_uuid}.ots`);
      writeFileSync(file, Buffer.from(proof!.ots!.proof!, 'base64'));
      files.push(file);
      digests.set(file, proof!.digest);
    }
    const read = pythonRead(files);
    for (const r of read) {
      expect(r.digest).toBe(digests.get(r.file));
      expect(r.roundtrip).toBe(true);
      expect(r.attestations).toEqual(calendars.map((c) => `PendingAttestation@${c.url}`).sort());
    }

    const block = await calendars[0]!.mine();
    await calendars[1]!.mine();
    await waitFor('1,000 confirmed', async () => (await issuer.count('confirmed')) === 1000, 60_000, 200);
    const confirmed = await exporter.export(subjects[0]!.receipt_uuid);
    expect(confirmed?.ots?.bitcoin?.height).toBe(block.height);
    expect(confirmed?.ots?.bitcoin?.block_hash).toBe(block.blockHash);

    const after: string[] = [];
    for (const s of subjects) {
      const proof = await exporter.export(s.receipt_uuid);
      expect(proof?.ots?.status).toBe('confirmed');
      const file = join(dir, `${s.receipt_uuid}.confirmed.ots`);
      writeFileSync(file, Buffer.from(proof!.ots!.proof!, 'base64'));
      after.push(file);
    }
    for (const r of pythonRead(after)) expect(r.attestations.filter((a) => a.startsWith('BitcoinBlockHeaderAttestation')).length).toBeGreaterThanOrEqual(1);

    const cli = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
    expect(existsSync(cli), 'run npm run build first').toBe(true);
    for (const file of after.slice(0, 5)) {
      const r = spawnSync(process.execPath, [cli, 'ots', 'verify', file, '--headers', headersFile, '--network', 'regtest'], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(String(block.height));
    }
  });

  it('with one calendar failing, m = 2 leaves the batch partial and retries; it becomes pending when the calendar returns', { timeout: 60_000 }, async () => {
    calendars[1]!.setMode('error500');
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('partial on ots', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'partial', 30_000);
    const history = await issuer.store.subjects.history(s.receipt_uuid);
    expect(history.find((h) => h.to === 'partial')?.detail).toMatch(/http_status/);
    calendars[1]!.setMode('ok');
    await waitFor('submitted once the calendar is back', () => submitted(issuer, s.receipt_uuid), 30_000);
    // the batch records its submission, then moves its subjects: wait for the move, not a fixed moment
    await waitFor('pending once submitted', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'pending', 10_000);
  });
});

describe('one calendar down, m = 1', () => {
  it('goes pending with the down calendar\'s failure shown', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    calendars[1]!.setMode('error500');
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 1 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      await waitFor('submitted', () => submitted(issuer, s.receipt_uuid), 30_000);
      expect((await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.ots?.status).toBe('pending');
      const proof = await new ProofExporter(issuer.store, { relays: [], calendars: config.ots.calendars }).export(s.receipt_uuid);
      expect(proof?.ots?.calendars).toEqual([
        { url: calendars[0]!.url, status: 'pending' },
        { url: calendars[1]!.url, status: 'failed' },
      ]);
      const history = await issuer.store.subjects.history(s.receipt_uuid);
      expect(history.find((h) => h.to === 'pending')?.detail).toContain(`${calendars[1]!.url}: http_status`);
    } finally {
      await daemon.stop();
      await issuer.close();
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});

describe('a calendar that accepts the connection and never answers', () => {
  it('does not stall the worker: the request times out and is recorded, the other calendar carries the batch', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    calendars[1]!.setMode('hang');
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 1, timeoutMs: 1000 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 3 }, () => receiptFields());
      for (const s of subjects) {
        await issuer.enqueue(s, s.receipt_uuid);
        await new Promise((r) => setTimeout(r, 300));
      }
      for (const s of subjects) await waitFor('submitted', () => submitted(issuer, s.receipt_uuid), 30_000);
      // the batch is marked submitted just before its subjects' transition is recorded (ots-witness.ts): wait for that entry
      const movedOn = async () => (await issuer.store.subjects.history(subjects[2]!.receipt_uuid)).find((h) => h.to === 'pending' && h.detail !== undefined);
      await waitFor('the transition to pending recorded', async () => (await movedOn()) !== undefined, 30_000);
      expect((await movedOn())!.detail).toContain(`${calendars[1]!.url}: timeout`);
    } finally {
      await daemon.stop();
      await issuer.close();
      calendars[1]!.setMode('ok');
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});

describe('a daemon restart between submission and confirmation', () => {
  it('loses no pending proof: the next daemon upgrades and confirms', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2 } } });
    let daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 50 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      for (const s of subjects) await waitFor('submitted', () => submitted(issuer, s.receipt_uuid), 30_000);
      expect(await issuer.witnessCount('ots', 'pending')).toBe(50);
      await daemon.stop();
      await calendars[0]!.mine();
      await calendars[1]!.mine();
      daemon = await startDaemon(config);
      await waitFor('50 confirmed', async () => (await issuer.count('confirmed')) === 50, 30_000);
    } finally {
      await daemon.stop();
      await issuer.close();
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});
