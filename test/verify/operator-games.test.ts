/**
 * Issue 24, items 1-3: the operator holding the trusted key tries to steer discovery and
 * audit into passing a cut workflow. On real dev relays, signed with the operator's key:
 * the genuine anchor of a 6-step workflow (T0), a re-anchor of the workflow cut to 5 steps
 * (same receipt_id, merkle_root recomputed, the daemon's kind and tags, T0+60), then
 * floods of events carrying the key's `i` tag. The built bins run as child processes.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { envelopeEvent, DEFAULT_EVENT_KIND, type SignedEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { loadFixture, type WorkflowExample } from '../fixtures/index.js';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';
import { attach, batchModeProofs, envelopeModeProof, subjectOf } from './build-proofs.js';

const verifyBin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
const anchorBin = join(REPO_ROOT, 'bin/aer1-anchor.js');

interface Run { code: number | null; stdout: string; stderr: string }

/** A built bin as a child process (never spawnSync: the dev relays answer from this process). */
function cli(bin: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr });
    });
  });
}

const fixture = loadFixture<WorkflowExample>('workflow-receipt-example');
const operator = generateSecretKey();
const T0 = Math.floor(Date.now() / 1000) - 3600;
const iso = (t: number): string => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

/** The genuine 6-step workflow: the fixture's five steps and a sixth. */
const six: WorkflowExample = (() => {
  const steps = [...fixture.steps, { ...fixture.steps[4]!, seq: 6, receipt_id: 'f0000000-0000-4000-8000-000000000006' }];
  return { ...fixture, receipt_id: `wf-${randomUUID()}`, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)) };
})();
/** The operator's cut: the last step dropped, merkle_root recomputed, same receipt_id. */
const five: WorkflowExample = (() => {
  const steps = six.steps.slice(0, 5);
  return { ...six, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)) };
})();

/** An envelope-mode anchor as the daemon signs it (kind 3099, alt, x, i tags), dated `at`. */
function anchor(doc: WorkflowExample, at: number): SignedEvent {
  const s = subjectOf(doc, iso(at));
  return envelopeEvent({ canonical: s.canonical, digestHex: s.digestHex, createdAt: at }, operator);
}
const genuine = anchor(six, T0);
const reanchor = anchor(five, T0 + 60);
/** Events with the key's `i` tag and any content, by the operator. */
const junk = (n: number, from: number): SignedEvent[] => Array.from({ length: n }, (_, i) => operator.sign({
  kind: DEFAULT_EVENT_KIND, created_at: from + i, tags: [['i', `aer1:${six.receipt_id}`]], content: `junk ${i}`,
}));
/** The re-anchor's content and tags, re-dated: the same anchor to every reader, another event id. */
const redated = (n: number, from: number): SignedEvent[] => Array.from({ length: n }, (_, i) => operator.sign({
  kind: reanchor.kind, created_at: from + i, tags: reanchor.tags, content: reanchor.content,
}));

async function publish(relay: DevRelay, events: readonly SignedEvent[]): Promise<void> {
  const c = new RelayClient(relay.url, { ping: false });
  try {
    for (const ev of events) expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
  } finally {
    c.close();
  }
}

