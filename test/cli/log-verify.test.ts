/**
 * `aer1-anchor log verify` and `keygen --log` as a user runs them: a log written by the
 * writer, read from its folder and over loopback HTTP, against the key the caller trusts;
 * a tampered bundle, tile or checkpoint, a missing tile, a fork and a rollback each FAIL
 * with the place named; an untrusted signer establishes nothing (exit 3); usage errors exit 2.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey, parseSignerKey } from '../../src/core/log/note.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { runAnchorCli } from '../helpers/harness.js';

const repoRoot = resolve(import.meta.dirname, '../..');
const bin = join(repoRoot, 'bin/aer1-anchor.js');
const work = mkdtempSync(join(tmpdir(), 'aer1-log-verify-'));
let server: Server | undefined;
afterAll(async () => {
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  rmSync(work, { recursive: true, force: true });
});

const ORIGIN = 'example.test/aer1';
const signer = generateSignerKey(ORIGIN).signer;
const VKEY = signer.verifierKey;
const dir = join(work, 'log');
const entry = (i: number) => ({ digest: createHash('sha256').update(`s${i}`).digest(), kind: 'receipt' as const, key: `r/${i}` });

const cli = (args: string[]) => runAnchorCli(args, { cwd: work });

/** A copy of the log to break. */
function copy(name: string): string {
  const to = join(work, name);
  cpSync(dir, to, { recursive: true });
  return to;
}

function flip(file: string, at: number): void {
  const b = readFileSync(file);
  b[at]! ^= 1;
  writeFileSync(file, b);
}

