/**
 * Dropping the daemon's connections at the end of a stop's grace (Daemon.stop) must not leave a
 * BullMQ worker spinning. A worker that is closing retries a command that failed with
 * "Connection is closed." at once and for ever (retryIfFailed skips its delay while closing), so
 * a plain disconnect() under a job scheduler's next-iteration upsert turned the process into a
 * busy loop: timers never fired again (seen in the suite: a test file stuck at 40 % CPU for
 * 10 minutes, its own timeout never reached). The case runs in a child process the test kills
 * when it does not exit by itself, so a spin fails the test instead of hanging it.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { privateRedis, REPO_ROOT } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

function runChild(redisUrl: string, redisPid: number, limitMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'test/daemon/stop-drop-spin.child.mjs'), redisUrl, String(redisPid)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  return new Promise((resolve) => child.on('exit', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, out: out.slice(-2000) });
  }));
}

it('a worker caught closing under a frozen Redis stops once its connection is dropped: no busy loop', { timeout: 60_000 }, async () => {
  const redis = await privateRedis(false);
  cleanups.push(() => redis.stop());
  cleanups.push(async () => redis.child.kill('SIGCONT'));
  const result = await runChild(redis.url, redis.child.pid!, 30_000);
  expect(result.out).toContain('timer fired after the drop');
  expect({ code: result.code, signal: result.signal }).toEqual({ code: 0, signal: null });
});
