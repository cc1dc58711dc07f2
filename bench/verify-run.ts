/**
 * Verification speed, through the built `aer1-verify-anchor` bin as a user runs it:
 * `--dir DIR` over exported batch-mode proofs (standalone proof files; the batch events
 * they share are verified once per run), and single-proof cold starts.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { VERIFY_BIN, track } from './processes.js';
import { load } from './report.js';

export interface VerifyRunResult {
  files: number;
  wallMs: number;
  proofsPerS: number;
  summary: string;
  exitCode: number | null;
  load: [number, number, number];
}

interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function runBin(args: string[], timeoutMs: number): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = track(spawn(process.execPath, [VERIFY_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr, ms: performance.now() - t0 });
    });
  });
}

function headerArgs(headersFile: string | null): string[] {
  return headersFile ? ['--headers', headersFile, '--network', 'regtest'] : [];
}

/** `aer1-verify-anchor --dir DIR`; the wall time includes the process start (one start for all files). */
export async function verifyDir(dir: string, headersFile: string | null, timeoutMs: number): Promise<VerifyRunResult> {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).length;
  const r = await runBin(['--dir', dir, ...headerArgs(headersFile)], timeoutMs);
  const summary = /^SUMMARY: .*$/m.exec(r.stdout)?.[0] ?? '';
  if (r.code !== 0) {
    const firstFail = /^VERDICT: FAIL: .*$/m.exec(r.stdout)?.[0] ?? '';
    throw new Error(`aer1-verify-anchor --dir exited ${r.code} after ${Math.round(r.ms)} ms: ${summary || r.stderr.trim()} ${firstFail}`);
  }
  return { files, wallMs: r.ms, proofsPerS: files / (r.ms / 1000), summary, exitCode: r.code, load: load() };
}

/** One `aer1-verify-anchor FILE` from a cold start (a new Node process), in ms. */
export async function verifyOneCold(file: string, headersFile: string | null, timeoutMs: number): Promise<number> {
  const r = await runBin([file, ...headerArgs(headersFile)], timeoutMs);
  if (r.code !== 0) throw new Error(`aer1-verify-anchor ${file} exited ${r.code}: ${/^VERDICT: .*$/m.exec(r.stdout)?.[0] ?? r.stderr.trim()}`);
  return r.ms;
}

export function firstProof(dir: string): string {
  const name = readdirSync(dir).filter((f) => f.endsWith('.json')).sort()[0];
  if (!name) throw new Error(`no proof files in ${dir}`);
  return join(dir, name);
}
