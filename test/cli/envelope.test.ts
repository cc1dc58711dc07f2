/**
 * `aer1-anchor envelope` as users run it: the built bin in a child process (build first:
 * `npx tsc -p tsconfig.json`; `npm test` does).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath, loadFixture, type ChainVector, type WorkflowExample } from '../fixtures/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(repoRoot, 'bin/aer1-anchor.js');
const BUILT = path.join(repoRoot, 'dist/src/cli/commands/envelope.js');
const SOURCE = path.join(repoRoot, 'src/cli/commands/envelope.ts');
const AT = '2026-01-01T00:00:00Z';

let dir: string;

beforeAll(() => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run npx tsc -p tsconfig.json (npm test does) before the CLI tests`);
  if (statSync(BUILT).mtimeMs < statSync(SOURCE).mtimeMs) throw new Error(`${BUILT} is older than its source: rebuild with npx tsc -p tsconfig.json`);
  dir = mkdtempSync(path.join(tmpdir(), 'aer1-envelope-cli-'));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [BIN, 'envelope', ...args], { input, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let n = 0;
function file(content: unknown): string {
  const p = path.join(dir, `input-${n++}.json`);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

/** Exit 1, exactly one stderr line naming the field, no stack trace, nothing on stdout. */
function expectInputError(r: ReturnType<typeof cli>, field: string, words: string) {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^aer1-anchor: /);
  expect(lines[0]).toContain(`${field}:`);
  expect(lines[0]).toContain(words);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

