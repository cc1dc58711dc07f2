/**
 * `aer1-anchor demo --json` through the built bin, as a newcomer runs it: exit 0, PASS for
 * every subject, a FAIL naming truncation for the cut workflow, the files on disk, and
 * nothing left behind (its process group is gone, none of its ports answers).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoSummary } from '../../src/dev/demo/demo.js';

const repo = resolve(import.meta.dirname, '../..');
const anchorBin = join(repo, 'bin/aer1-anchor.js');
const verifyBin = join(repo, 'bin/aer1-verify-anchor.js');
const built = join(repo, 'dist/src/dev/demo/demo.js');
const base = mkdtempSync(join(tmpdir(), 'aer1-demo-test-'));
const out = join(base, 'out');

/** Bounded wait for the child; the demo itself takes seconds. */
const CHILD_LIMIT_MS = 120_000;

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  pid: number;
}

function runDemoChild(args: string[]): Promise<ChildResult> {
  return new Promise((resolvePromise, reject) => {
    // its own process group, so whatever it spawns can be looked for afterwards
    const child = spawn(process.execPath, [anchorBin, 'demo', ...args], { cwd: base, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? base } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`demo did not exit within ${CHILD_LIMIT_MS} ms; stderr: ${stderr.slice(-2000)}`));
    }, CHILD_LIMIT_MS);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, pid: child.pid! });
    });
  });
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ port, host: '127.0.0.1' });
    const done = (v: boolean): void => {
      s.destroy();
      res(v);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('aer1-anchor demo --json (built bin)', () => {
  let result: ChildResult | null = null;
  let summary: DemoSummary | null = null;

  it('needs a build (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(built), `${built} is missing: run npx tsc -p tsconfig.json (or npm test) first`).toBe(true);
  });

  beforeAll(async () => {
    if (!existsSync(built)) return;
    result = await runDemoChild(['--json', '--out', out]);
    try {
      summary = JSON.parse(result.stdout) as DemoSummary;
    } catch {
      summary = null;
    }
  }, CHILD_LIMIT_MS + 10_000);

  it('exits 0 and prints a JSON summary on stdout (progress on stderr)', () => {
    expect(result, 'the demo did not run').not.toBeNull();
    expect(result!.code, result!.stderr.slice(-3000)).toBe(0);
    expect(summary, `stdout is not JSON: ${result!.stdout.slice(0, 500)}`).not.toBeNull();
    expect(summary!.ok).toBe(true);
    expect(summary!.error).toBeNull();
    expect(result!.stderr).toContain('Mining a regtest block');
  });

  it('anchors a receipt, a workflow close and a job timeline to confirmed, and each verifies PASS', () => {
    const s = summary!;
    expect(s.subjects.map((x) => [x.label, x.kind])).toEqual([['receipt', 'receipt'], ['workflow', 'workflow-close'], ['timeline', 'chain-head']]);
    for (const subject of s.subjects) {
      expect(subject.key.length).toBeGreaterThan(0);
      expect(subject.status).toBe('confirmed');
      expect(subject.witnesses).toEqual({ nostr: 'confirmed', ots: 'confirmed' });
      expect(subject.verify?.verdict, subject.verify?.reason).toBe('PASS');
      expect(subject.verify?.pending).toBe(false);
      expect(subject.verify?.checks.find((c) => c.name === 'signer')?.status).toBe('PASS');
      expect(subject.verify?.checks.find((c) => c.name === 'bitcoin')?.status).toBe('PASS');
      expect(subject.bitcoin?.height).toBeGreaterThanOrEqual(1);
      // it was seen moving through its states, and the history says so
      expect(Object.keys(subject.reached_ms)).toContain('confirmed');
      expect(subject.history.some((h) => h.witness === 'ots' && h.to === 'confirmed')).toBe(true);
    }
    expect(s.blocks.length).toBe(2);
    expect(s.signer?.pubkey).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reports the cut workflow as a FAIL naming the truncation', () => {
    const t = summary!.truncation!;
    expect(t.verdict).toBe('FAIL');
    expect(t.steps_in_file).toBe(t.steps_anchored - 1);
    expect(t.reason).toMatch(new RegExp(`truncated: anchored ${t.steps_anchored} steps, receipt has ${t.steps_in_file}`));
    expect(t.check).toEqual({ name: 'envelope', status: 'FAIL', detail: `truncated: anchored ${t.steps_anchored} steps, receipt has ${t.steps_in_file}` });
    expect(t.named_truncation).toBe(true);
  });

  it('writes each subject with its anchor_proof, the .ots files and the headers file; the built verifier agrees', () => {
    const s = summary!;
    for (const name of ['receipt.json', 'workflow.json', 'timeline.json', 'workflow-truncated.json', 'receipt.ots', 'workflow.ots', 'timeline.ots', 'headers.json', 'demo-nostr.key']) {
      expect(existsSync(join(out, name)), name).toBe(true);
      expect(s.files).toContain(join(out, name));
    }
    for (const f of s.files) expect(existsSync(f), f).toBe(true);
    expect(statSync(join(out, 'demo-nostr.key')).mode & 0o077).toBe(0);
    const headers = JSON.parse(readFileSync(join(out, 'headers.json'), 'utf8')) as Record<string, string>;
    expect(Object.keys(headers).sort()).toEqual(s.blocks.map((b) => String(b.height)).sort());
    const workflow = JSON.parse(readFileSync(join(out, 'workflow.json'), 'utf8')) as { anchor_proof: { version: string; status: string } };
    expect(workflow.anchor_proof.version).toBe('aer1-anchor-proof-v1');
    expect(workflow.anchor_proof.status).toBe('confirmed');
    const otsMagic = Buffer.from('004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294', 'hex');
    expect(readFileSync(join(out, 'workflow.ots')).subarray(0, otsMagic.length).equals(otsMagic)).toBe(true);

    const common = ['--headers', join(out, 'headers.json'), '--network', 'regtest', '--expected-pubkey', s.signer!.pubkey];
    const pass = spawnSync(process.execPath, [verifyBin, join(out, 'receipt.json'), join(out, 'workflow.json'), join(out, 'timeline.json'), ...common], { encoding: 'utf8', timeout: 30_000 });
    expect(pass.status, pass.stdout + pass.stderr).toBe(0);
    expect(pass.stdout).toContain('SUMMARY: 3 files: 3 PASS, 0 FAIL, 0 inconclusive, 0 unreadable');
    const cut = spawnSync(process.execPath, [verifyBin, join(out, 'workflow-truncated.json'), ...common], { encoding: 'utf8', timeout: 30_000 });
    expect(cut.status, cut.stdout + cut.stderr).toBe(1);
    expect(cut.stdout).toMatch(/VERDICT: FAIL: envelope: truncated: anchored \d+ steps, receipt has \d+/);
  });

  it('its proofs carry the dev TSA\'s token and both dev witnesses\' cosignatures; the built verifier, given tsa_ca and witnesses, shows the three kinds of time', () => {
    const s = summary!;
    expect(s.tsa_ca).toBe(join(out, 'tsa-ca.pem'));
    expect(readFileSync(s.tsa_ca!, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(s.witnesses).toHaveLength(2);
    for (const k of s.witnesses) expect(k).toMatch(/^[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/);
    for (const name of ['receipt.json', 'workflow.json', 'timeline.json']) {
      const log = (JSON.parse(readFileSync(join(out, name), 'utf8')) as { anchor_proof: { log: { checkpoint: string; timestamps: Array<{ url: string; token: string }> } } }).anchor_proof.log;
      expect(log.timestamps.length, name).toBeGreaterThanOrEqual(1);
      const sigLines = log.checkpoint.slice(log.checkpoint.indexOf('\n\n') + 2).split('\n').filter((l) => l !== '');
      expect(sigLines.length, name).toBeGreaterThanOrEqual(3);
    }
    for (const subject of s.subjects) {
      expect(subject.verify?.checks.find((c) => c.name === 'tsa')?.status).toBe('PASS');
      expect(subject.verify?.checks.find((c) => c.name === 'cosignatures')?.status).toBe('PASS');
    }
    const args = [join(out, 'receipt.json'), '--headers', join(out, 'headers.json'), '--network', 'regtest', '--expected-pubkey', s.signer!.pubkey, '--tsa-ca', s.tsa_ca!, ...s.witnesses.flatMap((k) => ['--witness', k])];
    const text = spawnSync(process.execPath, [verifyBin, ...args], { encoding: 'utf8', timeout: 30_000 });
    expect(text.status, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toMatch(/TIME {4}tsa {5}the checkpoint holding d .* existed at \S+: TSA genTime, signed by .*aer1-anchor dev TSA/);
    expect(text.stdout).toMatch(/TIME {4}witness {1}the checkpoint holding d .* existed at \S+: cosigned by witness aer1-anchor\.dev\/witness-1/);
    expect(text.stdout).toMatch(/TIME {4}witness {1}.*cosigned by witness aer1-anchor\.dev\/witness-2/);
    expect(text.stdout).toMatch(/TIME {4}bitcoin {1}d existed at \S+: Bitcoin block \d+'s time/);
  });

  it('--min-confirmations N: Bitcoin confirms only when the headers show N blocks on the attested one', () => {
    const s = summary!;
    const common = [join(out, 'receipt.json'), '--headers', join(out, 'headers.json'), '--network', 'regtest', '--expected-pubkey', s.signer!.pubkey, '--require-confirmed'];
    const tip = Math.max(...s.blocks.map((b) => b.height));
    const lowest = Math.min(...(s.subjects[0]!.verify!.checks.find((c) => c.name === 'bitcoin')!.detail.match(/block (\d+) /g) ?? []).map((m) => Number(m.slice(6, -1))));
    const enough = spawnSync(process.execPath, [verifyBin, ...common, '--min-confirmations', String(tip - lowest + 1)], { encoding: 'utf8', timeout: 30_000 });
    expect(enough.status, enough.stdout).toBe(0);
    const tooMany = spawnSync(process.execPath, [verifyBin, ...common, '--min-confirmations', String(tip - lowest + 2)], { encoding: 'utf8', timeout: 30_000 });
    expect(tooMany.status, tooMany.stdout).toBe(1);
    expect(tooMany.stdout).toMatch(/SKIP +bitcoin .* of the \d+ confirmations asked \(--min-confirmations\)/);
  });

  it('leaves nothing behind: its process group is gone and none of its ports answers', async () => {
    const s = summary!;
    expect(groupAlive(result!.pid)).toBe(false);
    expect(s.services.ports.length).toBe(10); // redis, 3 relays, 2 calendars, the TSA, 2 witnesses, http
    expect(s.services.ports_closed).toBe(true);
    for (const port of s.services.ports) expect(await portAnswers(port), `port ${port}`).toBe(false);
  });

  it('refuses an --out folder that is not empty (exit 2), and an unknown flag (exit 2)', () => {
    const busy = spawnSync(process.execPath, [anchorBin, 'demo', '--out', out], { encoding: 'utf8', timeout: 30_000 });
    expect(busy.status).toBe(2);
    expect(busy.stderr).toMatch(/not empty/);
    const bad = spawnSync(process.execPath, [anchorBin, 'demo', '--bogus'], { encoding: 'utf8', timeout: 30_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});
