/**
 * `aer1-anchor dev-tsa`: prints its URL first, writes its CA certificate (PEM) to --out,
 * answers timestamp queries whose tokens chain to that CA, and stops cleanly on SIGTERM.
 * `aer1-anchor tsa stamp|verify` against it: exit 0 PASS, 1 FAIL, 3 TSA not trusted.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TsaClient } from '../../src/adapters/tsa/index.js';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import { parseTsaTrustAnchors } from '../../src/core/tsa/index.js';
import { stopChild } from '../../src/daemon/embedded-redis.js';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';

const BIN = join(REPO_ROOT, 'bin', 'aer1-anchor.js');
const dir = tempDir('dev-tsa-cli');
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) await stopChild(c);
  rmSync(dir, { recursive: true, force: true });
});

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`dev-tsa exited ${code}: ${err}`)));
  });
}

describe('aer1-anchor dev-tsa', () => {
  it('serves tokens that chain to the CA certificate it wrote, and exits 0 on SIGTERM', async () => {
    const out = join(dir, 'out');
    const child = spawn(process.execPath, [BIN, 'dev-tsa', '--port', '0', '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const anchors = parseTsaTrustAnchors(readFileSync(join(out, 'tsa-ca.pem'), 'utf8'));
    const got = await new TsaClient(url, { trustAnchors: anchors }).timestamp(new TextEncoder().encode('example.com/aer1\n1\nAAAA\n'));
    expect(got.check.status).toBe('PASS');

    // tsa stamp / verify by hand, on a checkpoint file
    const { signer } = generateSignerKey('example.com/aer1');
    const cp = (size: number): string => {
      const file = join(dir, `checkpoint-${size}`);
      writeFileSync(file, signCheckpoint({ origin: 'example.com/aer1', size, root: Buffer.alloc(32, size), extensions: [] }, signer));
      return file;
    };
    const ca = join(out, 'tsa-ca.pem');
    const token = join(dir, 'token.der');
    const cli = (...args: string[]) => spawnSync(process.execPath, [BIN, 'tsa', ...args], { encoding: 'utf8', timeout: 20_000 });
    const stamped = cli('stamp', url, '--checkpoint', cp(5), '--tsa-ca', ca, '--out', token, '--json');
    expect(stamped.status, stamped.stderr).toBe(0);
    expect(JSON.parse(stamped.stdout)).toMatchObject({ url, status: 'PASS', tsa: 'O=aer1-anchor development, CN=aer1-anchor dev TSA' });
    const ok = cli('verify', '--token', token, '--checkpoint', cp(5), '--tsa-ca', ca);
    expect([ok.status, ok.stdout]).toEqual([0, expect.stringMatching(/^PASS: time-stamped at \S+ by O=aer1-anchor development, CN=aer1-anchor dev TSA, chained to .*dev TSA CA\n$/)]);
    const untrusted = cli('verify', '--token', token, '--checkpoint', cp(5));
    expect([untrusted.status, untrusted.stdout]).toEqual([3, expect.stringMatching(/^TSA NOT TRUSTED: TSA not trusted: no TSA CA given \(give --tsa-ca\)/)]);
    const other = cli('verify', '--token', token, '--checkpoint', cp(6), '--tsa-ca', ca);
    expect([other.status, other.stdout]).toEqual([1, 'FAIL: the message imprint is not the SHA-256 of this data: the token time-stamps something else\n']);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('bad words are one-line usage errors (exit 2)', () => {
    const r2 = spawnSync(process.execPath, [BIN, 'tsa', 'verify', '--token', join(dir, 'missing')], { encoding: 'utf8', timeout: 20_000 });
    expect([r2.status, r2.stderr]).toEqual([2, expect.stringMatching(/^aer1-anchor: cannot read .*missing: ENOENT\n$/)]);
    const r = spawnSync(process.execPath, [BIN, 'dev-tsa', '--port', 'x', '--out', join(dir, 'never')], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^aer1-anchor: --port must be an integer in 0\.\.65535, got "x"\n$/);
  });
});
