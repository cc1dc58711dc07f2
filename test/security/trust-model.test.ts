/**
 * Issue 13's reproductions, run as an auditor would run the built `aer1-verify-anchor`:
 * a forger's re-signed, backdated envelope on the forger's own relay; a proof that names
 * no witness; a truncated workflow that also reads as a bare proof or carries another
 * subject's proof; JSON nested 5,000 deep in every member the issue found; and `--online`
 * that lingered ~70 s after its verdict. Real @nostr-relay dev relays on loopback.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptIdV0Root } from '../../src/core/aer1/merkle.js';
import { mineHeader, REGTEST_BITS } from '../../src/dev/calendar/block-header.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { SigningKey } from '../../src/core/nostr/keys.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import type { SignedEvent } from '../../src/core/nostr/events.js';
import { REPO_ROOT } from '../helpers/harness.js';
import { loadFixture, type WorkflowExample } from '../fixtures/index.js';
import { KEY, attach, batchModeProofs, envelopeModeProof, receiptNumber, type Json } from '../verify/build-proofs.js';
import { timelineDoc } from './documents.js';

const verifyBin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
const anchorBin = join(REPO_ROOT, 'bin/aer1-anchor.js');
const dir = mkdtempSync(join(tmpdir(), 'aer1-trust-'));
const workflow = loadFixture<WorkflowExample>('workflow-receipt-example');
const receipt = loadFixture('receipt-minimal');

interface Run { code: number | null; stdout: string; stderr: string; ms: number }

/** Runs a built bin without blocking this process (the dev relays live in it). */
async function run(bin: string, args: string[]): Promise<Run> {
  const started = Date.now();
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
  const code = await new Promise<number | null>((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('close', (c) => {
      clearTimeout(kill);
      resolve(c);
    });
  });
  return { code, stdout, stderr, ms: Date.now() - started };
}
const verify = (args: string[]): Promise<Run> => run(verifyBin, args);

function write(name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return file;
}

/** One line, no stack trace, no internal error. */
function expectCleanLine(r: Run, pattern: RegExp): void {
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/RangeError|internal error|\n\s+at /);
}

async function publish(relay: DevRelay, event: SignedEvent): Promise<void> {
  const client = new RelayClient(relay.url, { ping: false });
  try {
    expect((await client.publish(event, { timeoutMs: 5000 })).status).toBe('accepted');
  } finally {
    client.close();
  }
}

function withRelays(proof: Json, urls: string[]): Json {
  return { ...proof, nostr: { ...(proof.nostr as Json), relays: urls.map((url) => ({ url, status: 'accepted', message: '', at: '' })) } };
}

/** The workflow cut to its first four steps, its root recomputed as a forger would. */
function cutWorkflow(): Json {
  const steps = workflow.steps.slice(0, 4);
  return { ...workflow, steps, merkle_root: receiptIdV0Root(steps.map((s) => s.receipt_id as string)) };
}

