import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { decode, nsecEncode } from 'nostr-tools/nip19';
import { getPublicKey } from 'nostr-tools/pure';

const repoRoot = resolve(import.meta.dirname, '../..');
const bin = join(repoRoot, 'bin/aer1-anchor.js');
const built = join(repoRoot, 'dist/src/cli/commands/keygen.js');
const dir = mkdtempSync(join(tmpdir(), 'aer1-keygen-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keygen(args: string[], cwd = dir) {
  const r = spawnSync(process.execPath, [bin, 'keygen', ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The secret in every form it could leak in. */
function secretForms(file: string): string[] {
  const hex = readFileSync(file, 'utf8').trim();
  return [hex, hex.toUpperCase(), nsecEncode(Buffer.from(hex, 'hex')), hex.slice(0, 20)];
}

describe('aer1-anchor keygen', () => {
  it('needs a build first', () => {
    expect(existsSync(built), `${built} is missing: run npx tsc -p tsconfig.json (npm test does)`).toBe(true);
  });

  it('writes ./var/nostr.key with mode 0600 and prints an npub that decodes to its public key', () => {
    const r = keygen([]);
    expect(r.code).toBe(0);
    const file = join(dir, 'var/nostr.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'var')).mode & 0o777).toBe(0o700);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    const [npubLine, pubLine, wroteLine] = lines as [string, string, string];
    const hex = readFileSync(file, 'utf8').trim();
    const pubkey = getPublicKey(Buffer.from(hex, 'hex'));
    expect(decode(npubLine)).toEqual({ type: 'npub', data: pubkey });
    expect(pubLine).toBe(`pubkey ${pubkey}`);
    expect(wroteLine).toBe('wrote ./var/nostr.key (mode 0600)');
    for (const s of secretForms(file)) {
      expect(r.stdout).not.toContain(s);
      expect(r.stderr).not.toContain(s);
    }
  });

  it('refuses to overwrite a key (exit 2, file untouched), replaces it with --force', () => {
    const file = join(dir, 'k1.key');
    expect(keygen(['--out', file]).code).toBe(0);
    const before = readFileSync(file, 'utf8');
    const again = keygen(['--out', file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists; refusing to overwrite a signing key \(use --force\)/);
    expect(again.stdout).toBe('');
    expect(readFileSync(file, 'utf8')).toBe(before);
    for (const s of secretForms(file)) expect(again.stderr).not.toContain(s);
    const forced = keygen(['--out', file, '--force', '--json']);
    expect(forced.code).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toBe(before);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const out = JSON.parse(forced.stdout) as { file: string; npub: string; pubkey: string };
    expect(Object.keys(out).sort()).toEqual(['file', 'npub', 'pubkey']);
    expect(out.file).toBe(file);
    expect(out.pubkey).toBe(getPublicKey(Buffer.from(readFileSync(file, 'utf8').trim(), 'hex')));
    expect(decode(out.npub)).toEqual({ type: 'npub', data: out.pubkey });
    for (const s of secretForms(file)) expect(forced.stdout + forced.stderr).not.toContain(s);
  });

  it('refuses unknown flags and positionals with exit 2', () => {
    expect(keygen(['--bogus']).code).toBe(2);
    expect(keygen(['extra']).code).toBe(2);
  });
});
