/**
 * Forged `anchor_proof`s against the verifier (src/verify, its programmatic API). The
 * genuine proofs come from a real daemon run — a receipt, a workflow close and a job
 * timeline, confirmed on a dev relay and in a regtest block of a dev calendar, and a batch
 * of receipts in Nostr batch mode — and each forgery targets one check the verifier makes.
 * Every forgery must be a FAIL naming that check (or a usage error); none may PASS.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBase64Strict } from '../../src/core/aer1/base64.js';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { UsageError } from '../../src/core/errors/errors.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
import type { CheckName } from '../../src/core/verify/types.js';
import { bitcoinAttestation } from '../../src/core/ots/attestations.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { parseDetached, serializeDetached, DetachedTimestampFile } from '../../src/core/ots/codec.js';
import { append, SHA256 } from '../../src/core/ots/ops.js';
import { Timestamp, bitcoinAttestations } from '../../src/core/ots/timestamp.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { generateSecretKey, type SigningKey } from '../../src/core/nostr/keys.js';
import { Issuer, startCalendars, startDaemon, startRelays, tempDir, testConfig } from '../helpers/harness.js';
import { confirmAll } from '../reliability/audit.js';
import { receiptDoc, timelineDoc, workflowDoc, type Json } from './documents.js';

type Proof = Json & { digest: string; envelope: Json; nostr: Json & { event: Json; relays: Json[]; batch?: Json }; ots?: Json & { proof: string; bitcoin?: Json } };

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const flipHex = (h: string, at = 0): string => h.slice(0, at) + (h[at] === '0' ? '1' : '0') + h.slice(at + 1);

interface Forgery {
  name: string;
  /** The check that must FAIL ('usage' for input that cannot be verified at all). */
  check: CheckName | 'usage';
  make: () => { value: unknown; proof?: unknown };
  opts?: VerifyOptions;
}

