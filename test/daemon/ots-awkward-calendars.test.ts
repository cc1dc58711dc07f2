/**
 * The daemon against calendars that behave as the real ones do on a bad day, all at once
 * (real Redis, four dev calendars sharing one regtest chain, m = 3):
 *   - one answers `Not found` for a while after each round (the real server's first second);
 *   - one gzips every answer (Content-Encoding: gzip) although we ask for identity;
 *   - one is slow, but within our deadline;
 *   - one is slower than our deadline (every request times out).
 * (The submission waits for the slowest calendar, up to the deadline, so the Not-found window
 * is longer than the deadline here: the first polls land inside it.)
 * The batch goes pending on the three that answer, the late one's timeout recorded; the
 * Not-found calendar stays held (polled again, not dropped); after mining every subject
 * confirms, and its exported proof passes the offline verifier, `aer1-anchor ots verify`
 * and python-opentimestamps.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/index.js';
import { subjectDetail } from '../../src/adapters/state/subject-view.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { startDevCalendar, type DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, REPO_ROOT, receiptFields, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const PYTHON = '/usr/bin/python3';
const CLI = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
const TIMEOUT_MS = 2500;

function pythonHasOts(): boolean {
  return spawnSync(PYTHON, ['-c', 'import opentimestamps'], { encoding: 'utf8' }).status === 0;
}

/** python-opentimestamps reads each file: its digest and attestations (type@height-or-uri). */
function pythonRead(files: string[]): Array<{ digest: string; attestations: string[] }> {
  const script = `
import sys, json
from opentimestamps.core.timestamp import DetachedTimestampFile
from opentimestamps.core.serialize import BytesDeserializationContext
out = []
for path in json.load(sys.stdin):
    f = DetachedTimestampFile.deserialize(BytesDeserializationContext(open(path, 'rb').read()))
    atts = sorted('%s@%s' % (type(a).__name__, getattr(a, 'height', getattr(a, 'uri', ''))) for _, a in f.timestamp.all_attestations())
    out.append({'digest': f.file_digest.hex(), 'attestations': atts})
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', script], { input: JSON.stringify(files), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`python-opentimestamps failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Array<{ digest: string; attestations: string[] }>;
}

