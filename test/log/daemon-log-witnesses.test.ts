/**
 * With the anchor log on, its checkpoints are what the witnesses anchor: in Nostr batch mode
 * each batch event is a checkpoint event (the signed note as content, x = its root), the
 * calendars are given the checkpoint's root, and each subject's proof carries the entry's
 * path to that root in `nostr.batch` and in its `.ots` (file digest d). Real Redis, two dev
 * relays, a dev calendar speaking the real protocol, python-opentimestamps reading the
 * `.ots` files, and aer1-verify-anchor (the pipeline, and the built command) checking them
 * with and without the log key; forged variants fail.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/index.js';
import { loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import { logDir, logKeyFile } from '../../src/adapters/config/config.js';
import { checkpointEvent, isCheckpointEvent, readCheckpointNote } from '../../src/core/nostr/events.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { generateSignerKey, parseNote, parseVerifierKey, signNote } from '../../src/core/log/note.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { Issuer, REPO_ROOT, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const PYTHON = '/usr/bin/python3';
const N = 40;

/** python-opentimestamps reads each `.ots`: its file digest and its attestations. */
function pythonRead(files: string[]): Array<{ file: string; digest: string; attestations: string[] }> {
  const script = `
import sys, json
from opentimestamps.core.timestamp import DetachedTimestampFile
from opentimestamps.core.serialize import BytesDeserializationContext
out = []
for path in json.load(sys.stdin):
    f = DetachedTimestampFile.deserialize(BytesDeserializationContext(open(path, 'rb').read()))
    atts = sorted(type(a).__name__ for _, a in f.timestamp.all_attestations())
    out.append({'file': path, 'digest': f.file_digest.hex(), 'attestations': atts})
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', script], { input: JSON.stringify(files), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`python-opentimestamps failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Array<{ file: string; digest: string; attestations: string[] }>;
}

const byName = (r: VerifyReport): Record<string, { status: string; detail: string }> => Object.fromEntries(r.checks.map((c) => [c.name, { status: c.status, detail: c.detail }]));

