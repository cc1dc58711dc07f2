/**
 * The built bins (`bin/aer1-verify-anchor.js`, `aer1-anchor verify-anchor`), run as a
 * stranger would: files on disk, exit codes, text and JSON output.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadFixture, type WorkflowExample } from '../fixtures/index.js';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { KEY, OTHER_KEY, attach, batchModeProofs, envelopeModeProof, headersJson, receiptNumber, unrelatedHeader, type Json } from './build-proofs.js';

const repo = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const verifyBin = join(repo, 'bin/aer1-verify-anchor.js');
const anchorBin = join(repo, 'bin/aer1-anchor.js');
const built = join(repo, 'dist/src/cli/commands/verify-anchor.js');
const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'aer1-verify-cli-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return file;
}

function verify(args: string[], bin = verifyBin): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, bin === anchorBin ? [bin, 'verify-anchor', ...args] : [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const workflow = loadFixture<WorkflowExample>('workflow-receipt-example');
const receipt = loadFixture('receipt-minimal');

describe('aer1-verify-anchor (built bin)', () => {
  it('needs a build (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(built), `${built} is missing: run npx tsc -p tsconfig.json first`).toBe(true);
  });

  it('prints a header with its version, one line per check and the verdict; exit 0 on PASS', () => {
    const file = write('workflow.json', attach(workflow, envelopeModeProof(workflow, { nostrStatus: 'pending' }).proof));
    const r = verify([file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`aer1-verify-anchor ${version}`);
    expect(lines[1]).toBe(`file: ${file}`);
    const checkLines = lines.slice(2, -1).filter((l) => !l.startsWith('  WITNESS '));
    // after the checks, per witness: what it established and what it did not
    expect(lines.slice(2, -1).filter((l) => l.startsWith('  WITNESS ')).map((l) => l.split(':')[0])).toEqual([
      '  WITNESS nostr established', '  WITNESS nostr not established', '  WITNESS ots   not established',
    ]);
    expect(checkLines.map((l) => l.trim().split(/\s+/)[1])).toEqual([
      'input', 'recompute', 'envelope', 'digest', 'nostr-event', 'nostr-content', 'signer', 'ots-digest', 'ots-attestations', 'bitcoin', 'log', 'tsa', 'cosignatures', 'online', 'equivocation',
    ]);
    for (const l of checkLines) expect(l).toMatch(/^ {2}(PASS|SKIP) {2}\S+ +\S/);
    expect(lines.at(-1)).toMatch(/^VERDICT: PASS: pending: no witness confirmed yet \(/);
  });

  it('is also aer1-anchor verify-anchor', () => {
    const file = write('receipt.json', attach(receipt, envelopeModeProof(receipt).proof));
    const r = verify([file, '--expected-pubkey', KEY.npub], anchorBin);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/ {2}PASS {2}signer +signed by expected key npub1/);
    expect(r.stdout).toMatch(/^VERDICT: PASS: pending: no witness confirmed yet \(nostr confirmed as claimed, expected signer, relays not checked \(--online --relay URL checks them\); ots pending at 1 calendar\)$/m);
    expect(r.stdout).toMatch(/^ {2}WITNESS nostr established: event [0-9a-f]{64} is signed by npub1\S+ \([0-9a-f]{64}\) and carries this envelope, byte for byte; the signer is a key you trust \(--expected-pubkey\)$/m);
    expect(r.stdout).toMatch(/^ {2}WITNESS nostr not established: which relays hold it \(offline: --online --relay URL asks relays you name\); a time: created_at 2026-01-31T12:00:00Z is the signer's own word, not a time proof$/m);
  });

  it('exits 1 naming truncation with both counts', () => {
    const proof = envelopeModeProof(workflow).proof;
    const steps = workflow.steps.slice(0, 4);
    const truncated = { ...workflow, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)) };
    const r = verify([write('truncated.json', truncated), '--proof', write('truncated.proof.json', proof)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('  FAIL  envelope          truncated: anchored 5 steps, receipt has 4\n');
    expect(r.stdout).toMatch(/^VERDICT: FAIL: envelope: truncated: anchored 5 steps, receipt has 4$/m);
  });

  it('exits 1 for an event from another key when --expected-pubkey is given (hex)', () => {
    const file = write('other-key.json', attach(receipt, envelopeModeProof(receipt, { key: OTHER_KEY }).proof));
    const r = verify([file, '--expected-pubkey', KEY.publicKey]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^VERDICT: FAIL: signer: signed by npub1/m);
  });

  it('checks Bitcoin against --headers FILE on --network regtest, and fails a header with another merkle root', () => {
    const { proof, block } = envelopeModeProof(receipt, { nostrStatus: 'pending', mineAt: 42 });
    const file = write('confirmed.json', attach(receipt, proof));
    const good = write('headers-good.json', headersJson([block!]));
    const bad = write('headers-bad.json', headersJson([{ height: 42, header: unrelatedHeader(42) }]));
    const ok = verify([file, '--headers', good, '--network', 'regtest', '--require-confirmed']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`  PASS  bitcoin +block 42 ${block!.hashDisplay}`));
    const no = verify([file, '--headers', bad, '--network', 'regtest']);
    expect(no.code).toBe(1);
    expect(no.stdout).toMatch(/^VERDICT: FAIL: bitcoin: block 42 \(/m);
  });

  it('exits 1 with --require-confirmed while every witness is pending', () => {
    const file = write('pending.json', attach(receipt, envelopeModeProof(receipt, { nostrStatus: 'pending' }).proof));
    const r = verify([file, '--require-confirmed']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^VERDICT: FAIL: not confirmed \(--require-confirmed\): no witness confirmed yet/m);
  });

  it('prints {verdict, checks, subject, witnesses} with --json', () => {
    const proof = envelopeModeProof(receipt).proof;
    const r = verify([write('json.json', attach(receipt, proof)), '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Json;
    expect(out).toMatchObject({
      tool: 'aer1-verify-anchor',
      version,
      verdict: 'PASS',
      subject: { kind: 'receipt', key: receipt.id, digest: proof.digest, anchored_at: '2026-01-31T12:00:00Z' },
      witnesses: { nostr: { claimed: 'confirmed', verified: 'untrusted', mode: 'envelope', pubkey: KEY.publicKey }, ots: { claimed: 'pending', verified: 'pending', header_source: null } },
    });
    const checks = out.checks as Array<Json>;
    expect(checks).toHaveLength(15);
    expect(checks[0]).toEqual({ name: 'input', status: 'PASS', detail: expect.any(String) });
  });

  describe('several files', () => {
    const docs = [receiptNumber(1), receiptNumber(2), receiptNumber(3)];
    const batch = batchModeProofs(docs);
    const d = join(dir, 'batch');
    mkdirSync(d, { recursive: true });
    docs.forEach((doc, i) => writeFileSync(join(d, `p${i}.json`), JSON.stringify(attach(doc, batch.proofs[i]!))));
    writeFileSync(join(d, 'notes.txt'), 'not a proof');

    it('checks --dir DIR and prints per-file verdicts and a summary line', () => {
      const r = verify(['--dir', d]);
      expect(r.code).toBe(0);
      expect(r.stdout.match(/^VERDICT: PASS: /gm)).toHaveLength(3);
      expect(r.stdout.match(/^file: /gm)).toHaveLength(3);
      expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 3 files: 3 PASS (3 pending), 0 FAIL, 0 inconclusive, 0 unreadable');
    });

    it('reports FAIL and unreadable files per file; exit 2 when one is unreadable, 1 when one fails', () => {
      const tampered = JSON.parse(readFileSync(join(d, 'p1.json'), 'utf8')) as Json;
      const bad = write('bad.json', { ...tampered, anchor_proof: { ...(tampered.anchor_proof as Json), digest: '0'.repeat(64) } });
      const failing = verify([join(d, 'p0.json'), bad]);
      expect(failing.code).toBe(1);
      expect(failing.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 2 files: 1 PASS (1 pending), 1 FAIL, 0 inconclusive, 0 unreadable');

      const missing = join(dir, 'missing.json');
      const r = verify([join(d, 'p0.json'), bad, missing, '--json']);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`aer1-verify-anchor: cannot read ${missing}: ENOENT\n`);
      const out = JSON.parse(r.stdout) as { results: Json[]; summary: Json };
      expect(out.results.map((x) => x.verdict)).toEqual(['PASS', 'FAIL', 'ERROR']);
      expect(out.results[2]).toEqual({ file: missing, verdict: 'ERROR', error: `cannot read ${missing}: ENOENT` });
      expect(out.summary).toEqual({ files: 3, pass: 1, pending: 1, fail: 1, inconclusive: 0, unreadable: 1 });
    });
  });

  describe('exit 2 with one clear line', () => {
    it('for a missing file', () => {
      const missing = join(dir, 'nope.json');
      const r = verify([missing]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`aer1-verify-anchor: cannot read ${missing}: ENOENT\n`);
    });

    it('for non-JSON input', () => {
      const file = write('not-json.json', 'this is { not json');
      const r = verify([file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^aer1-verify-anchor: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not JSON: .+\\n$`));
    });

    it('for a proof of an unknown version', () => {
      const proof = { ...envelopeModeProof(receipt).proof, version: 'aer1-anchor-proof-v2' };
      const file = write('v2.json', proof);
      const r = verify([file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`aer1-verify-anchor: ${file}: the proof: unknown proof version "aer1-anchor-proof-v2" (this tool reads aer1-anchor-proof-v1)\n`);
    });

    it('for a document without any proof, an unknown flag, or two header sources', () => {
      const r = verify([write('no-proof.json', receipt)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/no anchor proof: attach it as the "anchor_proof" member or give it with --proof FILE \(or give --online --relay URL --expected-pubkey KEY to find its anchor on relays\)\n$/);
      expect(r.stderr.split('\n')).toHaveLength(2);
      const flag = verify(['--frobnicate', 'x.json']);
      expect(flag.code).toBe(2);
      expect(flag.stderr).toMatch(/^aer1-verify-anchor: Unknown option '--frobnicate'/);
      const two = verify(['x.json', '--headers', 'a', '--esplora', 'http://127.0.0.1:1']);
      expect(two.code).toBe(2);
      expect(two.stderr).toBe('aer1-verify-anchor: give one header source, not --headers and --esplora\n');
    });
  });
});
