/**
 * A daemon a test spawns dies with the test: with --stop-on-stdin-eof on a pipe only its
 * parent holds, the parent's death (even SIGKILL, which runs no exit handler) closes the
 * pipe and the daemon stops as on SIGTERM. Without the flag the same daemon outlives its
 * parent: that is how one once ran on for 1 h 48 min after its test.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { REPO_ROOT, SHARED_REDIS_URL, spawnAnchord, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const DAEMON = join(REPO_ROOT, 'bin/aer1-anchord.js');

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('a spawned aer1-anchord and its parent', () => {
  let relays: DevRelay[] = [];
  let configFile = '';
  const strays: number[] = [];

  beforeAll(async () => {
    relays = await startRelays(1);
    const config = testConfig({ relays });
    const dir = tempDir('parent-death');
    const keyFile = join(dir, 'nostr.key');
    writeKeyFile(keyFile);
    configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ ...config, redis: { ...config.redis, url: SHARED_REDIS_URL }, nostr: { ...config.nostr, keyFile }, log: { ...config.log, level: 'info', format: 'json' } }));
  });

  afterAll(async () => {
    for (const pid of strays) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await Promise.all(relays.map((r) => r.close()));
  });

  it('stops when the parent is SIGKILLed; the same daemon without the flag outlives it', { timeout: 90_000 }, async () => {
    // The parent: spawns one daemon with the flag on a stdin pipe, one without, prints their pids, then idles.
    const parentJs = `
      const { spawn } = require('node:child_process');
      const start = (flag) => spawn(process.execPath, [${JSON.stringify(DAEMON)}, '--config', ${JSON.stringify(configFile)}, ...flag], { stdio: ['pipe', 'ignore', 'inherit'] });
      const a = start(['--stop-on-stdin-eof']);
      const b = start([]);
      process.stdout.write(JSON.stringify({ flagged: a.pid, plain: b.pid }) + '\\n');
      setInterval(() => undefined, 1000);
    `;
    const parent = spawn(process.execPath, ['-e', parentJs], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    parent.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    parent.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const pids = await waitFor('the daemons pids', () => (out.includes('\n') ? (JSON.parse(out) as { flagged: number; plain: number }) : null), 10_000, 20);
    strays.push(pids.flagged, pids.plain);
    await waitFor('both daemons ready', () => err.split('\n').filter((l) => l.includes('"aer1-anchord ready"')).length === 2, 30_000, 50);

    const gone = new Promise((resolve) => parent.once('exit', resolve));
    parent.kill('SIGKILL');
    await gone;
    await waitFor('the flagged daemon gone', () => !alive(pids.flagged), 30_000, 50);
    expect(err).toMatch(/"signal":"stdin-eof".*"msg":"stopping: no new jobs/);
    expect(err).toMatch(/"msg":"stopped"/);
    // the control: nothing but the flag differs, and that one is still running
    expect(alive(pids.plain)).toBe(true);
    process.kill(pids.plain, 'SIGTERM');
    await waitFor('the plain daemon stopped by its pid', () => !alive(pids.plain), 30_000, 50);
  });

  it("the harness's spawnAnchord: closing its stdin stops the daemon cleanly (exit 0)", { timeout: 60_000 }, async () => {
    const child = spawnAnchord(['--config', configFile], { cwd: tempDir('daemon') });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor('ready', () => err.includes('"aer1-anchord ready"'), 30_000, 50);
    child.stdin.end();
    expect(await exited).toBe(0);
  });
});
