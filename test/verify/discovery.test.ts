/**
 * The auditor without the proof (issue 13, items 4 and 5): subjects anchored by the real
 * daemon on three real dev relays, then found by their indexed `i` tag with
 * `aer1-verify-anchor --online --relay ×3 --expected-pubkey`, and a folder held against
 * every anchor by `aer1-anchor audit`. The built bins run as child processes (async: the
 * relays live in this process), and the time each takes to exit is measured.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { envelopeEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey, type SigningKey } from '../../src/core/nostr/keys.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { loadFixture, type WorkflowExample } from '../fixtures/index.js';
import { Issuer, REPO_ROOT, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { receiptNumber, subjectOf, type Json } from './build-proofs.js';

const verifyBin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
const anchorBin = join(REPO_ROOT, 'bin/aer1-anchor.js');

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** From spawn to exit. */
  ms: number;
}

/** A built bin as a child process; never spawnSync: the dev relays answer from this process. */
function cli(bin: string, args: string[]): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const workflowFixture = loadFixture<WorkflowExample>('workflow-receipt-example');

/** A forger's cut: the last step removed and merkle_root recomputed, so the document is internally consistent. */
function cut(doc: WorkflowExample): WorkflowExample {
  const steps = doc.steps.slice(0, -1);
  return { ...doc, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)) };
}

/** Three dev relays and the real daemon (its own Redis prefix) that anchored `docs` in `mode`, every relay accepting. */
interface AnchoredStack {
  relays: DevRelay[];
  exporter: ProofExporter;
  close(): Promise<void>;
}

async function anchoredByDaemon(mode: 'envelope' | 'batch', key: SigningKey, docs: ReadonlyArray<{ key: string; doc: unknown }>): Promise<AnchoredStack> {
  const relays = await startRelays(3);
  const config = testConfig({ relays, overrides: { nostr: { mode, batchWindowMs: 300 } } });
  const daemon = await startDaemon(config, undefined, key);
  const issuer = new Issuer(config);
  const exporter = new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars });
  await issuer.enqueueMany(docs.map((a) => ({ data: a.doc, key: a.key })));
  await waitFor(`every subject accepted by all three relays (${mode} mode)`, async () => {
    for (const a of docs) if ((await exporter.export(a.key))?.nostr?.status !== 'confirmed') return false;
    return true;
  }, 60_000, 200);
  return {
    relays,
    exporter,
    close: async () => {
      await daemon.stop();
      await issuer.close();
      await Promise.all(relays.map((r) => r.close()));
    },
  };
}

