/**
 * One exit-code convention across aer1-anchord, aer1-anchor and aer1-verify-anchor
 * (docs/operations.md: Exit codes): 0 ok, 1 a check or a job failed, 2 usage or unreadable input.
 * Every error is one line, and never quotes the input file's text.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, SHARED_REDIS_URL, tempDir, uniquePrefix } from '../helpers/harness.js';

const dir = tempDir('exit-codes');
const SECRET = 's3cr3t-token-in-the-file';
const files = {
  notJson: join(dir, 'not-json.json'),
  truncated: join(dir, 'truncated.json'),
  notADocument: join(dir, 'object.json'),
  badConfig: join(dir, 'bad-config.json'),
  config: join(dir, 'config.json'),
};
writeFileSync(files.notJson, `${SECRET} {\n`);
writeFileSync(files.truncated, `{"token": "${SECRET}"\n`);
writeFileSync(files.notADocument, '{"a": 1}\n');
writeFileSync(files.badConfig, '{"redis": {"prefix": 5}}\n');
writeFileSync(files.config, JSON.stringify({ redis: { prefix: uniquePrefix('exit') } }));
const missing = join(dir, 'missing.json');
const redis = ['--redis-url', SHARED_REDIS_URL, '--config', files.config];

type Row = [what: string, bin: 'aer1-anchord' | 'aer1-anchor' | 'aer1-verify-anchor', args: string[], code: 0 | 1 | 2, stderr: RegExp];

const ROWS: Row[] = [
  ['anchord: an unknown flag', 'aer1-anchord', ['--frobnicate'], 2, /^aer1-anchord: Unknown option '--frobnicate' \(see --help\)$/],
  ['anchord: a missing config file', 'aer1-anchord', ['--config', missing], 2, /cannot read config file .*missing\.json: ENOENT$/],
  ['anchord: a config file that is not JSON', 'aer1-anchord', ['--config', files.notJson], 2, /config file .* is not JSON: /],
  ['anchord: a bad setting', 'aer1-anchord', ['--config', files.badConfig], 2, /^aer1-anchord: config redis\.prefix: expected a non-empty string, got 5$/],
  ['anchor: an unknown command', 'aer1-anchor', ['frobnicate'], 2, /^aer1-anchor: unknown command 'frobnicate'/],
  ['anchor: an unknown flag', 'aer1-anchor', ['enqueue', '--frobnicate', 'x'], 2, /^aer1-anchor: Unknown option '--frobnicate' \(see --help\)$/],
  ['anchor: a missing file', 'aer1-anchor', ['enqueue', missing, ...redis], 2, /^aer1-anchor: cannot read .*missing\.json: ENOENT$/],
  ['anchor: a file that is not JSON', 'aer1-anchor', ['enqueue', files.notJson, ...redis], 2, /^aer1-anchor: .*not-json\.json is not JSON: /],
  ['anchor: truncated JSON', 'aer1-anchor', ['enqueue', files.truncated, ...redis], 2, /^aer1-anchor: .*truncated\.json is not JSON: /],
  ['anchor: a bad setting', 'aer1-anchor', ['status', 'k', '--config', files.badConfig], 2, /^aer1-anchor: config redis\.prefix: /],
  ['anchor: a document refused (a job failed)', 'aer1-anchor', ['enqueue', files.notADocument, ...redis], 1, /refused: .*not a receipt, a workflow close or a job timeline/],
  ['anchor: no such subject (a lookup failed)', 'aer1-anchor', ['status', 'no-such-key', ...redis], 1, /^aer1-anchor: no subject with key no-such-key$/],
  // Every aer1-anchor command refuses an unknown flag in one line, before it reads or starts anything.
  ...(['envelope', 'status', 'proof', 'keygen', 'ots info', 'ots verify', 'verify-anchor', 'audit', 'dev-relay', 'dev-calendar', 'demo'].map(
    (cmd): Row => [`anchor ${cmd}: an unknown flag`, 'aer1-anchor', [...cmd.split(' '), '--frobnicate', 'x'], 2, /^aer1-anchor: Unknown option '--frobnicate' \(see --help\)$/],
  )),
  // Every JSON input of every command: one line naming the file, never its text.
  ['anchor envelope: a file that is not JSON', 'aer1-anchor', ['envelope', files.notJson], 2, /^aer1-anchor: .*not-json\.json is not JSON: /],
  ['anchor envelope: truncated JSON', 'aer1-anchor', ['envelope', files.truncated], 2, /^aer1-anchor: .*truncated\.json is not JSON: /],
  ['anchor proof: an --attach file that is not JSON', 'aer1-anchor', ['proof', 'k', '--attach', files.notJson, ...redis], 2, /^aer1-anchor: .*not-json\.json is not JSON: /],
  ['anchor verify-anchor: a file that is not JSON', 'aer1-anchor', ['verify-anchor', files.truncated], 2, /^aer1-anchor: .*truncated\.json is not JSON: /],
  // A file that is not an .ots is a proof that fails its check (exit 1), in one line.
  ['anchor ots info: a file that is not an .ots', 'aer1-anchor', ['ots', 'info', files.notJson], 1, /^aer1-anchor: not an OpenTimestamps proof \(bad magic bytes\)/],
  ['anchor ots verify: a file that is not an .ots', 'aer1-anchor', ['ots', 'verify', files.truncated, '--digest', 'ab'.repeat(32)], 1, /^aer1-anchor: not an OpenTimestamps proof \(bad magic bytes\)/],
  ['verify: a --proof file that is not JSON', 'aer1-verify-anchor', [files.notADocument, '--proof', files.notJson], 2, /^aer1-verify-anchor: .*not-json\.json is not JSON: /],
  ['verify: a --headers file that is not JSON', 'aer1-verify-anchor', [files.notADocument, '--headers', files.truncated], 2, /^aer1-verify-anchor: .*truncated\.json/],
  ['verify: an unknown flag', 'aer1-verify-anchor', ['--frobnicate', 'x'], 2, /^aer1-verify-anchor: Unknown option '--frobnicate' \(see --help\)$/],
  ['verify: a missing file', 'aer1-verify-anchor', [missing], 2, /^aer1-verify-anchor: cannot read .*missing\.json: ENOENT$/],
  ['verify: a file that is not JSON', 'aer1-verify-anchor', [files.notJson], 2, /^aer1-verify-anchor: .*not-json\.json is not JSON: /],
  ['verify: truncated JSON', 'aer1-verify-anchor', [files.truncated], 2, /^aer1-verify-anchor: .*truncated\.json is not JSON: /],
];

describe('exit codes and error lines of the three CLIs', () => {
  it.each(ROWS)('%s', (_what, bin, args, code, stderr) => {
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', `${bin}.js`), ...args], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '', HOME: dir } });
    expect(r.status, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(code);
    // errors go to stderr; enqueue reports each file's result (a refusal too) on stdout
    const lines = (r.stderr + r.stdout).split('\n').filter((l) => l !== '');
    expect(lines, r.stderr + r.stdout).toHaveLength(1);
    expect(lines[0]).toMatch(stderr);
    expect(r.stderr + r.stdout).not.toContain(SECRET);
  });
});

describe('aer1-anchord on an HTTP address it cannot take', () => {
  it('exits 2 with one line naming the address and the keys to change, no stack trace', async () => {
    const { createServer } = await import('node:net');
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const cfg = join(dir, 'port-taken.json');
      writeFileSync(cfg, JSON.stringify({ redis: { prefix: uniquePrefix('port-taken') }, nostr: { enabled: false }, ots: { calendars: ['http://127.0.0.1:9'], minCalendars: 1 }, http: { port } }));
      const { spawn } = await import('node:child_process');
      // spawned (not spawnSync): the port's holder lives in this process and must keep answering
      const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'aer1-anchord.js'), '--config', cfg], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, AER1_LOG_FORMAT: 'json', REDIS_URL: SHARED_REDIS_URL }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(null);
        }, 30_000);
        child.on('exit', (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      expect(code, out).toBe(2);
      const plain = out.split('\n').filter((l) => l !== '' && !l.startsWith('{'));
      expect(plain, out).toEqual([expect.stringMatching(new RegExp(`^aer1-anchord: the HTTP server cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use .*http\\.port`))]);
      expect(out).not.toMatch(/^\s+at /m);
    } finally {
      holder.close();
    }
  });
});
