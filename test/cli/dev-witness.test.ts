/**
 * `aer1-anchor dev-witness` as a user runs it: it prints its URL and verifier key, makes
 * its key file (0600) under --state, cosigns a checkpoint of the origin it was given,
 * keeps the key across a restart, and stops on SIGTERM; bad flags are one-line usage
 * errors (exit 2).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { WitnessClient } from '../../src/adapters/witness/witness-client.js';
import { openLog, ORIGIN, tempDir } from '../witness/witness-fixtures.js';
import { REPO_ROOT } from '../helpers/harness.js';

const BIN = join(REPO_ROOT, 'bin', 'aer1-anchor.js');
const tmp = tempDir('aer1-cli-dev-witness-');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  tmp.remove();
});

async function start(args: string[]): Promise<{ child: ChildProcess; info: { url: string; vkey: string; state: string } }> {
  const child = spawn(process.execPath, [BIN, 'dev-witness', ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const first = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no first line within 15 s')), 15_000);
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, info: JSON.parse(first) as { url: string; vkey: string; state: string } };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('aer1-anchor dev-witness', () => {
  it('prints its URL and vkey, cosigns the origin it was given, and keeps its key across a restart', async () => {
    const log = await openLog(join(tmp.dir, 'log'));
    const state = join(tmp.dir, 'state');
    const args = ['--state', state, '--name', 'witness.test/cli', '--origin', ORIGIN, '--log-key', log.signer.verifierKey];
    const { child, info } = await start(args);
    expect(info.vkey).toMatch(/^witness\.test\/cli\+[0-9a-f]{8}\+B[A-P]/);
    expect(statSync(join(state, 'witness.key')).mode & 0o777).toBe(0o600);
    const client = new WitnessClient(info.url, info.vkey);
    const r = await client.addCheckpoint(await log.grow(3), () => []);
    expect(r.lines).toHaveLength(1);
    expect(await stop(child)).toBe(0);
    const again = await start(args);
    expect(again.info.vkey).toBe(info.vkey);
    const r2 = await new WitnessClient(again.info.url, info.vkey).addCheckpoint(await log.grow(2), (o, n) => log.writer.consistencyProof(o, n));
    expect(r2).toMatchObject({ oldSize: 3, attempts: 2 });
    expect(await stop(again.child)).toBe(0);
  }, 40_000);

  it.each([
    ['no --state', ['--origin', ORIGIN], /^aer1-anchor: --state DIR is required \(see --help\)$/],
    ['a --log-key before any --origin', ['--state', join(tmp.dir, 's2'), '--log-key', 'x+00000000+AA=='], /^aer1-anchor: --log-key comes after the --origin it is trusted for$/],
    ['an --origin without a key', ['--state', join(tmp.dir, 's3'), '--origin', ORIGIN], /^aer1-anchor: --origin example\.test\/aer1\/0 has no --log-key$/],
    ['a malformed --log-key', ['--state', join(tmp.dir, 's4'), '--origin', ORIGIN, '--log-key', 'nope'], /^aer1-anchor: --log-key: not <name>\+<hash>\+<base64 key>$/],
    ['an unknown flag', ['--frobnicate', 'x'], /^aer1-anchor: Unknown option '--frobnicate' \(see --help\)$/],
  ])('%s: one line, exit 2', (_what, args, line) => {
    const r = spawnSync(process.execPath, [BIN, 'dev-witness', ...args], { encoding: 'utf8', timeout: 15_000 });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trim()).toMatch(line);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