describe('anchor discovery and audit against three dev relays, anchored by the real daemon', () => {
  let stack: AnchoredStack | undefined;
  let relays: DevRelay[] = [];
  let exporter: ProofExporter;
  const key = generateSecretKey();
  const forger = generateSecretKey();
  const dir = tempDir('aer1-discovery');
  const workflow: WorkflowExample = { ...workflowFixture, receipt_id: `wf-${randomUUID()}` };
  const matching = { ...receiptNumber(Math.floor(Math.random() * 1e9)), id: `rc-match-${randomUUID()}` };
  const withheld = { ...receiptNumber(Math.floor(Math.random() * 1e9)), id: `rc-withheld-${randomUUID()}` };
  const never = { ...receiptNumber(Math.floor(Math.random() * 1e9)), id: `rc-never-${randomUUID()}` };
  const anchored: Array<{ key: string; doc: unknown }> = [
    { key: workflow.receipt_id, doc: workflow },
    { key: matching.id, doc: matching },
    { key: withheld.id, doc: withheld },
  ];
  const relayArgs = (): string[] => relays.flatMap((r) => ['--relay', r.url]);
  const write = (name: string, value: unknown): string => {
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify(value, null, 2));
    return file;
  };

  beforeAll(async () => {
    stack = await anchoredByDaemon('envelope', key, anchored);
    ({ relays, exporter } = stack);
    // A forger's anchor of the cut workflow, same i tag, signed by another key, on every relay.
    const forged = subjectOf(cut(workflow));
    const event = envelopeEvent({ canonical: forged.canonical, digestHex: forged.digestHex }, forger);
    expect(event.tags).toContainEqual(['i', `aer1:${workflow.receipt_id}`]);
    for (const r of relays) {
      const c = new RelayClient(r.url, { ping: false });
      try {
        expect((await c.publish(event, { timeoutMs: 5000 })).status).toBe('accepted');
      } finally {
        c.close();
      }
    }
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
  });

  it('finds the anchor of a cut workflow whose proof was withheld, and fails it naming the truncation', { timeout: 120_000 }, async () => {
    const file = write('cut-workflow.json', cut(workflow));
    const r = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`discovery: workflow close "${workflow.receipt_id}" (4 steps), signed by ${key.npub}: asked 3 relays (3 answered), 1 anchor found`);
    expect(r.stdout).toContain(`on ${relays.map((x) => x.url).join(', ')}`);
    expect(r.stdout).toMatch(/FAIL  envelope +truncated: anchored 5 steps, receipt has 4/);
    expect(r.stdout).toMatch(/^VERDICT: FAIL: anchor event [0-9a-f]{64}: envelope: truncated: anchored 5 steps, receipt has 4$/m);
    // the forger's event carries the same i tag but another key: never asked for, never counted
    expect(r.stdout).not.toContain(forger.publicKey);
    // prompt exit: the nostr-tools subscription timer used to hold the process ~70 s
    expect(r.ms).toBeLessThan(10_000);
  });

  it('passes the untouched workflow by discovery, the event read back from every relay; --json says the same', async () => {
    const file = write('workflow.json', workflow);
    const r = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.npub]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^VERDICT: PASS: the anchor found on the relays matches the document: /m);
    expect(r.stdout).toMatch(/PASS  online +identical event served by /);
    expect(r.stdout).toMatch(/PASS  input +workflow close .*no proof: checked against anchor event [0-9a-f]{64} found on /);
    const j = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey, '--json']);
    expect(j.code).toBe(0);
    const out = JSON.parse(j.stdout) as Json & { anchors: Json[]; relays: Json[] };
    expect(out).toMatchObject({ mode: 'discovery', verdict: 'PASS', subject: { kind: 'workflow-close', key: workflow.receipt_id } });
    expect(out.anchors).toHaveLength(1);
    expect(out.anchors[0]).toMatchObject({ pubkey: key.publicKey, verdict: 'PASS', relays: relays.map((x) => x.url) });
    expect(out.relays.map((x) => x.error)).toEqual([null, null, null]);
  });

  it('finds nothing for a subject never anchored: INCONCLUSIVE (exit 3, nothing established), FAIL under --require-anchored', async () => {
    const file = write('never.json', never);
    const none = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey]);
    expect(none.code).toBe(3);
    expect(none.stdout).toContain(`VERDICT: INCONCLUSIVE: no anchor found on ${relays.map((x) => x.url).join(', ')} for receipt "${never.id}" by ${key.npub}: nothing was established (--require-anchored makes this a FAIL)`);
    const strict = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey, '--require-anchored']);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain(`VERDICT: FAIL: not anchored (--require-anchored): no anchor found on ${relays.map((x) => x.url).join(', ')} for receipt "${never.id}"`);
  });

  it('exits promptly after --online reads back the event of an attached proof (it used to linger ~70 s)', { timeout: 120_000 }, async () => {
    const file = write('matching-with-proof.json', { ...matching, anchor_proof: await exporter.export(matching.id) });
    const r = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey]);
    expect(r.stdout).toMatch(/PASS  online +identical event served by /);
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(10_000);
  });

  it('reports discovery files beside the others in a multi-file run, counting the unanchored ones', async () => {
    const files = [write('multi-never.json', never), write('multi-workflow.json', workflow), write('multi-cut.json', cut(workflow))];
    const r = await cli(verifyBin, [...files, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey]);
    expect(r.code).toBe(1);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 3 files: 1 PASS, 1 FAIL, 1 inconclusive, 0 unreadable');
    const j = await cli(verifyBin, [...files, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey, '--json']);
    const out = JSON.parse(j.stdout) as { results: Json[]; summary: Json };
    expect(out.results.map((x) => x.verdict)).toEqual(['INCONCLUSIVE', 'PASS', 'FAIL']);
    expect(out.summary).toEqual({ files: 3, pass: 1, pending: 0, fail: 1, inconclusive: 1, unreadable: 0 });
  });

  it('trusts only the caller\'s keys: an unknown signer finds nothing, the forger\'s own key finds only the forgery', async () => {
    const file = write('cut-workflow-2.json', cut(workflow));
    const stranger = generateSecretKey();
    const none = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', stranger.publicKey, '--require-anchored']);
    expect(none.code).toBe(1);
    expect(none.stdout).toMatch(/VERDICT: FAIL: not anchored \(--require-anchored\): no anchor found on .* by npub1/);
    // Whoever trusts the forger gets the forger's word, and the output names that signer.
    const forged = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', forger.publicKey]);
    expect(forged.stdout).toContain(`signed by ${forger.npub}`);
    expect(forged.stdout).not.toContain(key.npub);
  });

  it('refuses discovery without --expected-pubkey (exit 2, one line)', async () => {
    const file = write('workflow-nokey.json', workflow);
    const r = await cli(verifyBin, [file, '--online', ...relayArgs()]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`aer1-verify-anchor: ${file}: finding an anchor without its proof needs --expected-pubkey: only a signer you trust can anchor a document\n`);
  });

  it('audit: one subject of each outcome, exact counts in --json and in the table; exit 1', async () => {
    const folder = join(dir, 'audit');
    mkdirSync(folder);
    const proof = await exporter.export(matching.id);
    writeFileSync(join(folder, 'a-matching.json'), JSON.stringify({ ...matching, anchor_proof: proof })); // an attached proof is fine
    writeFileSync(join(folder, 'b-cut-workflow.json'), JSON.stringify(cut(workflow)));
    writeFileSync(join(folder, 'c-never.json'), JSON.stringify(never));

    const j = await cli(anchorBin, ['audit', ...relayArgs(), '--expected-pubkey', key.publicKey, '--json', folder]);
    expect(j.stderr).toBe('');
    expect(j.code).toBe(1);
    const out = JSON.parse(j.stdout) as { counts: Json; rows: Array<Json>; anchor_events: number; batch_events: number; complete: boolean; unreadable: unknown[] };
    expect(out.counts).toEqual({ matching: 1, altered: 0, truncated: 1, equivocated: 0, 'not-anchored': 1, withheld: 1, incomplete: 0 });
    expect(out.anchor_events).toBe(3);
    expect(out.batch_events).toBe(0);
    expect(out.complete).toBe(true);
    expect(out.unreadable).toEqual([]);
    const row = (outcome: string): Json => out.rows.find((x) => x.outcome === outcome)!;
    expect(row('matching')).toMatchObject({ key: matching.id, file: join(folder, 'a-matching.json') });
    expect(row('truncated')).toMatchObject({ key: workflow.receipt_id, detail: expect.stringContaining('truncated: anchored 5 steps, receipt has 4') });
    expect(row('not-anchored')).toMatchObject({ key: never.id, file: join(folder, 'c-never.json') });
    expect(row('withheld')).toMatchObject({ key: withheld.id, file: null, kind: 'receipt' });

    const t = await cli(anchorBin, ['audit', ...relayArgs(), '--expected-pubkey', key.npub, folder]);
    expect(t.code).toBe(1);
    const lines = t.stdout.trimEnd().split('\n');
    const rows = lines.filter((l) => /^(matching|altered|truncated|not-anchored|withheld) /.test(l));
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(['matching', 'truncated', 'not-anchored', 'withheld']);
    for (const r of relays) expect(t.stdout).toContain(`relay ${r.url}: 3 events listed`);
    expect(lines.at(-1)).toBe('SUMMARY: 4 subjects: 1 matching, 0 altered, 1 truncated, 0 equivocated, 1 not anchored, 1 withheld, 0 incomplete; 0 unreadable');
    expect(rows[2]).toMatch(/^not-anchored +receipt +"rc-never-[0-9a-f-]+…?" +c-never\.json +no anchor by the signer on /);
    expect(t.ms).toBeLessThan(10_000);
  });

  it('audit exits 0 when every subject matches', async () => {
    const folder = join(dir, 'audit-ok');
    mkdirSync(folder);
    writeFileSync(join(folder, 'workflow.json'), JSON.stringify(workflow));
    writeFileSync(join(folder, 'matching.json'), JSON.stringify(matching));
    writeFileSync(join(folder, 'withheld.json'), JSON.stringify(withheld));
    const r = await cli(anchorBin, ['audit', ...relayArgs(), '--expected-pubkey', key.publicKey, folder]);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 3 subjects: 3 matching, 0 altered, 0 truncated, 0 equivocated, 0 not anchored, 0 withheld, 0 incomplete; 0 unreadable');
    expect(r.code).toBe(0);
  });

  it('audit refuses a missing --expected-pubkey or --relay, and a bad --since (exit 2)', async () => {
    const a = await cli(anchorBin, ['audit', ...relayArgs(), dir]);
    expect(a.code).toBe(2);
    expect(a.stderr).toBe('aer1-anchor: audit needs --expected-pubkey KEY (repeatable): only the signers you trust are listed\n');
    const b = await cli(anchorBin, ['audit', '--expected-pubkey', key.publicKey, dir]);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/^aer1-anchor: audit needs --relay URL/);
    const c = await cli(anchorBin, ['audit', ...relayArgs(), '--expected-pubkey', key.publicKey, '--since', 'yesterday', dir]);
    expect(c.code).toBe(2);
    expect(c.stderr).toBe('aer1-anchor: --since "yesterday" is neither RFC 3339 UTC (2026-01-31T12:00:00Z) nor unix seconds\n');
  });
});

