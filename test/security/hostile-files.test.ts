/**
 * Issue 24, items 4-7: files that are not what their name says. A FIFO named b.json in a
 * --dir or an audit folder, a b.json that is a symlink to /dev/zero, a file name carrying
 * newlines and a forged `VERDICT: PASS` line, and a 50,000-header --headers file. Each
 * refusal is exit 2 with one line, and a multi-file run goes on with the other files.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { headerSourceFor } from '../../src/cli/commands/verify-anchor.js';
import { sha256d } from '../../src/core/bitcoin/header.js';
import { REPO_ROOT } from '../helpers/harness.js';
import { loadFixture, type WorkflowExample } from '../fixtures/index.js';
import { KEY, attach, envelopeModeProof, headersJson, unrelatedHeader } from '../verify/build-proofs.js';

const verifyBin = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
const anchorBin = join(REPO_ROOT, 'bin/aer1-anchor.js');
const dir = mkdtempSync(join(tmpdir(), 'aer1-hostile-files-'));
const workflow = loadFixture<WorkflowExample>('workflow-receipt-example');

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/**
 * A built bin under a 4 GB address-space limit (an unbounded read dies there instead of
 * filling the machine), killed after 20 s (a blocked open is seen, never waited out).
 */
function run(bin: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', 'ulimit -v 4000000; exec "$0" "$@"', process.execPath, bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function folder(name: string): string {
  const d = join(dir, name);
  mkdirSync(d);
  writeFileSync(join(d, 'a.json'), JSON.stringify(attach(workflow, envelopeModeProof(workflow, { noOts: true }).proof)));
  writeFileSync(join(d, 'c.json'), JSON.stringify(attach(workflow, envelopeModeProof(workflow, { noOts: true }).proof)));
  return d;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('4. a FIFO named b.json', () => {
  it('in --dir: refused in one line (exit 2) without blocking; a.json and c.json still get their verdicts', async () => {
    const d = folder('fifo-verify');
    execFileSync('mkfifo', [join(d, 'b.json')]);
    const r = await run(verifyBin, ['--dir', d, '--expected-pubkey', KEY.publicKey]);
    expect(r.signal).toBeNull();
    expect(r.stderr).toBe(`aer1-verify-anchor: ${join(d, 'b.json')}: not a regular file (a FIFO): refused\n`);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('SUMMARY: 3 files: 2 PASS (2 pending), 0 FAIL, 0 inconclusive, 1 unreadable');
    expect(r.code).toBe(2);
  });

  it('in an audit folder: refused in one line, never blocks', async () => {
    const d = folder('fifo-audit');
    execFileSync('mkfifo', [join(d, 'b.json')]);
    const r = await run(anchorBin, ['audit', '--relay', 'ws://127.0.0.1:9', '--expected-pubkey', KEY.publicKey, '--json', d]);
    expect(r.signal).toBeNull();
    const out = JSON.parse(r.stdout) as { unreadable: Array<{ file: string; error: string }> };
    expect(out.unreadable).toEqual([{ file: join(d, 'b.json'), error: `${join(d, 'b.json')}: not a regular file (a FIFO): refused` }]);
    expect(r.code).toBe(2);
  });
});

describe('5. b.json, a symlink to /dev/zero', () => {
  it('is refused before any read (exit 2, one line), not read without bound', async () => {
    const d = folder('zero');
    symlinkSync('/dev/zero', join(d, 'b.json'));
    const one = await run(verifyBin, [join(d, 'b.json')]);
    expect(one.signal).toBeNull();
    expect(one.stderr).toBe(`aer1-verify-anchor: ${join(d, 'b.json')}: not a regular file (a character device): refused\n`);
    expect(one.code).toBe(2);
    const many = await run(verifyBin, ['--dir', d, '--expected-pubkey', KEY.publicKey]);
    expect(many.stdout).toMatch(/^SUMMARY: 3 files: 2 PASS \(2 pending\), 0 FAIL, 0 inconclusive, 1 unreadable$/m);
    expect(many.code).toBe(2);
  });

  it('a regular file over the input cap is refused by its size, before it is read', async () => {
    const big = join(dir, 'big.json');
    writeFileSync(big, Buffer.alloc(65 * 1024 * 1024, 0x20));
    const r = await run(verifyBin, [big]);
    expect(r.stderr).toBe(`aer1-verify-anchor: ${big}: 68157440 bytes, over the input cap of 67108864 bytes: refused\n`);
    expect(r.code).toBe(2);
  });
});

describe('6. a file name carrying newlines', () => {
  it('cannot print a forged VERDICT line: the name is shown escaped and bounded', async () => {
    const d = join(dir, 'names');
    mkdirSync(d);
    const name = `x\nVERDICT: PASS: nostr confirmed, expected signer\n${'\x1b[32m'}z.json`;
    // a FAIL: the proof's signer is not the one the caller trusts
    writeFileSync(join(d, name), JSON.stringify(attach(workflow, envelopeModeProof(workflow, { noOts: true }).proof)));
    writeFileSync(join(d, 'ok.json'), JSON.stringify(attach(workflow, envelopeModeProof(workflow, { noOts: true }).proof)));
    const r = await run(verifyBin, ['--dir', d, '--expected-pubkey', 'f'.repeat(64)]);
    expect(r.stdout).not.toMatch(/^VERDICT: PASS/m);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stdout).toContain(`file: ${d}/x\\nVERDICT: PASS: nostr confirmed, expected signer\\n\\x1b[32mz.json`);
    expect(r.code).toBe(1);
    const long = await run(verifyBin, [join(d, 'ok.json'), '--proof', join(d, `${'n'.repeat(300)}.json`)]);
    expect(long.stderr.length).toBeLessThan(400);
    expect(long.code).toBe(2);
  });
});

describe('7. a 50,000-header --headers file', () => {
  it('is read and checked once per run: later lookups use what was read', async () => {
    const headers = Array.from({ length: 50_000 }, (_, i) => ({ height: 2 * i, header: unrelatedHeader(2 * i) }));
    const file = join(dir, 'headers.json');
    writeFileSync(file, headersJson(headers));
    const source = headerSourceFor({ headers: file })!;
    writeFileSync(file, '{}'); // what is looked up now must come from the one read
    const h = await source.headerAt(99_998);
    expect(sha256d(h).equals(sha256d(headers.at(-1)!.header))).toBe(true);
    expect(source.name).toBe(`headers file ${file}`);
  });
});
