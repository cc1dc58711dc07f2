/**
 * The demo's anchor log, read by an implementation written apart from ours: `aer1-anchor
 * demo --json --out DIR` (the built bin) writes the log folder into DIR and names it in its
 * summary (`log: {origin, vkey, dir}`); every proof it writes carries `log`. Go's
 * sumdb/note and sumdb/tlog (test/log/go-checker) then check the checkpoint's signature
 * with the demo's verifier key, the tree from every entry, every tile, and each proof's
 * inclusion path from the proof's own entry (rebuilt from its digest, kind and key) to the
 * root of the signed checkpoint the proof carries. Our `log verify` agrees.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoSummary } from '../../src/dev/demo/demo.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { encodeEntry, entryKindOfSubject } from '../../src/core/log/entry.js';
import { parseVerifierKey } from '../../src/core/log/note.js';
import { tilesOfTree } from '../../src/core/log/tiles.js';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { DirectorySource } from '../../src/adapters/log/log-source.js';

const repo = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'aer1-demo-log-go-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const checker = join(work, 'go-checker');
const out = join(work, 'out');
let summary: DemoSummary;

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, [join(repo, 'bin/aer1-anchor.js'), 'demo', '--json', '--out', out], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: work } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo did not exit within 120 s; stderr: ${stderr.slice(-2000)}`));
    }, 120_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  const build = spawnSync('go', ['build', '-o', checker, 'main.go'], {
    cwd: join(import.meta.dirname, 'go-checker'),
    encoding: 'utf8',
    timeout: 120_000,
    // offline, GOPATH mode, against Debian's source of golang.org/x/mod (.ci/run installs it)
    env: { ...process.env, GOPATH: '/usr/share/gocode', GO111MODULE: 'off', GOFLAGS: '', GOPROXY: 'off', GOCACHE: join(work, 'gocache'), HOME: work },
  });
  if (build.error || build.status !== 0) throw new Error(`go build failed (apt-get install golang-go golang-golang-x-mod-dev): ${build.stderr ?? build.error}`);
  const r = await runDemo();
  expect(r.code, r.stderr.slice(-2000)).toBe(0);
  summary = JSON.parse(r.stdout) as DemoSummary;
}, 240_000);

describe('the demo\'s anchor log', () => {
  it('is in --out, named in the summary, and every proof carries its inclusion; Go agrees on all of it', () => {
    expect(summary.ok).toBe(true);
    expect(summary.log).not.toBeNull();
    const log = summary.log!;
    expect(log.dir).toBe(join(out, 'log'));
    expect(parseVerifierKey(log.vkey).name).toBe(log.origin);
    const inclusion = summary.subjects.map((s) => {
      const doc = JSON.parse(readFileSync(s.files.document, 'utf8')) as { anchor_proof: AnchorProof };
      const proof = doc.anchor_proof;
      expect(proof.log, s.key).toBeDefined();
      expect(proof.log!.origin).toBe(log.origin);
      const size = Number(proof.log!.checkpoint.split('\n')[1]);
      const entry = encodeEntry({ digest: Buffer.from(proof.digest, 'hex'), kind: entryKindOfSubject(s.kind)!, key: s.key });
      return { index: proof.log!.index, size, path: proof.log!.path, entry: entry.toString('hex'), checkpoint: proof.log!.checkpoint };
    });
    expect(inclusion).toHaveLength(3);
    // each subject verified with the log key given: its log check passed
    for (const s of summary.subjects) expect(s.verify!.checks.find((c) => c.name === 'log')?.status, s.key).toBe('PASS');

    const file = join(work, 'proofs.json');
    writeFileSync(file, JSON.stringify({ inclusion, consistency: [] }));
    const go = spawnSync(checker, [log.dir, log.vkey, file], { encoding: 'utf8', timeout: 60_000 });
    expect(go.status, go.stderr).toBe(0);
    const r = JSON.parse(go.stdout) as { problems: string[]; signatureOk: boolean; rootFromEntries: boolean; rootFromTiles: boolean; entries: number; size: number; origin: string; tilesIdentical: number; inclusionOk: number };
    expect(r.problems).toEqual([]);
    expect(r).toMatchObject({ origin: log.origin, signatureOk: true, rootFromEntries: true, rootFromTiles: true, inclusionOk: 3 });
    expect(r.entries).toBe(r.size);
    expect(r.size).toBeGreaterThanOrEqual(3);
    expect(r.tilesIdentical).toBe(tilesOfTree(r.size).length);

    // a proof's entry that is not the log's: Go refuses it
    const forged = [{ ...inclusion[0]!, entry: inclusion[1]!.entry }];
    writeFileSync(file, JSON.stringify({ inclusion: forged, consistency: [] }));
    const bad = JSON.parse(spawnSync(checker, [log.dir, log.vkey, file], { encoding: 'utf8', timeout: 60_000 }).stdout) as { problems: string[]; inclusionOk: number };
    expect(bad.inclusionOk).toBe(0);
    expect(bad.problems.join('\n')).toMatch(/not the log's entry at that index/);
  });

  it('passes our own log verify with the demo\'s key', async () => {
    const report = await verifyLog(new DirectorySource(summary.log!.dir), { trusted: [parseVerifierKey(summary.log!.vkey)] });
    expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');
  });
});
