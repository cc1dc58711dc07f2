/**
 * Unicode edge cases in every string member a subject carries, through the daemon.
 * Decision: any well-formed Unicode is accepted and anchored exactly as written (no
 * normalization: NFC and NFD spellings are two subjects); an unpaired UTF-16 surrogate has
 * no UTF-8 form to hash and is refused naming the member. For every accepted case the
 * envelope's canonical JSON equals Debian Python's json.dumps byte for byte, the relay holds
 * it as the event content, and the exported proof verifies offline.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { verifySignedEvent } from '../../src/core/nostr/events.js';
import { Issuer, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';
import { receiptDoc, timelineDoc, workflowDoc, type Json } from './documents.js';

const PYTHON = '/usr/bin/python3';
const hex = 'ab'.repeat(32);

/** Accepted: well-formed strings from the corners of Unicode and JSON. */
const EDGES: Record<string, string> = {
  nul: 'a\u0000b',
  controls: '\u0001\t\n\u001f',
  del: 'x\u007fy',
  lineSeparators: 'a\u2028b\u2029c',
  astral: '\u{1f600}\u{10ffff}\u{10000}',
  rtlOverride: 'abc\u202edcba\u2066x\u2069',
  bomAndNonchar: '\ufeffx\uffff\ufffe',
  nfd: 'e\u0301',
  nfc: '\u00e9',
  jsonSyntax: '"\\/\b\f\r',
  privateUse: '\ue000\u{f0000}',
};

/** Refused: unpaired surrogates, high, low, and reversed. */
const LONE: Record<string, string> = { high: 'a\ud800', low: '\udc00b', reversed: '\udc00\ud800' };

/** Subjects carrying `s` in every string member, each one's key made unique. */
function subjectsWith(s: string): Array<{ what: string; data: Json | Json[]; key: string; field: string }> {
  const u = (): string => `${s}-${randomUUID()}`;
  const receiptKey = u();
  const urlKey = u();
  const wfKey = u();
  const wfDocKey = u();
  const chainKey = u();
  const receiptDocKey = u();
  // URLs refuse controls and spaces (parsers drop them): there only the non-control part
  const urlSafe = [...s].filter((c) => !/[\u0000-\u0020\u007f]/.test(c)).join('') || 'x';
  return [
    { what: 'bare receipt', key: receiptKey, field: 'receipt_uuid', data: { subject: 'receipt', receipt_uuid: receiptKey, output_sha256: hex } },
    { what: 'bare receipt with evidence_url', key: urlKey, field: 'evidence_url', data: { subject: 'receipt', receipt_uuid: urlKey, output_sha256: hex, evidence_url: `https://example.com/${urlSafe}` } },
    { what: 'bare workflow close', key: wfKey, field: 'workflow_id', data: { subject: 'workflow-close', receipt_uuid: wfKey, output_sha256: hex, workflow_id: s, merkle_root: hex, merkle_version: s, step_count: 3 } },
    { what: 'workflow document', key: wfDocKey, field: 'steps[0].receipt_id', data: workflowDoc(3, { receiptId: wfDocKey, workflowId: s, stepId: (i) => `${s}${i}`, text: s }) },
    { what: 'chain head', key: chainKey, field: 'job_id', data: { subject: 'chain-head', job_id: chainKey, final_entry_digest: hex, entry_count: 2 } },
    { what: 'receipt document', key: receiptDocKey, field: 'id', data: receiptDoc(receiptDocKey, { text: s }) },
  ];
}

