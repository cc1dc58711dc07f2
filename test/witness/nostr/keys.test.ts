import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format, inspect } from 'node:util';
import { decode, nsecEncode } from 'nostr-tools/nip19';
import { getPublicKey } from 'nostr-tools/pure';
import { SigningKey, generateSecretKey, npub, publicKeyOf } from '../../../src/core/nostr/keys.js';
import { loadSigningKey, writeKeyFile } from '../../../src/adapters/nostr/key-file.js';
import { TEST_SECRET_HEX } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'aer1-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const secretBytes = Buffer.from(TEST_SECRET_HEX, 'hex');
const nsec = nsecEncode(secretBytes);
const expectedPub = getPublicKey(secretBytes);

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a throw');
}

function expectNoSecret(text: string): void {
  expect(text).not.toContain(TEST_SECRET_HEX);
  expect(text.toLowerCase()).not.toContain(TEST_SECRET_HEX.slice(0, 16));
  expect(text).not.toContain(nsec);
  expect(text).not.toContain(nsec.slice(5, 25));
}

describe('SigningKey', () => {
  it('parses hex (either case, whitespace trimmed) and nsec to the same public key', () => {
    expect(SigningKey.parse(TEST_SECRET_HEX).publicKey).toBe(expectedPub);
    expect(SigningKey.parse(`  ${TEST_SECRET_HEX.toUpperCase()}\n`).publicKey).toBe(expectedPub);
    expect(SigningKey.parse(`${nsec}\n`).publicKey).toBe(expectedPub);
    expect(publicKeyOf(secretBytes)).toBe(expectedPub);
  });

  it('prints as [signing key redacted] every way it can be printed', () => {
    const key = SigningKey.parse(TEST_SECRET_HEX);
    const outputs = [
      String(key),
      `${key}`,
      JSON.stringify(key),
      JSON.stringify({ key }),
      inspect(key),
      inspect({ nested: { key } }, { depth: 5, showHidden: true }),
      format('%o %O %s %j', key, key, key, key),
    ];
    for (const out of outputs) {
      expect(out).toContain('[signing key redacted]');
      expectNoSecret(out);
    }
  });

  it('names the source and never quotes the key in errors', () => {
    const badHex = TEST_SECRET_HEX.slice(0, 63) + 'g';
    const badNsec = nsec.slice(0, -1) + (nsec.endsWith('q') ? 'p' : 'q');
    const zero = '00'.repeat(32);
    const overOrder = 'ff'.repeat(32);
    for (const text of [badHex, badNsec, zero, overOrder, TEST_SECRET_HEX + 'aa', nsecEncode(secretBytes).replace('nsec', 'npub')]) {
      const msg = messageOf(() => SigningKey.parse(text, 'key file /tmp/k'));
      expect(msg).toMatch(/^key file \/tmp\/k: /);
      expect(msg).not.toContain(text);
      expectNoSecret(msg);
    }
  });

  it('generates distinct keys and encodes npubs that decode to the public key', () => {
    const a = generateSecretKey();
    const b = generateSecretKey();
    expect(a.publicKey).not.toBe(b.publicKey);
    const encoded = npub(a.publicKey);
    expect(encoded).toBe(a.npub);
    expect(decode(encoded)).toEqual({ type: 'npub', data: a.publicKey });
    expect(() => npub('xyz')).toThrow(/pubkey/);
  });
});