beforeAll(async () => {
  const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
  for (let i = 0; i < 600; i++) w.append(entry(i));
  await w.checkpoint();
  copyFileSync(join(dir, 'checkpoint'), join(work, 'old-600'));
  for (let i = 600; i < 2000; i++) w.append(entry(i));
  await w.checkpoint();
  // tlog-tiles content types and caching: the checkpoint short-lived, tiles immutable
  server = createServer((req, res) => {
    const path = join(dir, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    if (!path.startsWith(dir) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end();
      return;
    }
    const isCheckpoint = path.endsWith('/checkpoint');
    res.writeHead(200, {
      'content-type': isCheckpoint ? 'text/plain; charset=utf-8' : 'application/octet-stream',
      'cache-control': isCheckpoint ? 'no-cache' : 'public, max-age=31536000, immutable',
    });
    res.end(readFileSync(path));
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
}, 60_000);

describe('aer1-anchor log verify', () => {
  it('PASSes a log in a folder and over loopback HTTP, with an older checkpoint proven consistent', async () => {
    const r = await cli(['log', 'verify', dir, '--log-key', VKEY, '--checkpoint', join(work, 'old-600')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`checkpoint: ${ORIGIN}, size 2000`);
    expect(r.stdout).toContain('ok   entries: 2000 entries read from 8 bundles');
    expect(r.stdout).toContain('ok   tiles: 9 tiles read');
    expect(r.stdout).toMatch(/ok {3}consistency: .*old-600: size 600 is a prefix of size 2000/);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('PASS');
    const port = (server!.address() as { port: number }).port;
    const h = await cli(['log', 'verify', `http://127.0.0.1:${port}/`, '--log-key', VKEY, '--json']);
    expect(h.code).toBe(0);
    const report = JSON.parse(h.stdout) as { verdict: string; checkpoint: { size: number }; checks: { name: string; status: string }[] };
    expect(report.verdict).toBe('PASS');
    expect(report.checkpoint.size).toBe(2000);
    expect(report.checks.map((c) => `${c.name}:${c.status}`)).toEqual(['checkpoint:pass', 'entries:pass', 'tiles:pass', 'root:pass']);
  });

  it('establishes nothing when no key given signed the checkpoint (exit 3), and FAILs a signature that does not verify', async () => {
    const stranger = generateSignerKey(ORIGIN).signer.verifierKey;
    const r = await cli(['log', 'verify', dir, '--log-key', stranger]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/n\/a {2}checkpoint: signer not trusted: signed by example\.test\/aer1\+[0-9a-f]{8}/);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('NOTHING ESTABLISHED');
    const forged = copy('forged');
    const text = readFileSync(join(forged, 'checkpoint'), 'utf8');
    writeFileSync(join(forged, 'checkpoint'), text.replace('\n2000\n', '\n1999\n'));
    const f = await cli(['log', 'verify', forged, '--log-key', VKEY]);
    expect(f.code).toBe(1);
    expect(f.stdout).toMatch(/FAIL checkpoint: the signature by example\.test\/aer1\+[0-9a-f]{8}\+\S+ does not verify/);
  });

  it('FAILs an altered entry, an altered tile above level 0 and a missing tile, naming where', async () => {
    const a = copy('entry');
    flip(join(a, 'tile/entries/005'), 2 + 5);
    const r1 = await cli(['log', 'verify', a, '--log-key', VKEY, '--checkpoint', join(work, 'old-600')]);
    expect(r1.code).toBe(1);
    expect(r1.stdout).toContain('FAIL entries: 1 problem: entry 1280 does not hash to tile/0/005[0]');
    expect(r1.stdout).toContain('ok   root: the tiles hash to the checkpoint');
    // the tree still holds together, so the older checkpoint is still held against it
    expect(r1.stdout).toMatch(/ok {3}consistency: .*old-600: size 600 is a prefix of size 2000/);

    const b = copy('tile1');
    flip(join(b, 'tile/1/000.p/7'), 32 * 3);
    const r2 = await cli(['log', 'verify', b, '--log-key', VKEY]);
    expect(r2.code).toBe(1);
    expect(r2.stdout).toContain('FAIL tiles: 1 problem: tile/1/000.p/7[3] is not the hash of the tile below');

    const c = copy('missing');
    unlinkSync(join(c, 'tile/0/004'));
    const r3 = await cli(['log', 'verify', c, '--log-key', VKEY, '--checkpoint', join(work, 'old-600')]);
    expect(r3.code).toBe(1);
    expect(r3.stdout).toContain('FAIL tiles: tile/0/004: missing: the checkpoint\'s size needs it');
    expect(r3.stdout).toMatch(/FAIL consistency: .*old-600: not checked/);

    const d = copy('bundle');
    writeFileSync(join(d, 'tile/entries/007.p/208'), Buffer.from([0xff, 0xff, 1, 2]));
    const r4 = await cli(['log', 'verify', d, '--log-key', VKEY]);
    expect(r4.code).toBe(1);
    expect(r4.stdout).toContain('FAIL tiles: tile/entries/007.p/208: entry 0: 65535 bytes announced, 2 left (at byte 0)');
  });

  it('FAILs an older checkpoint of a fork (same key, another history) and one larger than the log (a rollback)', async () => {
    const forkDir = join(work, 'fork');
    const fw = await LogWriter.open({ dir: forkDir, origin: ORIGIN, signer });
    for (let i = 0; i < 600; i++) fw.append(i === 300 ? entry(-1) : entry(i));
    await fw.checkpoint();
    const r = await cli(['log', 'verify', dir, '--log-key', VKEY, '--checkpoint', join(forkDir, 'checkpoint')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL consistency: .*fork\/checkpoint: size 600 root \S+ is not a prefix of this log \(a fork: both checkpoints are signed\); the tiles give \S+ at that size/);

    const bigger = join(work, 'bigger');
    writeFileSync(bigger, signCheckpoint({ origin: ORIGIN, size: 3000, root: Buffer.alloc(32, 3), extensions: [] }, signer));
    const r2 = await cli(['log', 'verify', dir, '--log-key', VKEY, '--checkpoint', bigger]);
    expect(r2.code).toBe(1);
    expect(r2.stdout).toContain('signed at size 3000, larger than the log\'s 2000: the log was truncated or rolled back');
  });

  it('refuses bad usage with exit 2: no key, a malformed key, a remote URL, no checkpoint, a size over --max-entries', async () => {
    expect((await cli(['log', 'verify', dir])).stderr).toMatch(/needs --log-key/);
    const bad = await cli(['log', 'verify', dir, '--log-key', VKEY.replace(/\+[0-9a-f]{8}\+/, '+00000000+')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--log-key 1: the hash 00000000 does not match the name and key/);
    const remote = await cli(['log', 'verify', 'https://log.example.com/', '--log-key', VKEY]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toMatch(/log\.example\.com is not on this machine/);
    const none = await cli(['log', 'verify', work, '--log-key', VKEY]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no checkpoint at .*: is it the log's prefix\?/);
    const big = await cli(['log', 'verify', dir, '--log-key', VKEY, '--max-entries', '1000']);
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/checkpoint\.size: 2000 is over the 1000 entries this run reads \(raise --max-entries\)/);
    const hostile = join(work, 'hostile');
    cpSync(dir, hostile, { recursive: true });
    writeFileSync(join(hostile, 'checkpoint'), 'x'.repeat(70_000));
    const h = await cli(['log', 'verify', hostile, '--log-key', VKEY]);
    expect(h.code).toBe(1);
    expect(h.stdout).toMatch(/FAIL checkpoint: checkpoint: over 65536 bytes/);
  });
});

describe('aer1-anchor keygen --log', () => {
  it('writes a 0600 key file and prints its verifier key; log verify accepts a log signed by it', async () => {
    const file = join(work, 'k2.key');
    const r = spawnSync(process.execPath, [bin, 'keygen', '--log', '--name', 'example.test/k2', '--out', file], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
    const [vkey, wrote] = r.stdout.trim().split('\n') as [string, string];
    expect(vkey).toMatch(/^example\.test\/k2\+[0-9a-f]{8}\+A[A-Za-z0-9+/]{43}$/);
    expect(wrote).toBe(`wrote ${file} (mode 0600)`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, 'utf8').trim();
    // PRIVATE+KEY+<name>+<hash>+<base64>: the base64 may itself hold '+'
    const secretPart = secret.split('+').slice(4).join('+');
    expect(secretPart).toMatch(/^[A-Za-z0-9+/]{40,}$/);
    expect(r.stdout).not.toContain(secretPart);
    const logDir = join(work, 'k2-log');
    const w = await LogWriter.open({ dir: logDir, origin: 'example.test/k2', signer: parseSignerKey(secret) });
    w.append(entry(1));
    await w.checkpoint();
    expect((await cli(['log', 'verify', logDir, '--log-key', vkey])).code).toBe(0);
  });

  it('needs --name with --log, refuses a name with a space, and refuses --name without --log', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [bin, 'keygen', ...args], { encoding: 'utf8', timeout: 30_000, cwd: work });
    expect(run(['--log']).stderr).toMatch(/keygen --log needs --name NAME/);
    expect(run(['--log', '--name', 'a b', '--out', join(work, 'x.key')]).status).toBe(2);
    expect(run(['--name', 'a']).stderr).toMatch(/--name names a log key: add --log/);
  });
});
