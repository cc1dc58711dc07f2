/**
 * The verifier's `log` stage: a proof's anchor_proof.log is checked against the entry the
 * verifier rebuilds from the envelope (d, kind, key), the RFC 6962 path against the signed
 * checkpoint's root, and the checkpoint's signature against the log keys the caller gives
 * (`--log-key`, a trust file's log-key lines). The log is written by LogWriter in a temp folder.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { subjectKey } from '../../src/core/envelope/envelope.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { parseAnchorProof } from '../../src/core/proof/format.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { parseTrustKeys } from '../../src/core/verify/trust.js';
import { run } from '../../src/cli/commands/verify-anchor.js';
import { loadFixture } from '../fixtures/index.js';
import { attach, envelopeModeProof, type Json } from './build-proofs.js';

const work = mkdtempSync(join(tmpdir(), 'aer1-verify-log-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const ORIGIN = 'example.test/aer1';
const { signer } = generateSignerKey(ORIGIN);
const other = generateSignerKey(ORIGIN).signer;
const receipt = loadFixture('receipt-minimal');

/** A proof whose subject is entry 2 of a 5-entry log (the others random). */
async function loggedProof(opts: { digest?: Buffer; sign?: typeof signer } = {}): Promise<Json> {
  const { proof, subject } = envelopeModeProof(receipt, { nostrStatus: 'pending' });
  const writer = await LogWriter.open({ dir: mkdtempSync(join(work, 'log-')), origin: ORIGIN, signer: opts.sign ?? signer });
  const filler = (i: number) => ({ digest: Buffer.alloc(32, i), kind: 'receipt' as const, key: `other-${i}` });
  writer.append(filler(0));
  writer.append(filler(1));
  const index = writer.append({ digest: opts.digest ?? subject.digest, kind: 'receipt', key: subjectKey(subject.envelope) });
  writer.append(filler(3));
  writer.append(filler(4));
  const note = await writer.checkpoint();
  return { ...proof, log: { origin: ORIGIN, index, checkpoint: note, path: writer.inclusionProof(index).map((h) => h.toString('hex')) } };
}

const logCheck = (r: VerifyReport) => r.checks.find((c) => c.name === 'log')!;
const trusted = { logKeys: [parseVerifierKey(signer.verifierKey)] };

