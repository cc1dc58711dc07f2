/**
 * Log format: human-readable lines when the daemon's stderr is a terminal, JSON lines when
 * it is a pipe (log.format auto). The terminal is a real pseudo-terminal from util-linux
 * `script`; the daemon is the built aer1-anchord against the shared Redis and a dev relay.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { createLogger, resolveLogFormat } from '../../src/daemon/logger.js';
import { prettyLine } from '../../src/daemon/pretty-log.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { REPO_ROOT, SHARED_REDIS_URL, spawnAnchord, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const DAEMON = join(REPO_ROOT, 'bin/aer1-anchord.js');

describe('the pretty line format', () => {
  it('puts time, level and message first, the other fields as key=value, an error stack below', () => {
    const line = prettyLine(JSON.stringify({ level: 40, time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), pid: 1, hostname: 'h', name: 'aer1-anchord', msg: 'relay slow', relay: 'ws://r', n: 3, note: 'two words' }));
    expect(line).toMatch(/^\d\d:\d\d:\d\d\.006 WARN  relay slow {2}relay=ws:\/\/r n=3 note="two words"\n$/);
    expect(line).not.toContain('hostname');
    const err = prettyLine(JSON.stringify({ level: 50, time: 0, msg: 'failed', err: { type: 'Error', message: 'bad thing', stack: 'Error: bad thing\n    at f (x.js:1:2)' } }));
    expect(err.split('\n')).toEqual([expect.stringMatching(/ ERROR failed {2}err="bad thing"$/), '    Error: bad thing', '        at f (x.js:1:2)', '']);
    expect(prettyLine('not json')).toBe('not json\n');
  });

  it('auto is pretty on a terminal only; json and pretty force one; NO_COLOR drops the colours', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    const pipe = new PassThrough();
    expect(resolveLogFormat('auto', tty, {})).toEqual({ pretty: true, color: true });
    expect(resolveLogFormat('auto', tty, { NO_COLOR: '1' })).toEqual({ pretty: true, color: false });
    expect(resolveLogFormat('auto', pipe, {})).toEqual({ pretty: false, color: false });
    expect(resolveLogFormat('json', tty, {})).toEqual({ pretty: false, color: false });
    expect(resolveLogFormat('pretty', pipe, {})).toEqual({ pretty: true, color: false });
  });

  it('keeps redaction in the pretty format', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    createLogger('info', out, 'pretty').info({ token: 'hunter2', relay: 'ws://r' }, 'hello');
    expect(text).toMatch(/INFO {2}hello {2}token=\[redacted\] relay=ws:\/\/r\n$/);
  });
});

describe('aer1-anchord logs', () => {
  let relays: DevRelay[] = [];
  let configFile = '';
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    expect(existsSync(join(REPO_ROOT, 'dist/src/daemon/main.js')), 'dist is built (npm run build)').toBe(true);
    expect(spawnSync('script', ['--version']).status, 'script (util-linux) makes the pseudo-terminal').toBe(0);
    relays = await startRelays(1);
    const config = testConfig({ relays });
    const dir = tempDir('log-format');
    const keyFile = join(dir, 'nostr.key');
    writeKeyFile(keyFile);
    configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ ...config, redis: { ...config.redis, url: SHARED_REDIS_URL }, nostr: { ...config.nostr, keyFile }, log: { ...config.log, level: 'info', format: 'auto' } }));
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(relays.map((r) => r.close()));
  });

  async function runUntilReady(child: ChildProcess, output: () => string): Promise<string> {
    children.push(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitFor('aer1-anchord ready', () => output().includes('aer1-anchord ready'), 30_000, 50);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    return output();
  }

  it('on a terminal: human-readable lines, no JSON', { timeout: 60_000 }, async () => {
    let out = '';
    // script runs the daemon on a pseudo-terminal and copies what it prints to our pipe; NO_COLOR keeps the text plain.
    const child = spawn('script', ['-qfec', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(DAEMON)} --config ${JSON.stringify(configFile)}`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', HOME: tempDir('home'), NO_COLOR: '1', TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const text = await runUntilReady(child, () => out);
    const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
    expect(lines.find((l) => l.includes('aer1-anchord ready'))).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}aer1-anchord ready {2}queue=\S+ version=\S+$/);
    expect(lines.some((l) => l.includes('INFO  witness nostr'))).toBe(true);
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
  });

  it('on a pipe: one JSON object per line', { timeout: 60_000 }, async () => {
    let err = '';
    const child = spawnAnchord(['--config', configFile], { cwd: tempDir('daemon'), env: { PATH: process.env.PATH ?? '', HOME: tempDir('home') } });
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const text = await runUntilReady(child, () => err);
    const records = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { level: number; msg: string; name: string });
    expect(records.find((r) => r.msg === 'aer1-anchord ready')).toMatchObject({ level: 30, name: 'aer1-anchord' });
  });
});