describe('a verdict a forger cannot earn', () => {
  let honest: DevRelay;
  let forgers: DevRelay;
  const genuine = envelopeModeProof(workflow, { noOts: true });

  beforeAll(async () => {
    [honest, forgers] = await Promise.all([startDevRelay(), startDevRelay()]);
    await publish(honest, genuine.event!);
  });

  afterAll(async () => {
    await Promise.all([honest?.close(), forgers?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  describe('1. a re-signed, backdated envelope on the forger\'s relay, listed in the proof', () => {
    const forger = SigningKey.parse('3'.repeat(64));
    const forged = envelopeModeProof(workflow, { key: forger, anchoredAt: '2024-01-01T00:00:00Z', noOts: true });
    let file: string;
    beforeAll(async () => {
      await publish(forgers, forged.event!);
      file = write('forged.json', attach(workflow, withRelays(forged.proof, [forgers.url])));
    });

    it('was PASS with --online --require-confirmed; now --online asks only relays the caller names (exit 2 without one)', async () => {
      const r = await verify([file, '--online', '--require-confirmed']);
      expect(r.code).toBe(2);
      expectCleanLine(r, /--online asks the relays you name: give --relay URL/);
    });

    it('fails --require-confirmed even when the caller asks the proof\'s own relays: the signer is nobody the caller trusts', async () => {
      const r = await verify([file, '--online', '--use-proof-relays', '--require-confirmed']);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/ {2}PASS {2}online +identical event served by .* \(all taken from the proof itself, --use-proof-relays\)/);
      expect(r.stdout).toMatch(/^VERDICT: FAIL: not confirmed \(--require-confirmed\): no witness confirmed yet \(nostr published, signer not trusted \(give --expected-pubkey\)\)$/m);
    });

    it('fails at signer when the caller names the issuer\'s key, on any relay', async () => {
      const r = await verify([file, '--online', '--relay', forgers.url, '--relay', honest.url, '--expected-pubkey', KEY.npub, '--require-confirmed']);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^VERDICT: FAIL: signer: signed by npub1\S+ \([0-9a-f]{64}\), not by an expected key/m);
    });

    it('while the genuine proof passes, confirmed, on the relay the caller names, with a trust file', async () => {
      const trust = write('issuers.txt', `# issuer keys\n${KEY.npub}\n\n`);
      const r = await verify([write('genuine.json', attach(workflow, genuine.proof)), '--online', '--relay', honest.url, '--trust-file', trust, '--require-confirmed']);
      expect(r.stdout).toMatch(/^VERDICT: PASS: nostr confirmed, expected signer, held by 1 of the relays asked/m);
      expect(r.stdout).toContain(`  WITNESS nostr established: event ${genuine.event!.id} is signed by ${KEY.npub} (${KEY.publicKey}) and carries this envelope, byte for byte; the signer is a key you trust (--expected-pubkey); the identical event is held by ${honest.url}\n`);
      expect(r.stdout).toMatch(/^ {2}WITNESS nostr not established: a time: created_at \S+ is the signer's own word, not a time proof$/m);
      expect(r.code).toBe(0);
    });
  });

  describe('2. a proof must anchor something', () => {
    it('fails at input when the proof names no witness, whatever status it claims', async () => {
      const { nostr: _n, ots: _o, ...bare } = genuine.proof;
      const r = await verify([write('no-witness.json', attach(workflow, { ...bare, status: 'confirmed' }))]);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('  FAIL  input             the proof names no witness (no nostr, no ots, no log): nothing anchors this subject\n');
      expect(r.stdout).toMatch(/^VERDICT: FAIL: input: the proof names no witness/m);
    });

    it('fails at input when the witnesses carry only status claims', async () => {
      const claims = { ...genuine.proof, status: 'pending', nostr: { status: 'pending', event: null, relays: [] }, ots: { status: 'pending', proof: null, calendars: [] } };
      const r = await verify([write('claims-only.json', attach(workflow, claims))]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^VERDICT: FAIL: input: the proof carries nothing checkable \(no signed Nostr event, no \.ots, no anchor log inclusion\)/m);
    });
  });

  describe('3. a document that could be read two ways is refused (exit 2); a cut workflow never exits 0', () => {
    const other = receiptNumber(7);
    const otherProof = envelopeModeProof(other).proof;
    const timeline = timelineDoc(3);
    const cases: Array<[string, Json]> = [
      ['proof members at its top level', { ...cutWorkflow(), ...genuine.proof }],
      ['a "receipt" member holding another subject\'s proof', { ...cutWorkflow(), receipt: attach(other, otherProof) }],
      ['a "_receipt" member holding another subject\'s proof', { ...cutWorkflow(), _receipt: attach(other, otherProof) }],
      ['timeline "entries" with their own proof', { ...cutWorkflow(), entries: timeline, anchor_proof: envelopeModeProof(timeline).proof }],
      ['a proof at the top and one on its "receipt"', { ...attach(cutWorkflow(), genuine.proof), receipt: attach(other, otherProof) }],
    ];
    for (const [name, doc] of cases) {
      it(`a truncated workflow with ${name}`, async () => {
        const file = write(`ambiguous-${cases.findIndex((c) => c[0] === name)}.json`, doc);
        for (const extra of [[], ['--require-confirmed']]) {
          const r = await verify([file, ...extra]);
          expect(r.code, r.stdout).toBe(2);
          expectCleanLine(r, /ambiguous input/);
        }
      });
    }

    it('the daemon refuses to anchor such a document too (aer1-anchor envelope exits 1 naming the ambiguity)', async () => {
      const r = await run(anchorBin, ['envelope', write('ambiguous-anchor.json', { ...cutWorkflow(), receipt: other })]);
      expect(r.code).toBe(1);
      expectCleanLine(r, /\$: the document could be read two ways: it has its own [a-z_, ]+ and a "receipt" member$/m);
    });
  });

  describe('4. JSON nested 5,000 deep', () => {
    const DEEP = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    /** `value` as JSON text with the placeholder string replaced by the deep value. */
    const deep = (value: unknown): string => JSON.stringify(value).replace('"__DEEP__"', DEEP);
    const batch = batchModeProofs([receiptNumber(1), receiptNumber(2)], { noOts: true });
    const timeline = timelineDoc(2);
    const places: Array<[string, string]> = [
      ['a proof\'s version', deep({ ...genuine.proof, version: '__DEEP__' })],
      ['an envelope member', deep(attach(workflow, { ...genuine.proof, envelope: { ...(genuine.proof.envelope as Json), extra: '__DEEP__' } }))],
      ['an extra event member', deep(attach(workflow, { ...genuine.proof, nostr: { ...(genuine.proof.nostr as Json), event: { ...genuine.event, extra: '__DEEP__' } } }))],
      ['the batch inclusion', deep(attach(receiptNumber(1), { ...batch.proofs[0]!, nostr: { ...(batch.proofs[0]!.nostr as Json), batch: { ...((batch.proofs[0]!.nostr as Json).batch as Json), extra: '__DEEP__' } } }))],
      ['a workflow type', deep(attach({ ...workflow, type: '__DEEP__' }, genuine.proof))],
      ['a receipt hash_algorithm', deep(attach({ ...receipt, hash_algorithm: '__DEEP__' }, envelopeModeProof(receipt).proof))],
      ['a timeline job_id', deep({ entries: timeline.map((e, i) => (i === 0 ? { ...e, job_id: '__DEEP__' } : e)), anchor_proof: envelopeModeProof(timeline).proof })],
    ];

    for (const [i, [name, text]] of places.entries()) {
      it(`in ${name}: exit 2 with one clear line, no stack trace`, async () => {
        expect(text.length).toBeGreaterThan(10_000);
        const r = await verify([write(`deep-${i}.json`, text)]);
        expect(r.code).toBe(2);
        expectCleanLine(r, /is nested deeper than 64 levels \(the limit for any JSON input\)/);
      });
    }

    it('in batch content inside the event: the batch-path check fails, no crash', async () => {
      const ev = batch.event;
      const forged = KEY.sign({ kind: ev.kind, created_at: ev.created_at, tags: ev.tags, content: `{"type":${DEEP}}` });
      const proof = { ...batch.proofs[0]!, nostr: { ...(batch.proofs[0]!.nostr as Json), event: forged } };
      const r = await verify([write('deep-content.json', attach(receiptNumber(1), proof))]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^VERDICT: FAIL: batch-path: the event content is nested deeper than 64 levels/m);
      expect(r.stderr).toBe('');
    });

    it('in a multi-file run, the good files still get their verdicts', async () => {
      const good = write('good.json', attach(workflow, genuine.proof));
      const r = await verify([write('deep-multi.json', places[4]![1]), good]);
      expect(r.code).toBe(2);
      expect(r.stdout).toMatch(/^UNREADABLE: .*deep-multi\.json is nested deeper than 64 levels/m);
      expect(r.stdout).toMatch(/^VERDICT: PASS: /m);
      expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 2 files: 1 PASS (1 pending), 0 FAIL, 0 inconclusive, 1 unreadable');
      expect(r.stderr).not.toMatch(/RangeError|\n\s+at /);
    });

    it('aer1-anchor envelope: exit 2 with one clear line', async () => {
      const r = await run(anchorBin, ['envelope', write('deep-envelope.json', deep({ ...workflow, type: '__DEEP__' }))]);
      expect(r.code).toBe(2);
      expectCleanLine(r, /is nested deeper than 64 levels/);
    });
  });

  describe('5. --online exits promptly', () => {
    it('the process ends within seconds of its verdict (it lingered ~70 s on a nostr-tools timer)', async () => {
      const file = write('online.json', attach(workflow, genuine.proof));
      const started = Date.now();
      let printedAt = 0;
      const child = spawn(process.execPath, [verifyBin, file, '--online', '--relay', honest.url, '--expected-pubkey', KEY.publicKey], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (!printedAt && out.includes('VERDICT:')) printedAt = Date.now();
      });
      const code = await new Promise<number | null>((resolve) => {
        const kill = setTimeout(() => child.kill('SIGKILL'), 90_000);
        child.on('exit', (c) => {
          clearTimeout(kill);
          resolve(c);
        });
      });
      const exitedAt = Date.now();
      expect(out).toMatch(/^VERDICT: PASS: /m);
      expect(code).toBe(0);
      console.log(`online exit: verdict after ${printedAt - started} ms, exit ${exitedAt - printedAt} ms later`);
      expect(exitedAt - printedAt).toBeLessThan(5_000);
    });
  });

  describe('header files the caller trusts are held to being a chain', () => {
    it('refuses a headers file whose consecutive heights do not link (exit 2)', async () => {
      const a = mineHeader({ version: 0x20000000, prevHash: Buffer.alloc(32, 1), merkleRoot: Buffer.alloc(32, 2), time: 1_769_860_800, bits: REGTEST_BITS }).header;
      const b = mineHeader({ version: 0x20000000, prevHash: Buffer.alloc(32, 9), merkleRoot: Buffer.alloc(32, 3), time: 1_769_860_900, bits: REGTEST_BITS }).header;
      const headers = write('unlinked-headers.json', { 100: a.toString('hex'), 101: b.toString('hex') });
      const r = await verify([write('for-headers.json', attach(workflow, genuine.proof)), '--headers', headers, '--network', 'regtest']);
      expect(r.code).toBe(2);
      expectCleanLine(r, /the header at height 101 does not link to the header at height 100/);
    });
  });
});
