/**
 * NIP-03 for envelope-mode events (real Redis, two dev relays, one dev calendar): each OTS
 * batch commits to its subjects' digests and their event ids in one calendar submission;
 * once Bitcoin confirms, every envelope event gets a kind-1040 attestation on the relays
 * (`["e", id]`, `["k", kind]`, content = base64 `.ots` of the event id with one Bitcoin
 * attestation), which our codec, the Bitcoin header check, `aer1-anchor ots verify` and
 * python-opentimestamps all accept as a proof of the event id. The subjects' own proofs
 * still pass the offline verifier.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HeadersFileSource, verifyBitcoinAttestation } from '../../src/adapters/bitcoin/index.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { parseDetached } from '../../src/core/ots/codec.js';
import { allAttestations, bitcoinAttestations } from '../../src/core/ots/timestamp.js';
import { verifySignedEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey, type SigningKey } from '../../src/core/nostr/keys.js';
import { Nip03Publisher } from '../../src/adapters/nostr/nip03-publisher.js';
import { createLogger } from '../../src/daemon/logger.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import { logDir, logKeyFile } from '../../src/adapters/config/config.js';
import { parseVerifierKey } from '../../src/core/log/note.js';
import { Issuer, REPO_ROOT, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const PYTHON = '/usr/bin/python3';
const CLI = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function stack(nip03: boolean, log: Record<string, unknown> = {}): Promise<{ relays: DevRelay[]; calendar: DevCalendar; headersFile: string; daemon: Daemon; key: SigningKey; issuer: Issuer; config: ReturnType<typeof testConfig> }> {
  const headersFile = join(tempDir('headers'), 'headers.json');
  const relays = await startRelays(2);
  const [calendar] = await startCalendars(1, headersFile);
  cleanups.push(() => Promise.all([...relays.map((r) => r.close()), calendar!.close()]));
  const config = testConfig({ relays, calendars: [calendar!], headersFile, overrides: { nostr: { mode: 'envelope', nip03 }, ots: { batchWindowMs: 500, upgradeInitialMs: 200, upgradeMaxMs: 400 }, log } });
  const key = generateSecretKey();
  const daemon = await startDaemon(config, undefined, key);
  cleanups.push(() => daemon.stop());
  const issuer = new Issuer(config);
  cleanups.push(() => issuer.close());
  return { relays, calendar: calendar!, headersFile, daemon, key, issuer, config };
}

const attestations = (relay: DevRelay) => relay.events().filter((e) => e.kind === 1040);

/** Waits until every subject's own event is confirmed on Nostr and its OTS batch is submitted to the calendar. */
function submittedAndConfirmed(issuer: Issuer, keys: readonly string[]) {
  return waitFor('all submitted to the calendar, nostr confirmed', async () => {
    const rs = await issuer.store.subjects.getRecords(keys);
    for (const r of rs) {
      if (!r?.nostrEventId || r.witnesses.nostr?.status !== 'confirmed' || !r.batches.ots) return null;
      if ((await issuer.store.batches.batchField('ots', r.batches.ots.id, 'submitted')) !== '1') return null;
    }
    return rs;
  }, 60_000, 100);
}

