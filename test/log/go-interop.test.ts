/**
 * An implementation written apart from ours reads our log: Go's golang.org/x/mod/sumdb/note
 * and sumdb/tlog (Debian's golang-golang-x-mod-dev, built offline in GOPATH mode) check the
 * checkpoint's signature with our verifier key, rebuild the tree from the entry bundles,
 * compare every tile byte for byte with the tiles tlog would serve, read the tree through
 * tlog.TileHashReader, and check our inclusion and consistency proofs (and that they are
 * the proofs tlog itself makes). Go is required: CI installs it (.ci/run).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSignerKey } from '../../src/core/log/note.js';
import { tilesOfTree } from '../../src/core/log/tiles.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';

const work = mkdtempSync(join(tmpdir(), 'aer1-log-go-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const checker = join(work, 'go-checker');
const ORIGIN = 'example.test/aer1/0';
const signer = generateSignerKey(ORIGIN).signer;

interface GoReport {
  origin: string; size: number; signatureOk: boolean; rootFromEntries: boolean; rootFromTiles: boolean; entries: number;
  tilesIdentical: number; inclusionOk: number; inclusionSameAsGo: number; consistencyOk: number; consistencySameAsGo: number; problems: string[];
}

function runChecker(dir: string, vkey: string, proofs: unknown): GoReport {
  const file = join(work, `proofs-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(proofs));
  const r = spawnSync(checker, [dir, vkey, file], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as GoReport;
}

const hex = (hs: Buffer[]): string[] => hs.map((h) => h.toString('hex'));
const dir = join(work, 'log');
const olds: { file: string; size: number }[] = [];
let inclusion: { index: number; size: number; path: string[] }[] = [];
let consistency: { old: string; proof: string[] }[] = [];

beforeAll(async () => {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error || go.status !== 0) throw new Error('go is not installed: apt-get install golang-go golang-golang-x-mod-dev (.ci/run installs them)');
  const build = spawnSync('go', ['build', '-o', checker, 'main.go'], {
    cwd: join(import.meta.dirname, 'go-checker'),
    encoding: 'utf8',
    timeout: 120_000,
    // offline, GOPATH mode, against Debian's source of golang.org/x/mod
    env: { ...process.env, GOPATH: '/usr/share/gocode', GO111MODULE: 'off', GOFLAGS: '', GOPROXY: 'off', GOCACHE: join(work, 'gocache'), HOME: work },
  });
  if (build.status !== 0) throw new Error(`go build failed (is golang-golang-x-mod-dev installed?): ${build.stderr}`);

  const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
  const stops = [1, 1000, 65_536, 66_666];
  let i = 0;
  for (const stop of stops) {
    for (; i < stop; i++) w.append({ digest: createHash('sha256').update(`s${i}`).digest(), kind: (['receipt', 'workflow_close', 'job_timeline'] as const)[i % 3]!, key: `subject/${i}` });
    await w.checkpoint();
    const file = join(work, `checkpoint-${stop}`);
    copyFileSync(join(dir, 'checkpoint'), file);
    olds.push({ file, size: stop });
  }
  const size = 66_666;
  const indexes = new Set<number>([0, 255, 256, 65_535, 65_536, size - 1]);
  for (let k = 0; k < size; k += 97) indexes.add(k);
  inclusion = [...indexes].map((index) => ({ index, size, path: hex(w.inclusionProof(index)) }));
  for (let k = 0; k < 1000; k++) inclusion.push({ index: k, size: 1000, path: hex(w.inclusionProof(k, 1000)) });
  consistency = olds.map((o) => ({ old: o.file, proof: hex(w.consistencyProof(o.size)) }));
}, 120_000);

describe('Go\'s sumdb/note and sumdb/tlog read our log', () => {
  it('agree on the signature, the tree hash, every entry, every tile, every inclusion path and consistency from each older checkpoint', () => {
    const r = runChecker(dir, signer.verifierKey, { inclusion, consistency });
    expect(r.problems).toEqual([]);
    expect(r).toMatchObject({ origin: ORIGIN, size: 66_666, signatureOk: true, rootFromEntries: true, rootFromTiles: true, entries: 66_666 });
    expect(r.tilesIdentical).toBe(tilesOfTree(66_666).length);
    expect(inclusion.length).toBeGreaterThan(1600);
    expect(r.inclusionOk).toBe(inclusion.length);
    expect(r.inclusionSameAsGo).toBe(inclusion.length);
    expect(r.consistencyOk).toBe(4);
    expect(r.consistencySameAsGo).toBe(4);
  });

  it('and disagree when a tile byte, an entry, a proof hash or the signing key is not ours', () => {
    const bad = join(work, 'bad');
    cpSync(dir, bad, { recursive: true });
    const tile = join(bad, 'tile/0/100');
    const bytes = readFileSync(tile);
    bytes[5]! ^= 1;
    writeFileSync(tile, bytes);
    const bundle = join(bad, 'tile/entries/200');
    const entries = readFileSync(bundle);
    entries[10]! ^= 1;
    writeFileSync(bundle, entries);
    const bent = inclusion.slice(0, 1).map((p) => ({ ...p, path: [p.path[0]!.replace(/^./, (c) => (c === '0' ? '1' : '0')), ...p.path.slice(1)] }));
    const r = runChecker(bad, signer.verifierKey, { inclusion: bent, consistency: [] });
    expect(r.rootFromEntries).toBe(false);
    expect(r.problems).toContain('tile/0/100 differs from Go\'s tile');
    expect(r.problems).toContain('tile/0/200 differs from Go\'s tile');
    expect(r.inclusionOk).toBe(0);

    const stranger = generateSignerKey(ORIGIN).signer;
    const other = runChecker(dir, stranger.verifierKey, { inclusion: [], consistency: [] });
    expect(other.signatureOk).toBe(false);
    expect(other.problems).toEqual(['checkpoint: note has no verifiable signatures']);
  });
});