describe('four awkward calendars at once (m = 3)', () => {
  let headersFile = '';
  let notFound: DevCalendar, gzip: DevCalendar, slow: DevCalendar, tooSlow: DevCalendar;
  let daemon: Daemon;
  let issuer: Issuer;
  let config: ReturnType<typeof testConfig>;

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    const common = { headersOut: headersFile, aggregationMs: 100 };
    [notFound, gzip, slow, tooSlow] = await Promise.all([
      startDevCalendar({ ...common, notFoundMs: 6000 }),
      startDevCalendar({ ...common, gzip: true }),
      startDevCalendar({ ...common, delayMs: 1200 }),
      startDevCalendar({ ...common, delayMs: TIMEOUT_MS + 1500 }),
    ]);
    config = testConfig({
      calendars: [notFound, gzip, slow, tooSlow],
      headersFile,
      overrides: { ots: { minCalendars: 3, timeoutMs: TIMEOUT_MS, upgradeInitialMs: 300, upgradeMaxMs: 600 } },
    });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([notFound, gzip, slow, tooSlow].filter(Boolean).map((c) => c.close()));
  });

  it('pending on the three that answer, the late one\'s timeout shown; Not found polled again, not dropped; all confirm after mining; proofs verify', { timeout: 120_000 }, async () => {
    const subjects = Array.from({ length: 20 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    const key = subjects[0]!.receipt_uuid;

    // Right after submission the Not-found calendar's polls say so; the daemon keeps it pending.
    const early = await waitFor('a poll answered Not found', async () => {
      const v = await subjectDetail(issuer.store, config, key);
      const cal = v?.witnesses.ots?.calendars.find((c) => c.url === notFound.url);
      return cal?.message === 'Not found' ? v : null;
    }, 30_000, 50);
    expect(early.witnesses.ots!.status).toBe('pending');
    const byUrl = new Map(early.witnesses.ots!.calendars.map((c) => [c.url, c]));
    expect(byUrl.get(notFound.url)!.status).toBe('pending');
    expect(byUrl.get(gzip.url)!.status).toBe('pending');
    expect(byUrl.get(slow.url)!.status).toBe('pending');
    expect(byUrl.get(tooSlow.url)!.status).toBe('failed');
    expect(byUrl.get(tooSlow.url)!.message).toMatch(/^timeout: .*within 2500 ms/);
    const pendingChange = early.history.find((h) => h.witness === 'ots' && h.to === 'pending');
    expect(pendingChange?.detail).toContain(`3 of 4 calendars hold the batch root; failed: ${tooSlow.url}: timeout`);

    // Once its window has passed, the same calendar says Pending: the commitment was never lost.
    await waitFor('the Not-found calendar now says Pending', async () => {
      const v = await subjectDetail(issuer.store, config, key);
      return v?.witnesses.ots?.calendars.find((c) => c.url === notFound.url)?.message === 'Pending confirmation in Bitcoin blockchain';
    }, 30_000, 100);
    await waitFor('20 pending', async () => (await issuer.witnessCount('ots', 'pending')) === 20, 30_000, 100);

    // Mine on the Not-found calendar only: its (late) upgrade alone confirms every subject.
    const block = await notFound.mine();
    await waitFor('20 confirmed', async () => (await issuer.count('confirmed')) === 20, 60_000, 200);
    await gzip.mine();
    await slow.mine();
    const view = await subjectDetail(issuer.store, config, key);
    expect(view!.witnesses.ots!.bitcoin?.height).toBe(block.height);
    expect(view!.witnesses.ots!.calendars.find((c) => c.url === notFound.url)?.status).toBe('confirmed');

    // Poll the gzip and slow calendars' upgrades in too, then check every proof three ways.
    // every subject: a busy machine may have cut the twenty into more than one OTS batch
    await waitFor('gzip and slow calendars confirmed too, for every subject', async () => {
      for (const s of subjects) {
        const v = await subjectDetail(issuer.store, config, s.receipt_uuid);
        const st = new Map(v!.witnesses.ots!.calendars.map((c) => [c.url, c.status]));
        if (st.get(gzip.url) !== 'confirmed' || st.get(slow.url) !== 'confirmed') return false;
      }
      return true;
    }, 30_000, 200);
    const exporter = new ProofExporter(issuer.store, { relays: [], calendars: config.ots.calendars });
    const dir = tempDir('awkward-proofs');
    const files: string[] = [];
    const digests: string[] = [];
    for (const s of subjects) {
      const proof = await exporter.export(s.receipt_uuid);
      expect(proof?.ots?.status).toBe('confirmed');
      const report = await verifyAnchor({ value: proof }, { headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: true });
      expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
      expect(report.witnesses.ots?.verified).toBe('confirmed');
      const file = join(dir, `${s.receipt_uuid}.ots`);
      writeFileSync(file, Buffer.from(proof!.ots!.proof!, 'base64'));
      files.push(file);
      digests.push(proof!.digest);
    }

    expect(existsSync(CLI), 'run npm run build first').toBe(true);
    const r = spawnSync(process.execPath, [CLI, 'ots', 'verify', files[0]!, '--headers', headersFile, '--network', 'regtest'], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(String(block.height));

    expect(pythonHasOts(), 'python-opentimestamps is not installed: apt-get install python3-opentimestamps').toBe(true);
    const read = pythonRead(files);
    read.forEach((p, i) => {
      expect(p.digest).toBe(digests[i]);
      // three Bitcoin attestations (one per calendar that held the root), one pending (the one that timed out never held it)
      expect(p.attestations.filter((a) => a.startsWith('BitcoinBlockHeaderAttestation')).length).toBe(3);
      expect(p.attestations.some((a) => a.includes(tooSlow.url))).toBe(false);
    });
  });
});
