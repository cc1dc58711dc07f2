/**
 * `aer1-anchor dev-stack --json` through the built bin, as a developer runs it: one JSON
 * line once up, the relays with the profiles asked, a daemon that takes a receipt with the
 * printed token, calendars that mine on their own into the printed headers file, a config
 * file the client commands read; SIGTERM stops everything (exit 0, no port answering, its
 * process group gone).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DevStackInfo } from '../../src/dev/stack/dev-stack.js';
import { portAnswers } from '../../src/dev/stack/stack.js';
import { fixturePath } from '../fixtures/index.js';

const repo = resolve(import.meta.dirname, '../..');
const anchorBin = join(repo, 'bin/aer1-anchor.js');
const base = mkdtempSync(join(tmpdir(), 'aer1-dev-stack-test-'));
const UP_LIMIT_MS = 30_000;
const EXIT_LIMIT_MS = 30_000;

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Resolves with the first stdout line, bounded. */
function firstLine(child: ChildProcessWithoutNullStreams, stderr: () => string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`dev-stack printed no line within ${UP_LIMIT_MS} ms; stderr: ${stderr().slice(-2000)}`)), UP_LIMIT_MS);
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      const nl = text.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolvePromise(text.slice(0, nl));
      }
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`dev-stack exited (${code}) before printing; stderr: ${stderr().slice(-2000)}`));
    });
  });
}

function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`dev-stack did not exit within ${EXIT_LIMIT_MS} ms of SIGTERM`)), EXIT_LIMIT_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise(code);
    });
  });
}

/** Polls `check` every 100 ms until it holds, at most `ms`. */
async function until(what: string, ms: number, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < ms / 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not within ${ms} ms: ${what}`);
}

describe('aer1-anchor dev-stack --json (built bin)', () => {
  it('comes up, anchors and mines on its own, and SIGTERM stops everything with its ports closed', async () => {
    const out = join(base, 'stack');
    const child = spawn(process.execPath, [anchorBin, 'dev-stack', '--json', '--out', out, '--relay-profile', 'damus,open', '--calendars', '1', '--mine-every', '200'], {
      cwd: base, detached: true, stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? base },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const info = JSON.parse(await firstLine(child, () => stderr)) as DevStackInfo;
      expect(info.network).toBe('regtest');
      expect(info.http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.token).toMatch(/^[0-9a-f]{48}$/);
      expect(info.relay_profiles).toEqual(['damus', 'open']);
      expect(info.relays).toHaveLength(2);
      for (const url of info.relays) expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
      expect(info.calendars).toHaveLength(1);
      expect(info.signer).toMatch(/^[0-9a-f]{64}$/);
      expect(info.headers).toBe(join(out, 'headers.json'));
      expect(info.config).toBe(join(out, 'config.json'));
      expect(statSync(info.config).mode & 0o077, 'the config holds the token: not readable by others').toBe(0);

      // the daemon answers with the signer and witnesses printed
      const infoRes = await fetch(`${info.http}/v1/info`);
      const daemonInfo = (await infoRes.json()) as { nostr: { pubkey: string; relays: string[] }; ots: { network: string; calendars: string[] } };
      expect(daemonInfo.nostr.pubkey).toBe(info.signer);
      expect(daemonInfo.ots.network).toBe('regtest');
      expect(daemonInfo.nostr.relays).toHaveLength(2);

      // a receipt POSTed with the printed token is confirmed without anyone mining by hand
      const post = await fetch(`${info.http}/v1/anchors`, {
        method: 'POST', headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' }, body: readFileSync(fixturePath('receipt-minimal')),
      });
      expect(post.status).toBe(202);
      const key = ((await post.json()) as { keys: string[] }).keys[0]!;
      await until(`${key} confirmed`, 20_000, async () => ((await (await fetch(`${info.http}/v1/anchors/${key}`)).json()) as { status: string }).status === 'confirmed');
      const headers = JSON.parse(readFileSync(info.headers, 'utf8')) as Record<string, string>;
      expect(Object.keys(headers).length).toBeGreaterThanOrEqual(1);
      expect(stderr).toMatch(/mined block \d+ [0-9a-f]{64} \(1 commitment\)/);

      // the written config is what the client commands read
      const status = spawnSync(process.execPath, [anchorBin, 'status', key, '--config', info.config, '--json'], { encoding: 'utf8', timeout: 20_000 });
      expect(status.status, status.stderr).toBe(0);
      expect((JSON.parse(status.stdout) as { status: string }).status).toBe('confirmed');

      child.kill('SIGTERM');
      expect(await exited(child), stderr.slice(-2000)).toBe(0);
      expect(stderr).toContain('none answering');
      for (const port of info.ports) expect(await portAnswers(port), `port ${port} still answers`).toBe(false);
      await until('the process group gone', 5000, () => !groupAlive(child.pid!));
      expect(existsSync(info.headers), 'the headers file is kept for verifying later').toBe(true);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });

  it('refuses an unknown relay profile and a bad number (exit 2, one line), and is in the usage', () => {
    const bad = spawnSync(process.execPath, [anchorBin, 'dev-stack', '--relay-profile', 'open,nope', '--out', join(base, 'never')], { encoding: 'utf8', timeout: 20_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('aer1-anchor: dev-stack: --relay-profile: "nope" is not a profile; use a comma-separated list of open, damus, pow, auth, strict, paid, restricted\n');
    const num = spawnSync(process.execPath, [anchorBin, 'dev-stack', '--mine-every', '5', '--out', join(base, 'never')], { encoding: 'utf8', timeout: 20_000 });
    expect(num.status).toBe(2);
    expect(num.stderr).toContain('--mine-every must be an integer 100-3600000');
    expect(existsSync(join(base, 'never')), 'nothing is created before the flags are checked').toBe(false);
    const help = spawnSync(process.execPath, [anchorBin, '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect(help.stdout).toMatch(/^ {2}dev-stack +keep the daemon, dev relays and self-mining dev calendars/m);
  });
});
