/**
 * `npm start` under a supervisor that signals only its child: SIGTERM to the npm process
 * reaches the daemon, which stops its embedded redis-server and exits; nothing is left
 * running by pid. (npm forwards SIGTERM to the script's shell; a shell running
 * `a && b` dies of it and orphans `b`, so the start script execs the daemon.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { redisServersIn } from '../../src/daemon/embedded-redis.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { REPO_ROOT, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

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

/** Pids of the node processes running aer1-anchord with `configFile` (read from /proc). */
function daemonsWith(configFile: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv.some((a) => a.endsWith('bin/aer1-anchord.js')) && argv.includes(configFile)) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('npm start', () => {
  const home = tempDir('npm-start');
  const dataDir = join(home, 'redis');
  const configFile = join(home, 'config.json');
  let relays: DevRelay[] = [];
  let npm: ChildProcess | null = null;
  const strays: number[] = [];

  beforeAll(async () => {
    relays = await startRelays(1);
    const keyFile = join(home, 'nostr.key');
    writeKeyFile(keyFile);
    const config = testConfig({ relays });
    const redis = { ...config.redis, url: null, localDefault: false, embedded: true, embeddedDir: dataDir };
    writeFileSync(configFile, JSON.stringify({ ...config, redis, nostr: { ...config.nostr, keyFile }, log: { ...config.log, level: 'info', format: 'json' } }));
  });

  afterAll(async () => {
    if (npm && npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    // a failed run leaves the orphans behind: stop them by their pids
    for (const pid of [...strays, ...redisServersIn(dataDir)]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await waitFor('no process of the test left', () => [...strays, ...redisServersIn(dataDir)].every((p) => !alive(p)), 10_000, 50);
    await Promise.all(relays.map((r) => r.close()));
    rmSync(home, { recursive: true, force: true });
  });

  it('SIGTERM to the npm process stops the daemon and its embedded redis-server', { timeout: 90_000 }, async () => {
    npm = spawn('npm', ['start', '--silent', '--', '--config', configFile], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: home },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    npm.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<void>((resolve) => npm!.once('exit', () => resolve()));
    await waitFor('aer1-anchord ready', () => {
      if (npm!.exitCode !== null) throw new Error(`npm start exited ${npm!.exitCode}: ${err}`);
      return err.includes('"aer1-anchord ready"');
    }, 60_000, 50);
    const daemons = daemonsWith(configFile);
    const redisPids = redisServersIn(dataDir);
    strays.push(...daemons, ...redisPids);
    expect(daemons.length).toBe(1);
    const daemonPid = daemons[0]!;
    expect(daemonPid).not.toBe(npm.pid);
    expect(redisPids.length).toBe(1);
    expect(alive(daemonPid) && alive(redisPids[0]!)).toBe(true);

    npm.kill('SIGTERM');
    await exited;
    await waitFor('the daemon gone', () => !alive(daemonPid), 30_000, 50);
    await waitFor('its redis-server gone', () => !alive(redisPids[0]!), 30_000, 50);
    expect(err).toMatch(/"msg":"stopped"/);
  });
});
