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
  // hostile variants of the demo's receipt: the page must judge them as the CLI does
  const receiptText = readFileSync(join(out, 'receipt.json'), 'utf8');
  for (const [name, mutate] of Object.entries(HOSTILE)) {
    const value = JSON.parse(receiptText) as { anchor_proof: { nostr: Record<string, unknown>; ots: Record<string, unknown> } } & Record<string, unknown>;
    writeFileSync(join(base, name), mutate(value, receiptText));
  }
}, 120_000);

afterAll(() => rmSync(base, { recursive: true, force: true }));

type Receipt = { anchor_proof: { nostr: Record<string, unknown>; ots: Record<string, unknown> } } & Record<string, unknown>;
type Relay = Record<string, unknown>;
const flipped = (b64: string, at: number): string => {
  const b = Buffer.from(b64, 'base64');
  b[at % b.length] = b[at % b.length]! ^ 0x5a;
  return b.toString('base64');
};
/** Hostile variants of the demo's receipt.json, by file name (each written in beforeAll). */
const HOSTILE: Record<string, (r: Receipt, text: string) => string> = {
  'h-mode-unknown.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, mode: 'auto' } } }),
  'h-mode-batch-no-path.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, mode: 'batch' } } }),
  'h-mode-lookalike.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, mode: 'envelop\u0435' } } }),
  'h-copy-other-content.json': (r) => {
    const ev = r.anchor_proof.nostr.event as Record<string, unknown>;
    const relays = (r.anchor_proof.nostr.relays as Relay[]).map((x, i) => (i === 0 ? { ...x, event: { ...ev, content: `${String(ev.content)} ` } } : x));
    return JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, relays } } });
  },
  'h-copy-two-nonces.json': (r) => {
    const ev = r.anchor_proof.nostr.event as Record<string, unknown>;
    const copy = { ...ev, tags: [...(ev.tags as string[][]), ['nonce', '1', '0'], ['nonce', '2', '0']] };
    const relays = (r.anchor_proof.nostr.relays as Relay[]).map((x, i) => (i === 1 ? { ...x, event: copy } : x));
    return JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, relays } } });
  },
  'h-ots-flipped.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, ots: { ...r.anchor_proof.ots, proof: flipped(r.anchor_proof.ots.proof as string, 77) } } }),
  'h-created-at-string.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, event: { ...(r.anchor_proof.nostr.event as Relay), created_at: String((r.anchor_proof.nostr.event as Relay).created_at) } } } }),
  'h-nostr-lookalike-key.json': (r) => {
    const { nostr, ...rest } = r.anchor_proof;
    return JSON.stringify({ ...r, anchor_proof: { ...rest, ['n\u043estr']: nostr } });
  },
  'h-duplicate-digest-key.json': (_r, text) => text.replace('"digest":', `"digest":"${'0'.repeat(64)}","digest":`),
  'h-deep-relay-message.json': (r) => JSON.stringify({ ...r, anchor_proof: { ...r.anchor_proof, nostr: { ...r.anchor_proof.nostr, relays: [{ url: 'wss://x', status: 'accepted', message: JSON.parse(`${'['.repeat(200)}1${']'.repeat(200)}`) }] } } }),
};

const dropped = (path: string): DroppedFile => ({ name: basename(path), bytes: new Uint8Array(readFileSync(path)) });
const at = (name: string): string => (['doc.json', 'proof.json', 'trust.txt', 'bad-trust.txt', 'broken.json', 'latin1.json', 'bad-headers.json', ...Object.keys(HOSTILE)].includes(name) ? join(base, name) : join(out, name));

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
  // hostile inputs (trust review): the same verdict, line for line
  ...Object.keys(HOSTILE).map((f): Case => ({ name: `hostile ${f}`, document: f, headers: 'headers.json', network: 'regtest', pubkeys: [demo.signer.pubkey] })),
  { name: 'hostile: a flipped .ots under --require-confirmed', document: 'h-ots-flipped.json', headers: 'headers.json', network: 'regtest', pubkeys: [demo.signer.pubkey], requireConfirmed: true },
  { name: 'hostile: a lookalike nostr key, no trust, --require-confirmed', document: 'h-nostr-lookalike-key.json', headers: 'headers.json', network: 'regtest', requireConfirmed: true },
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
