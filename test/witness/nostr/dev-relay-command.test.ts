import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envelopeEvent } from '../../../src/core/nostr/events.js';
import { SigningKey } from '../../../src/core/nostr/keys.js';
import { RelayClient } from '../../../src/adapters/nostr/relay-client.js';
import { TEST_SECRET_HEX, workflowEnvelope } from './fixtures.js';

const repoRoot = resolve(import.meta.dirname, '../../..');
const bin = join(repoRoot, 'bin/aer1-anchor.js');
const built = join(repoRoot, 'dist/src/cli/commands/dev-relay.js');
const dir = mkdtempSync(join(tmpdir(), 'aer1-devrelay-cli-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the command; resolves with its first stdout line (bounded to 20 s). */
function start(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [bin, 'dev-relay', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 20 s; stderr: ${err}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve({ child, url: out.slice(0, nl), stderr: () => err });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before printing a URL; stderr: ${err}`));
    });
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('aer1-anchor dev-relay', () => {
  it('needs a build first', () => {
    expect(existsSync(built), `${built} is missing: run npx tsc -p tsconfig.json (npm test does)`).toBe(true);
  });

  it('prints its ws:// URL first, accepts events, and stops with exit 0 on SIGTERM', async () => {
    const file = join(dir, 'relay.jsonl');
    const { child, url, stderr } = await start(['--port', '0', '--events', file]);
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    const key = SigningKey.parse(TEST_SECRET_HEX);
    const env = workflowEnvelope(42);
    const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
    const client = new RelayClient(url);
    try {
      expect((await client.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
      expect(await client.fetchById(ev.id, { timeoutMs: 5000 })).not.toBeNull();
    } finally {
      client.close();
    }
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
    expect(stderr()).toMatch(/SIGTERM, stopped/);
    // the events stay in the file for the next run
    const second = await start(['--events', file]);
    const c2 = new RelayClient(second.url);
    try {
      expect(await c2.fetchById(ev.id, { timeoutMs: 5000 })).not.toBeNull();
    } finally {
      c2.close();
    }
    second.child.kill('SIGINT');
    expect(await exitOf(second.child)).toBe(0);
  });

  it('plays a profile and serves its NIP-11 document; refuses an unknown profile with exit 2', async () => {
    const { child, url } = await start(['--profile', 'pow', '--pow-difficulty', '12']);
    const res = await fetch(url.replace('ws://', 'http://'), { headers: { Accept: 'application/nostr+json' } });
    expect(((await res.json()) as { limitation: unknown }).limitation).toEqual({ min_pow_difficulty: 12 });
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
    const bad = spawn(process.execPath, [bin, 'dev-relay', '--profile', 'nope'], { stdio: 'ignore' });
    children.push(bad);
    expect(await exitOf(bad)).toBe(2);
  });

  it('refuses a bad port with exit 2', async () => {
    const child = spawn(process.execPath, [bin, 'dev-relay', '--port', '70000'], { stdio: 'ignore' });
    children.push(child);
    expect(await exitOf(child)).toBe(2);
  });
});
