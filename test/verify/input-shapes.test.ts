import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors/errors.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { parseExpectedPubkey } from '../../src/core/verify/nostr.js';
import type { CheckName } from '../../src/core/verify/types.js';
import { loadFixture } from '../fixtures/index.js';
import { KEY, attach, envelopeModeProof, type Json } from './build-proofs.js';

const receipt = loadFixture('receipt-minimal');
const workflow = loadFixture('workflow-receipt-example');
const chain = loadFixture('aer1-chain-v07');

function check(report: VerifyReport, name: CheckName): { status: string; detail: string } {
  return report.checks.find((c) => c.name === name)!;
}

async function usageErrorOf(p: Promise<unknown>): Promise<UsageError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error('expected a UsageError');
}

describe('input shapes', () => {
  const proof = envelopeModeProof(receipt).proof;

  it('reads a receipt with its proof attached, bare, wrapped and in the MCP shape', async () => {
    const shapes: Array<[string, unknown]> = [
      ['bare', attach(receipt, proof)],
      ['wrapped, proof beside', { receipt, anchor_proof: proof }],
      ['wrapped, proof inside', { receipt: attach(receipt, proof) }],
      ['mcp, proof inside', { content: [], _receipt: attach(receipt, proof) }],
    ];
    for (const [name, value] of shapes) {
      const report = await verifyAnchor({ value });
      expect(report.verdict, name).toBe('PASS');
      expect(check(report, 'input').detail, name).toBe(`receipt ${receipt.id as string}, aer1-anchor-proof-v1 attached`);
    }
  });

  it('takes the proof from --proof, which wins over an attached one', async () => {
    const given = await verifyAnchor({ value: receipt, proof });
    expect(check(given, 'input').detail).toBe(`receipt ${receipt.id as string}, aer1-anchor-proof-v1 given with --proof`);
    const stale = envelopeModeProof(workflow).proof;
    const both = await verifyAnchor({ value: attach(receipt, stale), proof });
    expect(check(both, 'input').detail).toContain('its anchor_proof member is ignored (--proof given)');
    expect(both.verdict).toBe('PASS');
  });

  it('reads a job timeline as a JSON array with --proof, and as {"entries", "anchor_proof"}', async () => {
    const chainProof = envelopeModeProof(chain).proof;
    const entries = (chain as { entries: unknown[] }).entries;
    const asArray = await verifyAnchor({ value: entries, proof: chainProof });
    expect(check(asArray, 'input').detail).toBe('job timeline job-7a1f (5 entries), aer1-anchor-proof-v1 given with --proof');
    expect(asArray.verdict).toBe('PASS');
    const asObject = await verifyAnchor({ value: { entries, anchor_proof: chainProof } });
    expect(asObject.verdict).toBe('PASS');
    expect(asObject.subject).toMatchObject({ kind: 'chain-head', key: 'job-7a1f' });
  });

  it('checks a bare proof alone: recompute and envelope SKIP "no document given", the witnesses still checked', async () => {
    const report = await verifyAnchor({ value: proof }, { expectedPubkeys: [KEY.publicKey] });
    expect(check(report, 'input').detail).toBe('standalone aer1-anchor-proof-v1 (no document given)');
    expect(check(report, 'recompute')).toMatchObject({ status: 'SKIP', detail: 'no document given' });
    expect(check(report, 'envelope')).toMatchObject({ status: 'SKIP', detail: `no document given; the envelope anchors receipt ${receipt.id as string}` });
    for (const name of ['digest', 'nostr-event', 'nostr-content', 'signer', 'ots-digest', 'ots-attestations'] as const) {
      expect(check(report, name).status, name).toBe('PASS');
    }
    expect(report.verdict).toBe('PASS');
    expect(report.reason).toContain('no document given');
  });

  it('still checks the witnesses when the document is not recognized, and fails input', async () => {
    const report = await verifyAnchor({ value: attach({ ...workflow, steps: [] }, proof) });
    expect(check(report, 'input')).toMatchObject({ status: 'FAIL', detail: expect.stringMatching(/^document not recognized: steps: /) });
    expect(check(report, 'recompute').status).toBe('SKIP');
    expect(check(report, 'digest').status).toBe('PASS');
    expect(report.verdict).toBe('FAIL');
  });

  it('fails input for a proof of the right version but the wrong shape', async () => {
    const report = await verifyAnchor({ value: attach(receipt, { ...proof, digest: 'nope' }) });
    expect(check(report, 'input')).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('anchor_proof.digest') });
    expect(report.checks.slice(1).every((c) => c.status === 'SKIP')).toBe(true);
    expect(report.verdict).toBe('FAIL');
  });

  it('fails envelope for an envelope with an unknown member', async () => {
    const forged = { ...proof, envelope: { ...(proof.envelope as Json), note: 'x' } };
    const report = await verifyAnchor({ value: attach(receipt, forged) });
    expect(check(report, 'envelope').detail).toBe('not a valid zambo-receipt-anchor/1 envelope: note: unknown member for subject receipt');
  });

  it('refuses, as a usage error, input with no proof anywhere or a proof of an unknown version', async () => {
    const none = await usageErrorOf(verifyAnchor({ value: receipt }));
    expect(none.message).toBe('no anchor proof: attach it as the "anchor_proof" member or give it with --proof FILE');
    const v9 = await usageErrorOf(verifyAnchor({ value: attach(receipt, { ...proof, version: 'aer1-anchor-proof-v9' }) }));
    expect(v9.message).toBe('anchor_proof: unknown proof version "aer1-anchor-proof-v9" (this tool reads aer1-anchor-proof-v1)');
    const bare = await usageErrorOf(verifyAnchor({ value: { ...proof, version: 'aer1-anchor-proof-v2' } }));
    expect(bare.code).toBe('unknown_proof_version');
    const twice = await usageErrorOf(verifyAnchor({ value: proof, proof }));
    expect(twice.message).toMatch(/FILE is itself an anchor proof/);
  });

  it('parses --expected-pubkey as hex (either case) or npub and refuses anything else', () => {
    expect(parseExpectedPubkey(KEY.publicKey.toUpperCase())).toBe(KEY.publicKey);
    expect(parseExpectedPubkey(KEY.npub)).toBe(KEY.publicKey);
    expect(() => parseExpectedPubkey('npub1xyz')).toThrow(UsageError);
    expect(() => parseExpectedPubkey('abc')).toThrow(/neither 64 hex characters nor an npub1/);
  });
});