describe('the log on, Nostr batch mode: checkpoints are what the witnesses anchor', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let daemon: Daemon;
  let issuer: Issuer;
  let exporter: ProofExporter;
  let config: ReturnType<typeof testConfig>;
  let vkey = '';
  const key = generateSecretKey();
  const dir = tempDir('aer1-cp-witness');
  const subjects = Array.from({ length: N }, () => receiptFields());

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    relays = await startRelays(2);
    calendars = await startCalendars(1, headersFile);
    config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: {
        nostr: { mode: 'batch', batchWindowMs: 300, batchMaxSize: 15 },
        ots: { batchWindowMs: 300 },
        log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/aer1', checkpointIntervalMs: 100 },
      },
    });
    daemon = await startDaemon(config, undefined, key);
    vkey = loadLogKeyFile(logKeyFile(config)).verifierKey;
    issuer = new Issuer(config);
    exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars }, { dir: logDir(config) });
    // in three goes, so that there are several checkpoints and batches
    for (let i = 0; i < N; i += 15) {
      await issuer.enqueueMany(subjects.slice(i, i + 15).map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor(`checkpoint past ${i}`, async () => Number((await issuer.redis.get(`{${config.redis.prefix}}:log:published`)) ?? 0) >= Math.min(N, i + 15), 20_000);
    }
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('the relays hold checkpoint events only; every subject is confirmed on Nostr and held by the calendar', { timeout: 60_000 }, async () => {
    // (a subject is ots `pending` from its acceptance on: wait for its batch to be submitted)
    await waitFor('nostr confirmed, and every OTS batch held by the calendar', async () => {
      if ((await issuer.witnessCount('nostr', 'confirmed')) !== N) return false;
      for (const r of await issuer.store.subjects.getRecords(subjects.map((x) => x.receipt_uuid))) {
        if (!r?.batches.ots || (await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) !== '1') return false;
      }
      return true;
    }, 40_000);
    for (const relay of relays) {
      const mine = relay.events().filter((e) => e.pubkey === key.publicKey);
      expect(mine.length).toBeGreaterThanOrEqual(2);
      for (const e of mine) {
        expect(isCheckpointEvent(e)).toBe(true);
        expect(e.tags.some((t) => t[0] === 't' && t[1] === 'aer1-batch')).toBe(false);
        const { checkpoint } = readCheckpointNote(e.content);
        expect(checkpoint.origin).toBe('example.test/aer1');
        expect(e.tags.find((t) => t[0] === 'x')?.[1]).toBe(checkpoint.root.toString('hex'));
      }
      // one event per checkpoint: no two batches share one
      expect(new Set(mine.map((e) => readCheckpointNote(e.content).checkpoint.size)).size).toBe(mine.length);
    }
    // the calendar was given checkpoint roots, never one a second
    expect(calendars[0]!.stats().digestsReceived).toBeLessThanOrEqual(6);
  });

  it('every proof verifies with the log key: the entry leads to the checkpoint event\'s note; python reads each .ots with digest d; mining confirms', { timeout: 90_000 }, async () => {
    const trusted = [parseVerifierKey(vkey)];
    const verify = (proof: AnchorProof, opts: { confirmed?: boolean; logKeys?: typeof trusted } = {}): Promise<VerifyReport> =>
      verifyAnchor({ value: proof }, { expectedPubkeys: [key.publicKey], logKeys: opts.logKeys ?? trusted, headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: opts.confirmed === true });
    const out = tempDir('cp-proofs');
    const files: string[] = [];
    const digests = new Map<string, string>();
    for (const s of subjects) {
      const proof = (await exporter.export(s.receipt_uuid))!;
      expect(proof.nostr?.mode).toBe('batch');
      expect(isCheckpointEvent(proof.nostr!.event!)).toBe(true);
      const cp = readCheckpointNote(proof.nostr!.event!.content).checkpoint;
      expect(proof.nostr!.batch!.size).toBe(cp.size);
      expect(proof.nostr!.batch!.index).toBe(proof.log!.index);
      const r = await verify(proof);
      expect(r.verdict, r.reason).toBe('PASS');
      expect(byName(r)['batch-path']!.status, byName(r)['batch-path']!.detail).toBe('PASS');
      expect(byName(r)['batch-path']!.detail).toMatch(/^checkpoint event: entry \d+ of example\.test\/aer1/);
      expect(byName(r).log!.status).toBe('PASS');
      const file = join(out, `${s.receipt_uuid}.ots`);
      writeFileSync(file, Buffer.from(proof.ots!.proof!, 'base64'));
      files.push(file);
      digests.set(file, proof.digest);
    }
    for (const r of pythonRead(files)) {
      expect(r.digest).toBe(digests.get(r.file));
      expect(r.attestations).toEqual(['PendingAttestation']);
    }

    const block = await calendars[0]!.mine();
    await waitFor('all confirmed', async () => (await issuer.count('confirmed')) === N, 40_000);
    const confirmedFiles: string[] = [];
    const proofs = new Map<string, string>();
    for (const s of subjects) {
      const proof = (await exporter.export(s.receipt_uuid))!;
      const r = await verify(proof, { confirmed: true });
      expect(r.verdict, r.reason).toBe('PASS');
      expect(r.witnesses.ots?.bitcoin.map((b) => b.height)).toContain(block.height);
      const file = join(out, `${s.receipt_uuid}.confirmed.ots`);
      writeFileSync(file, Buffer.from(proof.ots!.proof!, 'base64'));
      confirmedFiles.push(file);
      const json = join(out, `${s.receipt_uuid}.proof.json`);
      writeFileSync(json, JSON.stringify(proof));
      proofs.set(s.receipt_uuid, json);
    }
    for (const r of pythonRead(confirmedFiles)) expect(r.attestations).toContain('BitcoinBlockHeaderAttestation');

    // the command a stranger runs
    const bin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
    expect(existsSync(join(REPO_ROOT, 'dist/src/cli/aer1-verify-anchor.js')), 'run npm run build first').toBe(true);
    for (const file of [...proofs.values()].slice(0, 3)) {
      const args = [bin, file, '--expected-pubkey', key.publicKey, '--log-key', vkey, '--headers', headersFile, '--network', 'regtest', '--require-confirmed', '--json'];
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as { checks: Array<{ name: string; status: string }> };
      expect(report.checks.find((c) => c.name === 'batch-path')?.status).toBe('PASS');
    }
  });

  it('a path for another index, or the note re-signed by another log key, fails; without --log-key the note\'s signer is not trusted', { timeout: 30_000 }, async () => {
    const trusted = [parseVerifierKey(vkey)];
    // two subjects of one batch (one checkpoint event)
    const all = await Promise.all(subjects.map(async (s) => (await exporter.export(s.receipt_uuid))!));
    const a = all.find((p) => all.some((q) => q !== p && q.nostr!.event!.id === p.nostr!.event!.id))!;
    const b = all.find((q) => q !== a && q.nostr!.event!.id === a.nostr!.event!.id)!;
    const verify = (proof: AnchorProof, logKeys = trusted): Promise<VerifyReport> => verifyAnchor({ value: proof }, { expectedPubkeys: [key.publicKey], logKeys });

    const otherIndex = structuredClone(a);
    otherIndex.nostr!.batch = b.nostr!.batch!;
    const bad = await verify(otherIndex);
    expect(bad.verdict).toBe('FAIL');
    expect(byName(bad)['batch-path']!.detail).toMatch(/does not lead by the path to the root/);

    // the same checkpoint text signed by another log key, published by the same Nostr key
    const note = a.nostr!.event!.content;
    const forgedNote = signNote(parseNote(note).text, [generateSignerKey('example.test/aer1').signer]);
    const forged = structuredClone(a);
    forged.nostr!.event = checkpointEvent({ note: forgedNote, createdAt: a.nostr!.event!.created_at, kind: a.nostr!.event!.kind }, key);
    forged.nostr!.relays = [];
    const refused = await verify(forged);
    expect(refused.verdict).toBe('FAIL');
    expect(byName(refused)['batch-path']!.detail).toMatch(/not signed by a log key given/);

    const untrusted = await verify(a, []);
    expect(byName(untrusted)['batch-path']!.status).toBe('SKIP');
    expect(byName(untrusted)['batch-path']!.detail).toMatch(/signer not trusted: give --log-key/);
    expect(untrusted.verdict).not.toBe('FAIL');
  });
});