describe('the operator cannot steer discovery and audit (issue 24, 1-3, dev relays)', () => {
  const dir = tempDir('aer1-operator');
  let flooded: DevRelay; // genuine, re-anchor, 99 junk
  let copies: DevRelay; // genuine, re-anchor, 100 re-dated copies of it
  let junkOnly: DevRelay; // genuine, 100 junk
  let pair: DevRelay; // genuine, re-anchor
  let twenty: DevRelay; // genuine, re-anchor, 19 junk
  const cutFile = join(dir, 'cut.json');
  const key = (): string[] => ['--expected-pubkey', operator.publicKey];

  beforeAll(async () => {
    [flooded, copies, junkOnly, pair, twenty] = await Promise.all([startDevRelay(), startDevRelay(), startDevRelay(), startDevRelay(), startDevRelay()]);
    await Promise.all([
      publish(flooded, [genuine, reanchor, ...junk(99, T0 + 120)]),
      publish(copies, [genuine, reanchor, ...redated(100, T0 + 120)]),
      publish(junkOnly, [genuine, ...junk(100, T0 + 120)]),
      publish(pair, [genuine, reanchor]),
      publish(twenty, [genuine, reanchor, ...junk(19, T0 + 120)]),
    ]);
    writeFileSync(cutFile, JSON.stringify(five));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([flooded, copies, junkOnly, pair, twenty].map((r) => r?.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  const equivocation = new RegExp(`^VERDICT: FAIL: equivocation: .*${genuine.id}.*${reanchor.id}`, 'm');

  it('1. a flood of the key\'s i tag after the re-anchor: every page read, the cut workflow FAILs naming the equivocation', async () => {
    const r = await cli(verifyBin, [cutFile, '--online', '--relay', flooded.url, ...key(), '--require-anchored', '--require-confirmed']);
    expect(r.stdout).not.toContain('limit reached');
    expect(r.stdout).toContain(`relay ${flooded.url}: 101 events, complete`);
    expect(r.stdout).toMatch(equivocation);
    expect(r.stdout).toContain(`created_at ${T0} (${iso(T0)}, the signer's word)`);
    expect(r.stdout).toContain(`created_at ${T0 + 60} (${iso(T0 + 60)}, the signer's word)`);
    expect(r.code).toBe(1);
  });

  it('1. 100 re-dated copies of the re-anchor instead of junk: still FAIL (equivocation)', async () => {
    const r = await cli(verifyBin, [cutFile, '--online', '--relay', copies.url, ...key(), '--require-anchored', '--require-confirmed']);
    // the re-anchor and its copies are one anchor, named by whichever copy was read
    expect(r.stdout).toMatch(new RegExp(`^VERDICT: FAIL: equivocation: .*event ${genuine.id} .*step_count 6 vs 5; against the document: .*truncated: anchored 6 steps, receipt has 5$`, 'm'));
    expect(r.code).toBe(1);
  });

  it('1. the genuine anchor under 100 junk events is found: the cut workflow FAILs as truncated', async () => {
    const r = await cli(verifyBin, [cutFile, '--online', '--relay', junkOnly.url, ...key()]);
    expect(r.stdout).toMatch(/^VERDICT: FAIL: anchor event [0-9a-f]{64}: envelope: truncated: anchored 6 steps, receipt has 5$/m);
    expect(r.code).toBe(1);
  });

  it('1. an answer cut by the bound is incomplete: never "no anchor found", never PASS (exit 3)', async () => {
    const r = await cli(verifyBin, [cutFile, '--online', '--relay', junkOnly.url, ...key(), '--max-events', '50']);
    expect(r.stdout).toContain(`relay ${junkOnly.url}: 50 events (incomplete: the bound of 50 events was reached)`);
    expect(r.stdout).toMatch(/^VERDICT: INCONCLUSIVE: /m);
    expect(r.stdout).not.toMatch(/VERDICT: (PASS|SKIP)/);
    expect(r.code).toBe(3);
  });

  it('1. with a proof and --online, the relays\' other anchors of the key are read too: a proof of either root FAILs naming the equivocation', async () => {
    const cutProof = envelopeModeProof(five, { key: operator, anchoredAt: iso(T0 + 60), noOts: true }).proof;
    const batched = batchModeProofs([five], { key: operator, anchoredAt: iso(T0 + 60), noOts: true }).proofs[0]!;
    // the proof carries the very event on the relays (a re-signed one has the same id, another signature)
    const built = envelopeModeProof(six, { key: operator, anchoredAt: iso(T0), noOts: true }).proof;
    const genuineProof = { ...built, nostr: { ...(built.nostr as object), event: genuine } };
    for (const [name, doc] of [['cut-envelope', attach(five, cutProof)], ['cut-batch', attach(five, batched)], ['genuine', attach(six, genuineProof)]] as const) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify(doc));
      const r = await cli(verifyBin, [file, '--online', '--relay', pair.url, ...key()]);
      expect(r.stdout, name).toMatch(/^ {2}FAIL {2}equivocation +equivocation: the trusted signer anchored workflow-close ".*" with two different roots: .* differ in merkle_root /m);
      expect(r.code, name).toBe(1);
    }
    // one anchor of the key on the relay, the proof's own: nothing to contradict it
    const file = join(dir, 'genuine-alone.json');
    writeFileSync(file, JSON.stringify(attach(six, genuineProof)));
    const ok = await cli(verifyBin, [file, '--online', '--relay', junkOnly.url, ...key()]);
    expect(ok.stdout).toMatch(/^ {2}PASS {2}equivocation +0 other anchors of workflow-close ".*" by the trusted signer on .*, every answer read to its end$/m);
    expect(ok.code, ok.stdout).toBe(0);
    // the same with a bound the relay's answer exceeds: nothing established (exit 3)
    const cutShort = await cli(verifyBin, [file, '--online', '--relay', junkOnly.url, ...key(), '--max-events', '10']);
    expect(cutShort.stdout).toMatch(/^VERDICT: INCONCLUSIVE: nothing established online: /m);
    expect(cutShort.code).toBe(3);
  });

  it('2. audit --since between the anchors still looks the folder\'s key up in full: equivocated, exit 1', async () => {
    const folder = join(dir, 'since');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cut.json'), JSON.stringify(five));
    for (const since of [[], ['--since', String(T0 + 30)]]) {
      const r = await cli(anchorBin, ['audit', '--relay', pair.url, ...key(), ...since, '--json', folder]);
      const out = JSON.parse(r.stdout) as { rows: Array<{ outcome: string; key: string; anchors: string[]; detail: string }> };
      expect(out.rows, since.join(' ')).toHaveLength(1);
      expect(out.rows[0]).toMatchObject({ outcome: 'equivocated', key: six.receipt_id });
      expect(out.rows[0]!.anchors.sort()).toEqual([genuine.id, reanchor.id].sort());
      expect(out.rows[0]!.detail).toContain('truncated: anchored 6 steps, receipt has 5');
      expect(r.code).toBe(1);
    }
  });

  it('audit: a key whose answer the bound cuts short is incomplete (exit 3), never matching; read in full it matches (exit 0)', async () => {
    const folder = join(dir, 'bounded');
    mkdirSync(folder);
    writeFileSync(join(folder, 'six.json'), JSON.stringify(six));
    const cut = await cli(anchorBin, ['audit', '--relay', junkOnly.url, ...key(), '--max-events', '10', '--json', folder]);
    const out = JSON.parse(cut.stdout) as { rows: Array<{ outcome: string; detail: string }>; complete: boolean; exit: number };
    expect(out.rows.find((r) => r.outcome !== 'withheld')).toMatchObject({ outcome: 'incomplete', detail: expect.stringContaining('the bound of 10 events was reached') });
    expect(out.complete).toBe(false);
    expect(cut.code).toBe(3);
    const full = await cli(anchorBin, ['audit', '--relay', junkOnly.url, ...key(), folder]);
    expect(full.stdout).toMatch(/^matching +workflow-close +.* six\.json +matches its anchor/m);
    expect(full.code).toBe(0);
  });

  it('3. audit reads every event of the key, past 20: the re-anchor and 19 junk events do not hide the genuine anchor', async () => {
    const folder = join(dir, 'twenty');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cut.json'), JSON.stringify(five));
    const r = await cli(anchorBin, ['audit', '--relay', twenty.url, ...key(), folder]);
    expect(r.stdout).toMatch(new RegExp(`^equivocated +workflow-close +.*cut\\.json +equivocation: .*${genuine.id}`, 'm'));
    expect(r.stdout).not.toMatch(/^matching /m);
    expect(r.code).toBe(1);
  });
});