describe('aer1-anchor envelope: the vectors', () => {
  it('prints a receipt envelope, its canonical text and its digest, labelled', () => {
    const r = cli([fixturePath('receipt-minimal'), '--anchored-at', AT]);
    expect(r.code, r.stderr).toBe(0);
    const canonical = '{"anchored_at":"2026-01-01T00:00:00Z","output_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","receipt_uuid":"00000000-0000-4000-8000-000000000001","subject":"receipt","type":"zambo-receipt-anchor/1"}';
    expect(r.stdout).toBe(
      `envelope:\n${JSON.stringify(JSON.parse(canonical), null, 2)}\ncanonical:\n${canonical}\n`
      + 'digest (sha256 of canonical):\nbda6f864c6aea27ba7e9846d47c9bd0985f01fb5b6505c8057e67a42404fa5ee\n',
    );
  });

  it('--json prints {envelope, canonical, digest} for the worked workflow example', () => {
    const r = cli([fixturePath('workflow-receipt-example'), '--anchored-at', AT, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { envelope: Record<string, unknown>; canonical: string; digest: string };
    expect(Object.keys(out)).toEqual(['envelope', 'canonical', 'digest']);
    expect(out.envelope).toMatchObject({
      subject: 'workflow-close', merkle_root: '7c4817ca249edfeae259b98abf63ed38a31d9dbeebf5ee23139410a7a7f63b37', merkle_version: 'receipt-id-v0', step_count: 5,
    });
    expect(out.digest).toBe(createHash('sha256').update(out.canonical).digest('hex'));
    expect(JSON.parse(out.canonical)).toEqual(out.envelope);
  });

  it('reads a job timeline from stdin with -', () => {
    const v = loadFixture<ChainVector>('aer1-chain-v07');
    const r = cli(['-', '--anchored-at', AT, '--json'], JSON.stringify(v.entries));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).envelope).toEqual({
      anchored_at: AT, entry_count: 5, final_entry_digest: v.final_entry_digest, job_id: 'job-7a1f', subject: 'chain-head', type: 'zambo-receipt-anchor/1',
    });
  });

  it('adds evidence given as flags to a receipt envelope', () => {
    const hex = 'cd'.repeat(32);
    const r = cli([file({ _receipt: loadFixture('receipt-minimal') }), '--anchored-at', AT, '--json',
      '--evidence-sha256', hex, '--evidence-byte-length', '1234', '--evidence-url', 'https://evidence.test/e/1']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).envelope).toMatchObject({ evidence_sha256: hex, evidence_byte_length: 1234, evidence_url: 'https://evidence.test/e/1' });
  });

  it('stamps the current time when --anchored-at is not given', () => {
    const before = Math.floor(Date.now() / 1000) * 1000;
    const r = cli([fixturePath('receipt-minimal'), '--json']);
    const after = Date.now();
    expect(r.code, r.stderr).toBe(0);
    const at = JSON.parse(r.stdout).envelope.anchored_at as string;
    expect(at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(Date.parse(at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(at)).toBeLessThanOrEqual(after);
  });
});

describe('aer1-anchor envelope: bad input exits 1 with one line naming the field', () => {
  const wf = () => loadFixture<WorkflowExample>('workflow-receipt-example');
  const receipt = () => loadFixture('receipt-minimal');
  const chain = () => loadFixture<ChainVector>('aer1-chain-v07');

  it('duplicate step receipt_id', () => {
    const doc = wf();
    doc.steps[3]!.receipt_id = doc.steps[0]!.receipt_id;
    expectInputError(cli([file(doc)]), 'steps[3].receipt_id', 'duplicate receipt_id');
  });

  it('seq gap', () => {
    const doc = wf();
    doc.steps.splice(1, 1);
    expectInputError(cli([file(doc)]), 'steps[1].seq', 'seq gap');
  });

  it('seq out of order', () => {
    const doc = wf();
    doc.steps[2]!.seq = 2;
    expectInputError(cli([file(doc)]), 'steps[2].seq', 'seq out of order');
  });

  it.each([[1.5], ['2'], [true]])('non-integer seq %j', (seq) => {
    const doc = wf();
    doc.steps[1]!.seq = seq;
    expectInputError(cli([file(doc)]), 'steps[1].seq', 'seq must be an integer');
  });

  it('declared merkle_root that does not match the steps', () => {
    const doc = wf();
    doc.merkle_root = '0'.repeat(64);
    expectInputError(cli([file(doc)]), 'merkle_root', 'does not match the steps');
  });

  it('output_hash that does not match the bytes', () => {
    const doc = receipt();
    doc.output_hash = `sha256:${'1'.repeat(64)}`;
    expectInputError(cli([file(doc)]), 'output_hash', 'does not match the bytes');
  });

  it('non-canonical base64', () => {
    const doc = receipt();
    doc.canonical_bytes = 'e31=';
    expectInputError(cli([file({ receipt: doc })]), 'receipt.canonical_bytes', 'not canonical base64');
  });

  it('non-UTF-8 bytes', () => {
    const doc = receipt();
    doc.canonical_bytes = Buffer.from([0x7b, 0xff, 0x7d]).toString('base64');
    doc.canonical_byte_length = 3;
    expectInputError(cli([file(doc)]), 'canonical_bytes', 'not UTF-8');
  });

  it('broken chain link', () => {
    const v = chain();
    v.entries[2]!.prev_digest = 'a'.repeat(64);
    expectInputError(cli([file(v)]), 'entries[2].prev_digest', 'broken chain link');
  });

  it('close flag before the last entry', () => {
    const v = chain();
    v.entries[1]!.close = true;
    expectInputError(cli([file(v.entries)]), '$[1].close', 'only the last entry may close');
  });

  it('a malformed --anchored-at, --evidence-sha256 or --evidence-byte-length', () => {
    const p = fixturePath('receipt-minimal');
    expectInputError(cli([p, '--anchored-at', '2026-01-01T00:00:00.123Z']), 'anchored_at', 'RFC 3339');
    expectInputError(cli([p, '--evidence-sha256', 'XYZ']), 'evidence_sha256', 'hex');
    expectInputError(cli([p, '--evidence-byte-length', '12b']), 'evidence_byte_length', 'non-negative integer');
  });

  it('evidence for a workflow close', () => {
    expectInputError(cli([fixturePath('workflow-receipt-example'), '--evidence-url', 'https://e.test/']), 'evidence_url', 'only anchored for receipts');
  });
});

describe('aer1-anchor envelope: usage and unreadable input exit 2', () => {
  it.each([
    ['a missing file', () => [path.join(dir, 'absent.json')], 'cannot read'],
    ['unparseable JSON', () => [file('{"id": ')], 'is not JSON'],
    ['an unknown flag', () => [fixturePath('receipt-minimal'), '--bogus'], "Unknown option '--bogus'"],
    ['no FILE', () => [], 'expected one FILE'],
  ])('%s', (_name, args, words) => {
    const r = cli(args());
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(words);
  });
});