describe('NIP-03 attestations of envelope events', () => {
  it('one calendar submission per batch; after Bitcoin confirms, a kind-1040 event per envelope event on every relay, its .ots proving the event id', { timeout: 120_000 }, async () => {
    const { relays, calendar, headersFile, daemon, key, issuer, config } = await stack(true);
    const subjects = Array.from({ length: 5 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    const records = await submittedAndConfirmed(issuer, subjects.map((s) => s.receipt_uuid));
    const batches = new Set(records.map((r) => r!.batches.ots!.id));
    // the event ids ride in the same submission: one digest per batch, no more
    expect(calendar.stats().digestsReceived).toBe(batches.size);
    for (const id of batches) expect(await issuer.store.batches.batchField('ots', id, 'events_root')).toMatch(/^[0-9a-f]{64}$/);
    expect(attestations(relays[0]!)).toHaveLength(0); // nothing before Bitcoin

    const block = await calendar.mine();
    await waitFor('all confirmed', async () => (await issuer.count('confirmed')) === subjects.length, 60_000, 100);
    for (const relay of relays) await waitFor(`5 attestations on ${relay.url}`, () => attestations(relay).length === subjects.length, 60_000, 100);

    const byTarget = new Map(attestations(relays[0]!).map((e) => [e.tags.find((t) => t[0] === 'e')?.[1], e]));
    const dir = tempDir('nip03');
    const files: string[] = [];
    for (const r of records) {
      const ev = byTarget.get(r!.nostrEventId!);
      expect(ev, `attestation of ${r!.nostrEventId}`).toBeDefined();
      expect(verifySignedEvent(JSON.stringify(ev)).ok).toBe(true);
      // signed by the daemon's key, as the envelope event it attests
      expect(ev!.pubkey).toBe((JSON.parse((await issuer.store.events.eventJson(r!.nostrEventId!))!) as { pubkey: string }).pubkey);
      expect(ev!.tags).toContainEqual(['e', r!.nostrEventId!]);
      expect(ev!.tags).toContainEqual(['k', String(config.nostr.kind)]);
      const ots = Buffer.from(ev!.content, 'base64');
      const file = parseDetached(ots);
      expect(file.digest.toString('hex')).toBe(r!.nostrEventId);
      // NIP-03: one Bitcoin attestation, no pending ones
      const all = allAttestations(file.timestamp);
      expect(all).toHaveLength(1);
      const [btc] = bitcoinAttestations(file.timestamp);
      expect(btc!.height).toBe(block.height);
      const checked = await verifyBitcoinAttestation(btc!.merkleRoot, btc!.height, new HeadersFileSource(headersFile), 'regtest');
      expect(checked.block_hash).toBe(block.blockHash);
      const path = join(dir, `${r!.nostrEventId}.ots`);
      writeFileSync(path, ots);
      files.push(path);
    }
    const cli = spawnSync(process.execPath, [CLI, 'ots', 'verify', files[0]!, '--digest', records[0]!.nostrEventId!, '--headers', headersFile, '--network', 'regtest'], { encoding: 'utf8' });
    expect(cli.status, cli.stdout + cli.stderr).toBe(0);

    expect(spawnSync(PYTHON, ['-c', 'import opentimestamps'], { encoding: 'utf8' }).status, 'python-opentimestamps is not installed: apt-get install python3-opentimestamps').toBe(0);
    const py = spawnSync(PYTHON, ['-c', `
import sys, json
from opentimestamps.core.timestamp import DetachedTimestampFile
from opentimestamps.core.serialize import BytesDeserializationContext
out = []
for p in json.load(sys.stdin):
    f = DetachedTimestampFile.deserialize(BytesDeserializationContext(open(p, 'rb').read()))
    out.append([f.file_digest.hex(), sorted('%s@%s' % (type(a).__name__, getattr(a, 'height', '')) for _, a in f.timestamp.all_attestations())])
print(json.dumps(out))
`], { input: JSON.stringify(files), encoding: 'utf8' });
    expect(py.status, py.stderr).toBe(0);
    const read = JSON.parse(py.stdout) as Array<[string, string[]]>;
    read.forEach(([digest, atts], i) => {
      expect(digest).toBe(records[i]!.nostrEventId);
      expect(atts).toEqual([`BitcoinBlockHeaderAttestation@${block.height}`]);
    });

    // the subjects' own proofs (3 ops longer, through the joined root) still verify offline
    const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars });
    for (const s of subjects) {
      const report = await verifyAnchor({ value: await exporter.export(s.receipt_uuid) }, { headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: true });
      expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
      expect(report.witnesses.ots?.verified).toBe('confirmed');
    }
    // the attestations' relay reports never touch the subjects' nostr witness
    const history = await issuer.store.subjects.history(subjects[0]!.receipt_uuid);
    const moves = history.filter((h) => h.witness === 'nostr' && h.from !== h.to).map((h) => h.to);
    expect(moves.slice(moves.indexOf('confirmed'))).toEqual(['confirmed']);
    expect((await issuer.store.subjects.getRecord(subjects[0]!.receipt_uuid))?.witnesses.nostr?.status).toBe('confirmed');
    // exactly one attestation per event, however many polls ran after the confirmation
    for (const relay of relays) expect(attestations(relay)).toHaveLength(subjects.length);

    // a run again (a retried job, another daemon) signs nothing new: same events, none sent twice
    const publisher = new Nip03Publisher(daemon.store, daemon.nostr!, key, createLogger('silent'), new HeadersFileSource(headersFile), 'regtest');
    for (const id of batches) {
      expect(await publisher.publishBatch(id)).toBe(0); // done
      await issuer.redis.hdel(issuer.store.keys.batch('ots', id), 'nip03');
      expect(await publisher.publishBatch(id)).toBeGreaterThan(0);
    }
    const before = new Set([...byTarget.values()].map((e) => e.id));
    for (const relay of relays) {
      expect(attestations(relay)).toHaveLength(subjects.length);
      expect(new Set(attestations(relay).map((e) => e.id))).toEqual(before);
    }
  });

  it('with the anchor log on: the OTS batch is a checkpoint, the event ids join its root, and every envelope event still gets its attestation', { timeout: 120_000 }, async () => {
    const dir = tempDir('nip03-log');
    const { relays, calendar, headersFile, issuer, config, key } = await stack(true, { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/nip03', checkpointIntervalMs: 100 });
    const subjects = Array.from({ length: 4 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    const records = await submittedAndConfirmed(issuer, subjects.map((s) => s.receipt_uuid));
    for (const id of new Set(records.map((r) => r!.batches.ots!.id))) {
      expect(await issuer.store.batches.batchField('ots', id, 'cp')).toMatch(/^[0-9]+$/);
      expect(await issuer.store.batches.batchField('ots', id, 'events_root')).toMatch(/^[0-9a-f]{64}$/);
    }
    const block = await calendar.mine();
    await waitFor('all confirmed', async () => (await issuer.count('confirmed')) === subjects.length, 60_000, 100);
    for (const relay of relays) await waitFor(`4 attestations on ${relay.url}`, () => attestations(relay).length === subjects.length, 60_000, 100);
    const byTarget = new Map(attestations(relays[0]!).map((e) => [e.tags.find((t) => t[0] === 'e')?.[1], e]));
    const vkey = parseVerifierKey(loadLogKeyFile(logKeyFile(config)).verifierKey);
    const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars }, { dir: logDir(config) });
    for (const r of records) {
      const file = parseDetached(Buffer.from(byTarget.get(r!.nostrEventId!)!.content, 'base64'));
      expect(file.digest.toString('hex')).toBe(r!.nostrEventId);
      const [btc] = bitcoinAttestations(file.timestamp);
      expect(btc!.height).toBe(block.height);
      await verifyBitcoinAttestation(btc!.merkleRoot, btc!.height, new HeadersFileSource(headersFile), 'regtest');
      const report = await verifyAnchor({ value: await exporter.export(r!.key) }, { expectedPubkeys: [key.publicKey], logKeys: [vkey], headerSource: new HeadersFileSource(headersFile), network: 'regtest', requireConfirmed: true });
      expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
      expect(report.witnesses.ots?.verified).toBe('confirmed');
      expect(report.checks.find((c) => c.name === 'log')?.status).toBe('PASS');
    }
  });

  it('nostr.nip03 false: the batch root is submitted bare and no kind-1040 event is published', { timeout: 90_000 }, async () => {
    const { relays, calendar, issuer } = await stack(false);
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const batchId = await waitFor('submitted', async () => {
      const id = (await issuer.store.subjects.getRecord(s.receipt_uuid))?.batches.ots?.id;
      return id && (await issuer.store.batches.batchField('ots', id, 'submitted')) === '1' ? id : null;
    }, 30_000);
    expect(await issuer.store.batches.batchField('ots', batchId, 'events_root')).toBeNull();
    await calendar.mine();
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    expect(await issuer.store.batches.batchField('ots', batchId, 'nip03')).toBeNull();
    for (const relay of relays) expect(attestations(relay)).toHaveLength(0);
  });
});
