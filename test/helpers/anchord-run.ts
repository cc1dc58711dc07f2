/**
 * The built `aer1-anchord` run as an operator runs it (a config file, an environment, a
 * working folder of its own), with what it wrote: wait for it to be ready, stop it cleanly,
 * or expect a start refused with exit 2 and one plain line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { spawnAnchord, stopChild, waitFor } from './harness.js';

export interface Run {
  child: ReturnType<typeof spawnAnchord>;
  /** Everything it wrote to stderr so far. */
  out: () => string;
  exited: Promise<number | null>;
}

/** A config file that sets nothing of the log: the witness is a calendar nobody answers on (the daemon starts all the same). */
export function quietConfigFile(dir: string, redisSettings: Record<string, unknown>): string {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ redis: redisSettings, nostr: { enabled: false }, ots: { calendars: ['http://127.0.0.1:9'], minCalendars: 1 }, http: { enabled: false } }));
  return file;
}

/** Starts it in `cwd` with JSON log lines; `cleanups` gets its stop. */
export function startAnchord(cwd: string, config: string, env: Record<string, string>, cleanups: Array<() => Promise<unknown>>): Run {
  const child = spawnAnchord(['--config', config], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, AER1_LOG_FORMAT: 'json', ...env } });
  cleanups.push(() => stopChild(child));
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out: () => out, exited };
}

/** The pino lines (level, msg) the run wrote. */
export function logLines(run: Run): Array<{ level: number; msg: string }> {
  return run.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });
}

/** Waits (bounded) for its ready line; an exit first fails at once with what it wrote. */
export async function ready(run: Run): Promise<void> {
  const isReady = (): boolean => logLines(run).some((l) => l.msg === 'aer1-anchord ready');
  await waitFor('aer1-anchord ready or exited', () => isReady() || run.child.exitCode !== null, 60_000, 50);
  if (!isReady()) throw new Error(`aer1-anchord exited ${run.child.exitCode} before it was ready: ${run.out()}`);
}

/** Closes its stdin (a stop as on SIGTERM) and expects a clean exit. */
export async function stop(run: Run): Promise<void> {
  run.child.stdin.end();
  expect(await run.exited, run.out()).toBe(0);
}

/** Waits (bounded) for a start that must be refused: exit 2 and its one plain line (the JSON lines are the log). */
export async function refusedLine(run: Run): Promise<string> {
  await waitFor('the refused start to exit', () => run.child.exitCode !== null || run.child.signalCode !== null, 60_000, 50);
  expect(run.child.exitCode, run.out()).toBe(2);
  expect(run.out()).not.toMatch(/^\s+at /m);
  const plain = run.out().split('\n').filter((l) => l !== '' && !l.startsWith('{'));
  expect(plain, run.out()).toHaveLength(1);
  return plain[0]!;
}