describe('loadSigningKey', () => {
  it('reads a 0600 key file holding hex or nsec', () => {
    const hexFile = join(dir, 'hex.key');
    writeFileSync(hexFile, `${TEST_SECRET_HEX}\n`, { mode: 0o600 });
    const nsecFile = join(dir, 'nsec.key');
    writeFileSync(nsecFile, `\n  ${nsec}  \n`, { mode: 0o600 });
    expect(loadSigningKey({ file: hexFile })).toMatchObject({ source: `file:${hexFile}`, warnings: [] });
    expect(loadSigningKey({ file: hexFile }).key.publicKey).toBe(expectedPub);
    expect(loadSigningKey({ file: nsecFile }).key.publicKey).toBe(expectedPub);
  });

  it('refuses a key file readable by others unless allowed, then warns', () => {
    const file = join(dir, 'open.key');
    writeFileSync(file, TEST_SECRET_HEX);
    chmodSync(file, 0o644);
    const msg = messageOf(() => loadSigningKey({ file }));
    expect(msg).toMatch(/readable by group or others \(mode 0644\); run: chmod 600/);
    expectNoSecret(msg);
    const loaded = loadSigningKey({ file, allowReadableByOthers: true });
    expect(loaded.key.publicKey).toBe(expectedPub);
    expect(loaded.warnings).toEqual([expect.stringMatching(/mode 0644/)]);
  });

  it('refuses a key file writable by others even when readability is allowed', () => {
    const file = join(dir, 'writable.key');
    writeFileSync(file, TEST_SECRET_HEX);
    chmodSync(file, 0o622);
    expect(() => loadSigningKey({ file, allowReadableByOthers: true })).toThrow(/writable by group or others \(mode 0622\)/);
  });

  it('reads the key from a named environment variable', () => {
    const loaded = loadSigningKey({ env: 'AER1_TEST_KEY', environment: { AER1_TEST_KEY: ` ${nsec} ` } });
    expect(loaded.key.publicKey).toBe(expectedPub);
    expect(loaded.source).toBe('env:AER1_TEST_KEY');
  });

  it('falls back to the file when the variable is unset; a set variable wins, with a warning', () => {
    const file = join(dir, 'both.key');
    writeKeyFile(file);
    expect(loadSigningKey({ file, env: 'UNSET_VAR', environment: {} }).source).toBe(`file:${file}`);
    const loaded = loadSigningKey({ file, env: 'K', environment: { K: TEST_SECRET_HEX } });
    expect(loaded.source).toBe('env:K');
    expect(loaded.key.publicKey).toBe(expectedPub);
    expect(loaded.warnings).toEqual([`key file ${file} ignored: environment variable K is set and takes precedence`]);
    expectNoSecret(loaded.warnings.join(' '));
    // a default file path that does not exist is no reason to warn
    expect(loadSigningKey({ file: join(dir, 'none.key'), env: 'K', environment: { K: TEST_SECRET_HEX } }).warnings).toEqual([]);
  });

  it('says what is missing when there is no key at all', () => {
    expect(() => loadSigningKey({ env: 'NOPE', environment: {} })).toThrow(/NOPE is not set .*aer1-anchor keygen/);
    expect(() => loadSigningKey({ file: join(dir, 'absent.key') })).toThrow(/cannot read key file .*ENOENT/);
  });

  it('names the variable, not its value, when the value is not a key', () => {
    const msg = messageOf(() => loadSigningKey({ env: 'K', environment: { K: TEST_SECRET_HEX.slice(2) } }));
    expect(msg).toMatch(/^environment variable K: /);
    expect(msg).not.toContain(TEST_SECRET_HEX.slice(2));
  });
});

describe('writeKeyFile', () => {
  it('writes mode 0600 hex that loads back to the same public key', () => {
    const file = join(dir, 'sub', 'new.key');
    const written = writeKeyFile(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(loadSigningKey({ file }).key.publicKey).toBe(written.publicKey);
    expect(decode(written.npub)).toEqual({ type: 'npub', data: written.publicKey });
  });

  it('refuses to overwrite, and with force replaces atomically with mode 0600', () => {
    const file = join(dir, 'keep.key');
    const first = writeKeyFile(file);
    const before = readFileSync(file, 'utf8');
    expect(() => writeKeyFile(file)).toThrow(/exists; refusing to overwrite a signing key \(use --force\)/);
    expect(readFileSync(file, 'utf8')).toBe(before);
    chmodSync(file, 0o644);
    const second = writeKeyFile(file, { force: true });
    expect(second.publicKey).not.toBe(first.publicKey);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadSigningKey({ file }).key.publicKey).toBe(second.publicKey);
  });
});