function pythonCanonical(texts: string[]): string[] {
  const script = 'import json,sys\nfor line in sys.stdin.read().split("\\n")[:-1]:\n    print(json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")))\n';
  const r = spawnSync(PYTHON, ['-c', script], { input: texts.map((t) => `${t}\n`).join(''), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python failed: ${r.stderr}`);
  return r.stdout.split('\n').slice(0, -1);
}

describe('Unicode edge cases in batch mode (the envelope kept as its claims, rebuilt when read)', () => {
  let relay: DevRelay;
  let daemon: Daemon;
  let issuer: Issuer;
  let config: ReturnType<typeof testConfig>;

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    config = testConfig({ relays: [relay], overrides: { nostr: { mode: 'batch', batchWindowMs: 300 } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });
  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await relay?.close();
  });

  it(`rebuilds every envelope with ${Object.keys(EDGES).length} kinds of edge string byte for byte: Python-equal, the digest's, proofs verify`, { timeout: 120_000 }, async () => {
    const all = Object.entries(EDGES).flatMap(([name, s]) => subjectsWith(s).map((x) => ({ ...x, name })));
    await issuer.enqueueMany(all.map((x) => ({ data: x.data, key: x.key })));
    const keys = all.map((x) => x.key);
    await waitFor(`${keys.length} confirmed`, async () => (await issuer.store.subjects.getRecords(keys)).every((r) => r?.status === 'confirmed'), 90_000, 200);
    // most are kept as claims (no e:<key>); the ones with a value over 64 bytes keep their text
    const kept = await Promise.all(keys.map((k) => issuer.redis.exists(issuer.store.keys.envelope(k))));
    expect(kept.filter((e) => e === 0).length).toBeGreaterThan(keys.length / 2);
    const records = await issuer.store.subjects.getRecords(keys);
    const canonicals = records.map((r) => r!.envelopeCanonical!);
    const python = pythonCanonical(canonicals);
    const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: [] });
    for (const [i, x] of all.entries()) {
      const where = `${x.name}/${x.what}`;
      expect(canonicals[i], where).toBe(python[i]);
      expect(sha256Hex(canonicals[i]!), where).toBe(records[i]!.digest);
      const envelope = JSON.parse(canonicals[i]!) as Record<string, unknown>;
      expect(envelope.receipt_uuid ?? envelope.job_id, where).toBe(x.key);
      const proof = await exporter.export(x.key);
      expect(proof?.envelope, where).toEqual(envelope);
      const isBare = !Array.isArray(x.data) && Object.hasOwn(x.data, 'subject');
      const value = isBare ? proof : Array.isArray(x.data) ? { entries: x.data, anchor_proof: proof } : { ...x.data, anchor_proof: proof };
      const report = await verifyAnchor({ value });
      expect(report.checks.filter((c) => c.status === 'FAIL'), where).toEqual([]);
      expect(report.verdict, `${where}: ${report.reason}`).toBe('PASS');
    }
  });
});

