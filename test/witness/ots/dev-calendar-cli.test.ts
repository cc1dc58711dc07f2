import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CalendarClient } from '../../../src/adapters/ots/calendar/index.js';
import { parseTimestamp } from '../../../src/core/ots/codec.js';
import { pendingAttestations } from '../../../src/core/ots/timestamp.js';

const repo = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const bin = join(repo, 'bin/aer1-anchor.js');
const built = join(repo, 'dist/src/cli/commands/dev-calendar.js');
const dir = mkdtempSync(join(tmpdir(), 'aer1-devcal-cli-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolveLine, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      rl.close();
      resolveLine(line);
    });
    child.once('exit', (code) => reject(new Error(`dev-calendar exited (${code}) before printing its URL`)));
  });
}

describe('aer1-anchor dev-calendar', () => {
  it('needs a build (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(built), `${built} is missing: run npx tsc -p tsconfig.json first`).toBe(true);
  });

  it('prints its URL first, speaks the protocol, mines into the headers file, and exits 0 on SIGTERM', async () => {
    const headers = join(dir, 'headers.json');
    const child = spawn(process.execPath, [bin, 'dev-calendar', '--port', '0', '--headers-out', headers, '--aggregation-ms', '20', '--start-height', '10'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const client = new CalendarClient(url, { timeoutMs: 5000 });
    const answer = await client.submit(createHash('sha256').update('cli').digest());
    expect(answer.subarray(0, 2).toString('hex')).toBe('f010');
    const mined = await fetch(`${url}/mine`, { method: 'POST' });
    const body = (await mined.json()) as { height: number; headerHex: string; count: number };
    expect(body).toMatchObject({ height: 10, count: 1 });
    expect(JSON.parse(readFileSync(headers, 'utf8'))).toEqual({ '10': body.headerHex });

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain('SIGTERM');
  });

  it('--not-found-ms, --gzip and --delay-ms give the real server\'s awkward answers', async () => {
    const headers = join(dir, 'headers-awkward.json');
    const child = spawn(process.execPath, [bin, 'dev-calendar', '--headers-out', headers, '--aggregation-ms', '20', '--not-found-ms', '60000', '--gzip', '--delay-ms', '300'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const url = await firstLine(child);
    const digest = createHash('sha256').update('awkward').digest();
    const t0 = Date.now();
    const posted = await fetch(`${url}/digest`, { method: 'POST', body: digest });
    expect(posted.headers.get('content-encoding')).toBe('gzip');
    const answer = Buffer.from(await posted.arrayBuffer()); // fetch decodes gzip
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(await (await fetch(`${url}/`)).text()).toContain('not-found window 60000 ms; gzip on; delay 300 ms');
    const [pending] = pendingAttestations(parseTimestamp(answer, digest));
    const client = new CalendarClient(url, { timeoutMs: 5000 });
    // a commitment younger than the window is Not found, even once mined
    expect(await client.getTimestamp(pending!.commitment)).toEqual({ status: 'not-found', reason: 'Not found' });
    const mined = (await (await fetch(`${url}/mine`, { method: 'POST' })).json()) as { count: number };
    expect(mined.count).toBe(1);
    expect(await client.getTimestamp(pending!.commitment)).toEqual({ status: 'not-found', reason: 'Not found' });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const bad = spawnSync(process.execPath, [bin, 'dev-calendar', '--headers-out', join(dir, 'y.json'), '--delay-ms', '-5'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--delay-ms');
  });

  it('refuses missing --headers-out and unknown flags with exit 2', () => {
    const missing = spawnSync(process.execPath, [bin, 'dev-calendar', '--port', '0'], { encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--headers-out');
    const unknown = spawnSync(process.execPath, [bin, 'dev-calendar', '--headers-out', join(dir, 'x.json'), '--bogus'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    const badPort = spawnSync(process.execPath, [bin, 'dev-calendar', '--headers-out', join(dir, 'x.json'), '--port', 'abc'], { encoding: 'utf8' });
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('--port');
  });
});