describe('discovery and audit when the daemon anchors in batch mode', () => {
  let stack: AnchoredStack | undefined;
  let relays: DevRelay[] = [];
  let exporter: ProofExporter;
  const key = generateSecretKey();
  const dir = tempDir('aer1-discovery-batch');
  const first = { ...receiptNumber(Math.floor(Math.random() * 1e9)), id: `rc-batch-1-${randomUUID()}` };
  const second = { ...receiptNumber(Math.floor(Math.random() * 1e9)), id: `rc-batch-2-${randomUUID()}` };
  const relayArgs = (): string[] => relays.flatMap((r) => ['--relay', r.url]);

  beforeAll(async () => {
    stack = await anchoredByDaemon('batch', key, [first, second].map((d) => ({ key: d.id, doc: d })));
    ({ relays, exporter } = stack);
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
  });

  it('cannot find a batch-anchored subject by key, and says so: INCONCLUSIVE naming the batch events, FAIL under --require-anchored', async () => {
    const file = join(dir, 'first.json');
    writeFileSync(file, JSON.stringify(first));
    const r = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^VERDICT: INCONCLUSIVE: no anchor found on .*; the signer has \d+ batch-mode events? there, which discovery cannot tie to a subject \(only a proof's inclusion path can\): nothing was established/m);
    const strict = await cli(verifyBin, [file, '--online', ...relayArgs(), '--expected-pubkey', key.publicKey, '--require-anchored']);
    expect(strict.code).toBe(1);
  });

  it('audit matches a batch-anchored document by its attached proof; without one it reads as not anchored, naming the batch events', async () => {
    const folder = join(dir, 'audit');
    mkdirSync(folder);
    writeFileSync(join(folder, 'first.json'), JSON.stringify({ ...first, anchor_proof: await exporter.export(first.id) }));
    writeFileSync(join(folder, 'second.json'), JSON.stringify(second));
    const r = await cli(anchorBin, ['audit', ...relayArgs(), '--expected-pubkey', key.publicKey, '--json', folder]);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { counts: Json; rows: Json[]; anchor_events: number; batch_events: number };
    expect(out.anchor_events).toBe(0);
    expect(out.batch_events).toBeGreaterThanOrEqual(1);
    expect(out.counts).toEqual({ matching: 1, altered: 0, truncated: 0, equivocated: 0, 'not-anchored': 1, withheld: 0, incomplete: 0 });
    expect(out.rows.find((x) => x.key === first.id)).toMatchObject({ outcome: 'matching', detail: expect.stringMatching(/^batch mode: matches its attached proof, whose batch event [0-9a-f]{64} is on /) });
    expect(out.rows.find((x) => x.key === second.id)).toMatchObject({ outcome: 'not-anchored', detail: expect.stringContaining('a batch anchor cannot be found by key') });
    expect(r.code).toBe(1);
  });
});