describe('Unicode edge cases in every string member', () => {
  let relay: DevRelay;
  let daemon: Daemon;
  let issuer: Issuer;
  let config: ReturnType<typeof testConfig>;

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    config = testConfig({ relays: [relay] });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });
  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await relay?.close();
  });

  it(`${PYTHON} is installed (the second opinion on canonical JSON)`, () => {
    expect(spawnSync(PYTHON, ['-c', 'import json'], { encoding: 'utf8' }).status, 'install Debian python3').toBe(0);
  });

  it(`accepts ${Object.keys(EDGES).length} kinds of edge string in every member; envelopes are Python-equal; proofs verify`, { timeout: 120_000 }, async () => {
    const all = Object.entries(EDGES).flatMap(([name, s]) => subjectsWith(s).map((x) => ({ ...x, name })));
    // a job timeline too: its job_id and tool
    for (const [name, s] of Object.entries(EDGES)) {
      const jobId = `${s}-${randomUUID()}`;
      all.push({ name, what: 'job timeline', key: jobId, field: '$[0].job_id', data: timelineDoc(3, jobId, s) });
    }
    await issuer.enqueueMany(all.map((x) => ({ data: x.data, key: x.key })));
    const keys = all.map((x) => x.key);
    await waitFor(`${keys.length} confirmed`, async () => (await issuer.store.subjects.getRecords(keys)).every((r) => r?.status === 'confirmed'), 90_000, 200).catch(async (err: unknown) => {
      const rs = await issuer.store.subjects.getRecords(keys);
      const bad = all.filter((_, i) => rs[i]?.status !== 'confirmed').map((x, i) => `${x.name}/${x.what}: ${rs[i]?.status} ${rs[i]?.reason ?? ''}`);
      throw new Error(`${(err as Error).message}; ${bad.slice(0, 5).join('; ')}`);
    });
    const records = await issuer.store.subjects.getRecords(keys);
    const canonicals = records.map((r) => r!.envelopeCanonical!);
    const python = pythonCanonical(canonicals);
    const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: [] });
    const stored = new Map(relay.events().map((e) => [e.id, e]));
    for (const [i, x] of all.entries()) {
      const r = records[i]!;
      const where = `${x.name}/${x.what}`;
      expect(canonicals[i], where).toBe(python[i]);
      expect(canonicalJson(JSON.parse(canonicals[i]!)), where).toBe(canonicals[i]);
      expect(sha256Hex(canonicals[i]!), where).toBe(r.digest);
      expect(/^[\x20-\x7e]*$/.test(canonicals[i]!), `${where}: canonical JSON is printable ASCII`).toBe(true);
      const envelope = JSON.parse(canonicals[i]!) as Record<string, unknown>;
      // the key as written, not normalized
      expect(envelope.receipt_uuid ?? envelope.job_id, where).toBe(x.key);
      const event = stored.get(r.nostrEventId!);
      expect(event?.content, where).toBe(canonicals[i]);
      expect(verifySignedEvent(JSON.stringify(event)).ok, where).toBe(true);
      const proof = await exporter.export(x.key);
      // documents carry their proof attached; bare fields have only the proof to check
      const isBare = !Array.isArray(x.data) && Object.hasOwn(x.data, 'subject');
      const value = isBare ? proof : Array.isArray(x.data) ? { entries: x.data, anchor_proof: proof } : { ...x.data, anchor_proof: proof };
      const report = await verifyAnchor({ value });
      expect(report.checks.filter((c) => c.status === 'FAIL'), where).toEqual([]);
      expect(report.verdict, `${where}: ${report.reason}`).toBe('PASS');
    }
    // NFC and NFD spellings are distinct subjects with distinct digests
    const nfc = records.filter((_, i) => all[i]!.name === 'nfc').map((r) => r!.digest);
    const nfd = records.filter((_, i) => all[i]!.name === 'nfd').map((r) => r!.digest);
    expect(new Set([...nfc, ...nfd]).size).toBe(nfc.length + nfd.length);
    console.log(`unicode: ${all.length} subjects with ${Object.keys(EDGES).length} kinds of edge string accepted, Python-equal, verified`);
  });

  it(`refuses unpaired surrogates (${Object.keys(LONE).length} kinds) in every member, naming it`, { timeout: 60_000 }, async () => {
    const all = Object.entries(LONE).flatMap(([name, s]) => subjectsWith(s).map((x) => ({ ...x, name })));
    // the job id must be a well-formed string of its own; the member is what is checked
    const jobIds = all.map(() => `lone-${randomUUID()}`);
    for (const [i, x] of all.entries()) await issuer.queue.add('anchor', x.data, { jobId: jobIds[i]!, removeOnComplete: true, removeOnFail: true });
    const records = await waitFor('all refused', async () => {
      const rs = await issuer.store.subjects.getRecords(jobIds);
      return rs.every((r) => r?.status === 'rejected') ? rs : null;
    }, 30_000, 200);
    for (const [i, x] of all.entries()) {
      expect(records![i]!.reason, `${x.name}/${x.what}`).toMatch(/contains an unpaired UTF-16 surrogate/);
    }
    // nothing anchored under any of those keys
    expect((await issuer.store.subjects.getRecords(all.map((x) => x.key))).filter((r) => r !== null)).toEqual([]);
    console.log(`unicode: ${all.length} subjects with unpaired surrogates refused`);
  });
});