describe('forged anchor proofs', () => {
  const key: SigningKey = generateSecretKey();
  const otherKey: SigningKey = generateSecretKey();
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  const docs: { receipt: Json; receipt2: Json; workflow: Json; timeline: Json[]; batch: Json[] } = {
    receipt: receiptDoc(),
    receipt2: receiptDoc(),
    workflow: workflowDoc(12),
    timeline: timelineDoc(5),
    batch: Array.from({ length: 5 }, () => receiptDoc()),
  };
  const proofs: { receipt?: Proof; receipt2?: Proof; workflow?: Proof; timeline?: Proof; batch: Proof[] } = { batch: [] };
  let base: VerifyOptions;
  let fetcher: RelayClientFetcher;

  beforeAll(async () => {
    relays = await startRelays(2);
    headersFile = join(tempDir('headers'), 'headers.json');
    calendars = await startCalendars(1, headersFile);
    // envelope mode on relay 0 only: relay 1 stays empty, for the online check
    const envConfig = testConfig({ relays: [relays[0]!], calendars, headersFile });
    const daemon = await startDaemon(envConfig, undefined, key);
    const issuer = new Issuer(envConfig);
    const keyOf = (d: Json | Json[]): string => (Array.isArray(d) ? (d[0]!.job_id as string) : ((d.receipt_id ?? d.id) as string));
    const all = [docs.receipt, docs.receipt2, docs.workflow, docs.timeline];
    await issuer.enqueueMany(all.map((d) => ({ data: d, key: keyOf(d) })));
    await confirmAll(issuer, all.map(keyOf), calendars, 60_000);
    const exporter = new ProofExporter(issuer.store, { relays: envConfig.nostr.relays, calendars: envConfig.ots.calendars });
    proofs.receipt = (await exporter.export(keyOf(docs.receipt))) as unknown as Proof;
    proofs.receipt2 = (await exporter.export(keyOf(docs.receipt2))) as unknown as Proof;
    proofs.workflow = (await exporter.export(keyOf(docs.workflow))) as unknown as Proof;
    proofs.timeline = (await exporter.export(keyOf(docs.timeline))) as unknown as Proof;
    await daemon.stop();
    await issuer.close();

    const batchConfig = testConfig({ relays: [relays[0]!], overrides: { nostr: { mode: 'batch', batchWindowMs: 500, batchMaxSize: 5 } } });
    const batchDaemon = await startDaemon(batchConfig, undefined, key);
    const batchIssuer = new Issuer(batchConfig);
    await batchIssuer.enqueueMany(docs.batch.map((d) => ({ data: d, key: d.id as string })));
    await confirmAll(batchIssuer, docs.batch.map((d) => d.id as string), [], 60_000);
    const batchExporter = new ProofExporter(batchIssuer.store, { relays: batchConfig.nostr.relays, calendars: [] });
    for (const d of docs.batch) proofs.batch.push((await batchExporter.export(d.id as string)) as unknown as Proof);
    await batchDaemon.stop();
    await batchIssuer.close();

    fetcher = new RelayClientFetcher(5000);
    // the auditor names the relays it asks (--relay): the daemon's, and the empty one
    base = { headerSource: new HeadersFileSource(headersFile), network: 'regtest', expectedPubkeys: [key.publicKey], relays: relays.map((r) => r.url) };
  }, 180_000);

  afterAll(async () => {
    fetcher?.close();
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  const attached = (doc: Json | Json[], proof: unknown): Json => (Array.isArray(doc) ? { entries: doc, anchor_proof: proof } : { ...doc, anchor_proof: proof });

  it('the genuine proofs pass, confirmed, with every check that applies', async () => {
    const cases: Array<[string, Json | Json[], Proof]> = [
      ['receipt', docs.receipt, proofs.receipt!],
      ['workflow', docs.workflow, proofs.workflow!],
      ['timeline', docs.timeline, proofs.timeline!],
      ...proofs.batch.map((p, i): [string, Json, Proof] => [`batch[${i}]`, docs.batch[i]!, p]),
    ];
    for (const [name, doc, proof] of cases) {
      const report = await verifyAnchor({ value: attached(doc, proof) }, { ...base, relayFetcher: fetcher });
      expect(report.checks.filter((c) => c.status === 'FAIL'), name).toEqual([]);
      expect(report.verdict, `${name}: ${report.reason}`).toBe('PASS');
      expect(report.pending, name).toBe(false);
      expect(report.checks.find((c) => c.name === 'signer')?.status, name).toBe('PASS');
      expect(report.checks.find((c) => c.name === 'online')?.status, name).toBe('PASS');
      if (!name.startsWith('batch')) expect(report.checks.find((c) => c.name === 'bitcoin')?.status, name).toBe('PASS');
    }
  });

  const forgeries: Forgery[] = [
    // input
    { name: 'an unknown proof version', check: 'usage', make: () => ({ value: attached(docs.receipt, { ...proofs.receipt!, version: 'aer1-anchor-proof-v9' }) }) },
    { name: 'no proof at all', check: 'usage', make: () => ({ value: docs.receipt }) },
    { name: 'a digest that is not hex', check: 'input', make: () => ({ value: attached(docs.receipt, { ...proofs.receipt!, digest: 'zz'.repeat(32) }) }) },
    { name: 'an event whose tags are not strings', check: 'input', make: () => { const p = clone(proofs.receipt!); (p.nostr.event as Json).tags = [[1, 2]]; return { value: attached(docs.receipt, p) }; } },
    { name: 'a document that is not AER-1', check: 'input', make: () => ({ value: { hello: 'world', anchor_proof: proofs.receipt } }) },
    // recompute
    { name: 'receipt bytes altered (declared hash kept)', check: 'recompute', make: () => ({ value: attached({ ...docs.receipt, canonical_bytes: Buffer.from('{"n":"forged"}').toString('base64') }, proofs.receipt) }) },
    { name: 'a workflow step reordered', check: 'recompute', make: () => { const w = clone(docs.workflow); const s = w.steps as Json[]; [s[0], s[1]] = [{ ...s[1]!, seq: 1 }, { ...s[0]!, seq: 2 }]; return { value: attached(w, proofs.workflow) }; } },
    { name: 'a timeline entry altered', check: 'recompute', make: () => { const t = clone(docs.timeline); t[2]!.tool = 'forged'; return { value: attached(t, proofs.timeline) }; } },
    // envelope
    { name: 'another receipt under this proof', check: 'envelope', make: () => ({ value: attached(docs.receipt2, proofs.receipt) }) },
    { name: 'a truncated workflow (root recomputed to match)', check: 'envelope', make: () => {
      const ids = (docs.workflow.steps as Json[]).slice(0, 11).map((s) => s.receipt_id as string);
      const w = workflowDoc(11, { receiptId: docs.workflow.receipt_id as string, workflowId: docs.workflow.workflow_id as string, stepId: (i) => ids[i]! });
      return { value: attached({ ...w, output_hash: docs.workflow.output_hash }, proofs.workflow) };
    } },
    { name: 'a truncated timeline', check: 'envelope', make: () => { const t = clone(docs.timeline).slice(0, 4); t[3]!.close = true; return { value: attached(t, proofs.timeline) }; } },
    // digest
    { name: 'the digest replaced', check: 'digest', make: () => ({ value: attached(docs.receipt, { ...proofs.receipt!, digest: flipHex(proofs.receipt!.digest, 10) }) }) },
    { name: 'the envelope edited (digest kept)', check: 'digest', make: () => { const p = clone(proofs.receipt!); p.envelope.anchored_at = '2020-01-01T00:00:00Z'; return { value: attached(docs.receipt, p) }; } },
    // nostr-event
    { name: 'the event signature flipped', check: 'nostr-event', make: () => { const p = clone(proofs.receipt!); p.nostr.event.sig = flipHex(p.nostr.event.sig as string, 5); return { value: attached(docs.receipt, p) }; } },
    { name: 'the event id replaced', check: 'nostr-event', make: () => { const p = clone(proofs.receipt!); p.nostr.event.id = flipHex(p.nostr.event.id as string, 7); return { value: attached(docs.receipt, p) }; } },
    { name: 'the event created_at moved', check: 'nostr-event', make: () => { const p = clone(proofs.receipt!); p.nostr.event.created_at = (p.nostr.event.created_at as number) + 1; return { value: attached(docs.receipt, p) }; } },
    { name: 'the event content swapped (id and sig kept)', check: 'nostr-event', make: () => { const p = clone(proofs.receipt!); p.nostr.event.content = proofs.receipt2!.nostr.event.content; return { value: attached(docs.receipt, p) }; } },
    // nostr-content
    { name: 'a genuine event of another subject', check: 'nostr-content', make: () => { const p = clone(proofs.receipt!); p.nostr.event = clone(proofs.receipt2!.nostr.event); return { value: attached(docs.receipt, p) }; } },
    { name: 'an event signed by another key over other content', check: 'nostr-content', make: () => { const p = clone(proofs.receipt!); p.nostr.event = otherKey.sign({ kind: 3099, created_at: 1_800_000_000, tags: [['x', p.digest]], content: '{"forged":true}' }) as unknown as Json; return { value: attached(docs.receipt, p) }; } },
    // signer
    { name: 'the right envelope re-signed by another key', check: 'signer', make: () => { const p = clone(proofs.receipt!); const ev = p.nostr.event; p.nostr.event = otherKey.sign({ kind: ev.kind as number, created_at: ev.created_at as number, tags: ev.tags as string[][], content: ev.content as string }) as unknown as Json; return { value: attached(docs.receipt, p) }; } },
    // batch-path
    { name: 'a batch path step flipped', check: 'batch-path', make: () => { const p = clone(proofs.batch[1]!); const path = p.nostr.batch!.path as string[]; path[0] = flipHex(path[0]!, 3); return { value: attached(docs.batch[1]!, p) }; } },
    { name: 'a batch index moved', check: 'batch-path', make: () => { const p = clone(proofs.batch[1]!); p.nostr.batch!.index = 2; return { value: attached(docs.batch[1]!, p) }; } },
    { name: 'a batch size changed', check: 'batch-path', make: () => { const p = clone(proofs.batch[1]!); p.nostr.batch!.size = 6; return { value: attached(docs.batch[1]!, p) }; } },
    { name: 'a batch path step dropped', check: 'batch-path', make: () => { const p = clone(proofs.batch[1]!); (p.nostr.batch!.path as string[]).pop(); return { value: attached(docs.batch[1]!, p) }; } },
    // ots-digest
    { name: 'the .ots of another subject', check: 'ots-digest', make: () => { const p = clone(proofs.receipt!); p.ots!.proof = proofs.receipt2!.ots!.proof; return { value: attached(docs.receipt, p) }; } },
    { name: 'an .ots cut short', check: 'ots-digest', make: () => { const p = clone(proofs.receipt!); const b = decodeBase64Strict(p.ots!.proof, 'ots'); p.ots!.proof = b.subarray(0, b.length - 3).toString('base64'); return { value: attached(docs.receipt, p) }; } },
    { name: 'an .ots with trailing bytes', check: 'ots-digest', make: () => { const p = clone(proofs.receipt!); const b = decodeBase64Strict(p.ots!.proof, 'ots'); p.ots!.proof = Buffer.concat([b, Buffer.from([0])]).toString('base64'); return { value: attached(docs.receipt, p) }; } },
    { name: 'an .ots that is not base64', check: 'ots-digest', make: () => { const p = clone(proofs.receipt!); p.ots!.proof = '***'; return { value: attached(docs.receipt, p) }; } },
    { name: 'ots claimed confirmed with no .ots', check: 'ots-digest', make: () => { const p = clone(proofs.receipt!); (p.ots as Json).proof = null; return { value: attached(docs.receipt, p) }; } },
    // bitcoin
    { name: 'a Bitcoin attestation forged on an unrelated message', check: 'bitcoin', make: () => {
      const p = clone(proofs.receipt!);
      const file = parseDetached(decodeBase64Strict(p.ots!.proof, 'ots'));
      const height = bitcoinAttestations(file.timestamp)[0]!.height;
      const ts = new Timestamp(file.digest);
      ts.addOp(append(randomBytes(16))).addOp(SHA256).addAttestation(bitcoinAttestation(height));
      p.ots!.proof = serializeDetached(new DetachedTimestampFile('sha256', ts)).toString('base64');
      return { value: attached(docs.receipt, p) };
    } },
    { name: 'the claimed block hash changed', check: 'bitcoin', make: () => { const p = clone(proofs.receipt!); p.ots!.bitcoin!.block_hash = flipHex(p.ots!.bitcoin!.block_hash as string, 20); return { value: attached(docs.receipt, p) }; } },
    { name: 'the claimed block height changed', check: 'bitcoin', make: () => { const p = clone(proofs.receipt!); p.ots!.bitcoin!.height = (p.ots!.bitcoin!.height as number) + 1; return { value: attached(docs.receipt, p) }; } },
    // online
    { name: 'the event re-signed by the daemon key with another created_at (on no relay)', check: 'online', make: () => { const p = clone(proofs.receipt!); const ev = p.nostr.event; p.nostr.event = key.sign({ kind: ev.kind as number, created_at: (ev.created_at as number) + 60, tags: ev.tags as string[][], content: ev.content as string }) as unknown as Json; return { value: attached(docs.receipt, p) }; } },
    { name: 'the proof naming a relay that never saw the event (asked with --use-proof-relays)', check: 'online', opts: { relays: [], useProofRelays: true }, make: () => { const p = clone(proofs.receipt!); p.nostr.relays = [{ url: relays[1]!.url, status: 'accepted', message: '', at: '' }]; return { value: attached(docs.receipt, p) }; } },
  ];

  it(`refuses ${forgeries.length} forgeries, each at the check it targets`, { timeout: 120_000 }, async () => {
    const kinds = new Set<string>();
    for (const f of forgeries) {
      const input = f.make();
      if (f.check === 'usage') {
        await expect(verifyAnchor(input, base), f.name).rejects.toBeInstanceOf(UsageError);
        kinds.add('usage');
        continue;
      }
      const report: VerifyReport = await verifyAnchor(input, { ...base, relayFetcher: fetcher, ...f.opts });
      const failed = report.checks.filter((c) => c.status === 'FAIL').map((c) => c.name);
      expect(report.verdict, `${f.name}: ${report.reason}`).toBe('FAIL');
      expect(failed, `${f.name}: ${report.reason}`).toContain(f.check);
      kinds.add(f.check);
    }
    // every check the verifier makes that a forgery can reach (ots-attestations fails only on an
    // .ots without attestations, which the codec cannot read: such files fail at ots-digest)
    expect([...kinds].sort()).toEqual(['batch-path', 'bitcoin', 'digest', 'envelope', 'input', 'nostr-content', 'nostr-event', 'online', 'ots-digest', 'recompute', 'signer', 'usage']);
    console.log(`forged-proofs: ${forgeries.length} forgeries across ${kinds.size} checks, all FAIL`);
  });

  it('never passes a forged proof when only the proof is given (no document)', async () => {
    const p = clone(proofs.receipt!);
    p.envelope.output_sha256 = sha256Hex('forged');
    p.digest = sha256Hex(canonicalJson(p.envelope));
    const report = await verifyAnchor({ value: p }, { ...base, relayFetcher: fetcher });
    expect(report.verdict, report.reason).toBe('FAIL');
  });
});