describe('anchor_proof.log', () => {
  it('passes with the log key given: the entry rebuilt from the envelope is in the signed tree', async () => {
    const r = await verifyAnchor({ value: attach(receipt, await loggedProof()) }, trusted);
    expect(logCheck(r)).toMatchObject({ status: 'PASS' });
    expect(logCheck(r).detail).toMatch(/entry 2 of example\.test\/aer1 .* tree of size 5, whose checkpoint is signed by example\.test\/aer1\+[0-9a-f]{8}/);
    expect(r.verdict).toBe('PASS');
  });

  it('without a log key: the path is checked, the signer is not trusted (SKIP, not FAIL)', async () => {
    const r = await verifyAnchor({ value: attach(receipt, await loggedProof()) });
    expect(logCheck(r).status).toBe('SKIP');
    expect(logCheck(r).detail).toMatch(/signer not trusted: give --log-key/);
    expect(r.verdict).toBe('PASS');
  });

  it('no log in the proof: SKIP', async () => {
    const { proof } = envelopeModeProof(receipt, { nostrStatus: 'pending' });
    expect(logCheck(await verifyAnchor({ value: attach(receipt, proof) }, trusted)).status).toBe('SKIP');
  });

  const failing: Array<[string, () => Promise<Json>, RegExp]> = [
    ['another digest logged at the index', async () => loggedProof({ digest: Buffer.alloc(32, 9) }), /does not lead by the path to the root/],
    ['an altered path hash', async () => {
      const p = await loggedProof();
      const log = p.log as { path: string[] };
      log.path[0] = log.path[0]!.replace(/^./, (c) => (c === '0' ? '1' : '0'));
      return p;
    }, /does not lead by the path/],
    ['another index', async () => ({ ...(await loggedProof()), log: { ...((await loggedProof()).log as Json), index: 3 } }), /does not lead by the path/],
    ['an index outside the tree', async () => ({ ...(await loggedProof()), log: { ...((await loggedProof()).log as Json), index: 5 } }), /outside the checkpoint's tree of 5/],
    ['a checkpoint signed by another key', async () => loggedProof({ sign: other }), /not signed by a log key given/],
    ['a forged signature', async () => {
      const p = await loggedProof();
      const log = p.log as { checkpoint: string };
      const [text, sig] = log.checkpoint.split('\n\n') as [string, string];
      const raw = Buffer.from(sig.split(' ')[2]!.trim(), 'base64');
      raw[10]! ^= 1;
      log.checkpoint = `${text}\n\n${sig.split(' ').slice(0, 2).join(' ')} ${raw.toString('base64')}\n`;
      return p;
    }, /does not verify/],
    ['another origin than the checkpoint\'s', async () => ({ ...(await loggedProof()), log: { ...((await loggedProof()).log as Json), origin: 'elsewhere/log' } }), /is not the proof's log\.origin/],
    ['a checkpoint that is not a note', async () => ({ ...(await loggedProof()), log: { ...((await loggedProof()).log as Json), checkpoint: 'hello\n' } }), /no blank line/],
  ];
  for (const [name, build, detail] of failing) {
    it(`FAILs: ${name}`, async () => {
      const r = await verifyAnchor({ value: attach(receipt, await build()) }, trusted);
      expect(logCheck(r).status, logCheck(r).detail).toBe('FAIL');
      expect(logCheck(r).detail).toMatch(detail);
      expect(r.verdict).toBe('FAIL');
    });
  }

  it('the proof parser takes log strictly', async () => {
    const good = await loggedProof();
    expect(parseAnchorProof(good).log?.index).toBe(2);
    const bad: Array<[Json, RegExp]> = [
      [{ ...good, log: 'x' }, /expected an object/],
      [{ ...good, log: { ...(good.log as Json), extra: 1 } }, /unknown member "extra"/],
      [{ ...good, log: { ...(good.log as Json), index: -1 } }, /non-negative integer/],
      [{ ...good, log: { ...(good.log as Json), path: ['AB'.repeat(32)] } }, /64-hex/],
      [{ ...good, log: { ...(good.log as Json), path: Array(65).fill('ab'.repeat(32)) } }, /at most 64/],
      [{ ...good, log: { ...(good.log as Json), origin: '' } }, /non-empty line/],
    ];
    for (const [proof, message] of bad) expect(() => parseAnchorProof(proof)).toThrow(message);
  });

  it('a trust file holds log keys beside Nostr keys', () => {
    const keys = parseTrustKeys(`# issuer\n${'ab'.repeat(32)}\n${signer.verifierKey}\n`, 'trust.txt');
    expect(keys.pubkeys).toEqual(['ab'.repeat(32)]);
    expect(keys.logKeys.map((k) => k.text)).toEqual([signer.verifierKey]);
    expect(() => parseTrustKeys('name+0000+AAAA\n', 'trust.txt')).toThrow(/trust file trust\.txt line 1/);
  });

  it('the CLI: --log-key and --trust-file give the key; a malformed --log-key is a usage error', async () => {
    const file = join(work, 'doc.json');
    writeFileSync(file, JSON.stringify(attach(receipt, await loggedProof())));
    const trust = join(work, 'trust.txt');
    writeFileSync(trust, `${signer.verifierKey}\n`);
    const out: string[] = [];
    const io = { stdout: (t: string) => void out.push(t), stderr: (t: string) => void out.push(t) };
    expect(await run([file, '--json', '--log-key', signer.verifierKey], io)).toBe(0);
    expect(JSON.parse(out.join('')).checks.find((c: { name: string }) => c.name === 'log').status).toBe('PASS');
    out.length = 0;
    expect(await run([file, '--json', '--trust-file', trust], io)).toBe(0);
    expect(JSON.parse(out.join('')).checks.find((c: { name: string }) => c.name === 'log').status).toBe('PASS');
    await expect(run([file, '--log-key', 'nonsense'], io)).rejects.toThrow(/--log-key 1/);
  });
});
