/**
 * The /verify page's verifier (src/web/verify.ts, which the browser bundle is built from), run
 * under Node on the demo's files, against the built `aer1-verify-anchor` on the same files with
 * the same flags: the same stdout (paths aside), exit code, and on a usage error the same stderr
 * line — for passes, the truncation, no trust, a separate proof, a bare proof, and bad input.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandFor, guessRole, verifyDropped, type BrowserVerifyRequest, type DroppedFile } from '../../src/web/verify.js';
import { VERSION } from '../../src/version.js';
import { cliVerify, runDemo } from '../helpers/browser.js';
import { tempDir } from '../helpers/harness.js';

const base = tempDir('aer1-browser-verify');
const out = join(base, 'out');
let demo: ReturnType<typeof runDemo>;

beforeAll(() => {
  demo = runDemo(out);
  const timeline = JSON.parse(readFileSync(join(out, 'timeline.json'), 'utf8')) as Record<string, unknown>;
  const { anchor_proof: proof, ...doc } = timeline;
  writeFileSync(join(base, 'doc.json'), JSON.stringify(doc));
  writeFileSync(join(base, 'proof.json'), JSON.stringify(proof));
  writeFileSync(join(base, 'trust.txt'), `${demo.signer.pubkey}\n`);
  writeFileSync(join(base, 'bad-trust.txt'), 'not-a-key\n');
  writeFileSync(join(base, 'broken.json'), '{"a": [1, 2');
  writeFileSync(join(base, 'latin1.json'), Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d]));
  writeFileSync(join(base, 'bad-headers.json'), JSON.stringify({ 1: 'abcd' }));
}, 120_000);

afterAll(() => rmSync(base, { recursive: true, force: true }));

const dropped = (path: string): DroppedFile => ({ name: basename(path), bytes: new Uint8Array(readFileSync(path)) });
const at = (name: string): string => (['doc.json', 'proof.json', 'trust.txt', 'bad-trust.txt', 'broken.json', 'latin1.json', 'bad-headers.json'].includes(name) ? join(base, name) : join(out, name));

interface Case {
  name: string;
  document?: string;
  proof?: string;
  headers?: string;
  pubkeys?: string[];
  trust?: string[];
  network?: string;
  requireConfirmed?: boolean;
}

function cliArgs(c: Case): string[] {
  const args: string[] = [];
  if (c.document) args.push(at(c.document));
  if (c.proof) args.push(...(c.document ? ['--proof'] : []), at(c.proof));
  if (c.headers) args.push('--headers', at(c.headers));
  if (c.network) args.push('--network', c.network);
  for (const k of c.pubkeys ?? []) args.push('--expected-pubkey', k);
  for (const t of c.trust ?? []) args.push('--trust-file', at(t));
  if (c.requireConfirmed) args.push('--require-confirmed');
  return args;
}

function request(c: Case): BrowserVerifyRequest {
  return {
    document: c.document ? dropped(at(c.document)) : null,
    proof: c.proof ? dropped(at(c.proof)) : null,
    headers: c.headers ? dropped(at(c.headers)) : null,
    network: c.network ?? null,
    expectedPubkeys: c.pubkeys ?? [],
    trustFiles: (c.trust ?? []).map((t) => dropped(at(t))),
    requireConfirmed: c.requireConfirmed === true,
  };
}

/** Paths to bare names: the CLI names files by path, the page by name. */
const unpath = (t: string): string => t.replaceAll(`${out}/`, '').replaceAll(`${base}/`, '');

const cases = (): Case[] => [
  { name: 'a confirmed workflow, trusted', document: 'workflow.json', headers: 'headers.json', network: 'regtest', pubkeys: [demo.signer.npub] },
  { name: 'the cut workflow', document: 'workflow-truncated.json', headers: 'headers.json', network: 'regtest', pubkeys: [demo.signer.pubkey] },
  { name: 'no trust given', document: 'receipt.json', headers: 'headers.json', network: 'regtest' },
  { name: 'no headers given', document: 'receipt.json', pubkeys: [demo.signer.pubkey] },
  { name: 'regtest headers checked as mainnet', document: 'receipt.json', headers: 'headers.json', pubkeys: [demo.signer.pubkey] },
  { name: 'a document and its proof apart, a trust file', document: 'doc.json', proof: 'proof.json', headers: 'headers.json', network: 'regtest', trust: ['trust.txt'] },
  { name: 'a bare proof', proof: 'proof.json', headers: 'headers.json', network: 'regtest', trust: ['trust.txt'] },
  { name: 'no proof: the document alone', document: 'doc.json', headers: 'headers.json', network: 'regtest' },
  { name: '--require-confirmed without headers or trust', document: 'receipt.json', requireConfirmed: true },
  { name: 'a bad expected pubkey', document: 'receipt.json', pubkeys: ['npub1nope'] },
  { name: 'a bad trust file', document: 'receipt.json', trust: ['bad-trust.txt'] },
  { name: 'a broken JSON file', document: 'broken.json' },
  { name: 'a file that is not UTF-8', document: 'latin1.json' },
  { name: 'a malformed headers file', document: 'receipt.json', headers: 'bad-headers.json', network: 'regtest' },
  { name: 'an unknown network', document: 'receipt.json', network: 'testnet' },
];

describe('the /verify verifier under Node, against the CLI', () => {
  it('prints what the CLI prints, exits as it exits, for every case', async () => {
    const seen = new Set<number>();
    for (const c of cases()) {
      const cli = await cliVerify(cliArgs(c));
      const page = await verifyDropped(request(c), VERSION);
      seen.add(page.exitCode);
      expect(page.exitCode, c.name).toBe(cli.code);
      if (cli.code === 2) {
        expect(page.error, c.name).toBe(unpath(cli.stderr.trim()));
        expect(page.text, c.name).toBe('');
      } else {
        expect(page.text, c.name).toBe(unpath(cli.stdout));
        expect(page.verdictLine, c.name).toBe(cli.verdict);
      }
    }
    // the cases cover PASS, FAIL and usage errors
    expect([...seen].sort()).toEqual([0, 1, 2]);
  }, 120_000);

  it('guesses what a dropped file is', () => {
    expect(guessRole(dropped(at('workflow.json')))).toBe('document');
    expect(guessRole(dropped(at('proof.json')))).toBe('proof');
    expect(guessRole(dropped(at('headers.json')))).toBe('headers');
    expect(guessRole(dropped(at('trust.txt')))).toBe('trust');
    expect(guessRole(dropped(at('broken.json')))).toBe('document');
  });

  it('names the CLI command the inputs stand for', () => {
    const c = cases()[5]!;
    expect(commandFor(request(c))).toBe('aer1-verify-anchor doc.json --proof proof.json --headers headers.json --network regtest --trust-file trust.txt');
    expect(commandFor({ proof: dropped(at('proof.json')), esplora: 'https://blockstream.info/api' })).toBe('aer1-verify-anchor proof.json --esplora https://blockstream.info/api');
  });
});