describe('the log on: a batch is cut at the checkpoint, not at the window\'s next tick', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let daemon: Daemon | undefined;
  let issuer: Issuer | undefined;

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('the first subject after a quiet window is cut as soon as a checkpoint covers it; the next ones wait for the window (one cut a window)', { timeout: 60_000 }, async () => {
    const dir = tempDir('aer1-cp-cut');
    const headersFile = join(tempDir('headers'), 'headers.json');
    relays = await startRelays(1);
    calendars = await startCalendars(1, headersFile);
    // windows far longer than the test: only a checkpoint can cut within it
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: {
        nostr: { mode: 'batch', batchWindowMs: 600_000 },
        ots: { batchWindowMs: 600_000 },
        log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/cut', checkpointIntervalMs: 100 },
      },
    });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
    const store = issuer.store;
    const published = async (): Promise<number> => Number((await issuer!.redis.get(`{${config.redis.prefix}}:log:published`)) ?? 0);
    const [a, b, c] = [receiptFields(), receiptFields(), receiptFields()];
    await issuer.enqueue(a, a.receipt_uuid);
    const record = await waitFor('the first subject in a Nostr and an OTS batch', async () => {
      const r = await store.subjects.getRecord(a.receipt_uuid);
      return r?.batches.nostr && r.batches.ots ? r : null;
    }, 20_000);
    for (const w of ['nostr', 'ots'] as const) expect((await store.batches.getBatch(w, record.batches[w]!.id))?.fields.cp).toBe('1');
    await issuer.enqueue(b, b.receipt_uuid);
    await waitFor('a checkpoint covering the second', async () => (await published()) >= 2, 20_000);
    await issuer.enqueue(c, c.receipt_uuid);
    await waitFor('a later checkpoint covering the third', async () => (await published()) >= 3, 20_000);
    for (const key of [b.receipt_uuid, c.receipt_uuid]) expect((await store.subjects.getRecord(key))?.batches).toEqual({});
  });
});
