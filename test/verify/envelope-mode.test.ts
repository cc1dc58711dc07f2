import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { CHECK_NAMES, type CheckName } from '../../src/core/verify/types.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { parseExpectedPubkey } from '../../src/core/verify/nostr.js';
import { loadFixture } from '../fixtures/index.js';
import { KEY, OTHER_KEY, attach, envelopeModeProof, otsBatch, subjectOf, unrelatedHeader, type Json } from './build-proofs.js';

const workflow = loadFixture('workflow-receipt-example');
const receipt = loadFixture('receipt-minimal');

function statusOf(report: VerifyReport, name: CheckName): string {
  const c = report.checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check ${name}`);
  return c.status;
}

function detailOf(report: VerifyReport, name: CheckName): string {
  return report.checks.find((x) => x.name === name)!.detail;
}

function headersFor(block: { height: number; header: Buffer } | null): HeadersFileSource {
  if (!block) throw new Error('expected a mined block');
  return new HeadersFileSource(new Map([[block.height, block.header]]));
}

/** Only the named checks fail. */
function expectFailures(report: VerifyReport, names: CheckName[]): void {
  expect(report.checks.filter((c) => c.status === 'FAIL').map((c) => c.name)).toEqual(names);
  expect(report.verdict).toBe('FAIL');
}

const regtest: VerifyOptions = { network: 'regtest' };

describe('envelope mode: proofs that check out', () => {
  it('passes a workflow close with pending witnesses, saying pending, in the stable check order', async () => {
    const { proof } = envelopeModeProof(workflow, { nostrStatus: 'pending' });
    const report = await verifyAnchor({ value: attach(workflow, proof) });
    expect(report.checks.map((c) => c.name)).toEqual(CHECK_NAMES.filter((n) => n !== 'batch-path'));
    expect(report.verdict).toBe('PASS');
    expect(report.pending).toBe(true);
    expect(report.reason).toMatch(/^pending: no witness confirmed yet/);
    for (const name of ['input', 'recompute', 'envelope', 'digest', 'nostr-event', 'nostr-content', 'ots-digest', 'ots-attestations'] as const) {
      expect(statusOf(report, name), name).toBe('PASS');
    }
    expect(statusOf(report, 'signer')).toBe('SKIP');
    expect(detailOf(report, 'signer')).toMatch(/^unverified signer npub1/);
    expect(statusOf(report, 'bitcoin')).toBe('SKIP');
    expect(detailOf(report, 'ots-attestations')).toContain('pending at 1 calendar: https://calendar.test.example');
    expect(statusOf(report, 'online')).toBe('SKIP');
    expect(report.witnesses.ots).toMatchObject({ verified: 'pending', pending: ['https://calendar.test.example'] });
    expect(report.subject).toMatchObject({ kind: 'workflow-close', key: workflow.receipt_id, digest: proof.digest });
  });

  it('does not take the proof\'s own claim of relay confirmation as confirmed offline; --require-confirmed fails then', async () => {
    // nostr.status is not signed: anyone can write "confirmed" into a pending proof.
    const claimed = envelopeModeProof(workflow).proof;
    const offline = await verifyAnchor({ value: attach(workflow, claimed) }, { requireConfirmed: true, expectedPubkeys: [KEY.publicKey] });
    expect(offline.verdict).toBe('FAIL');
    expect(offline.pending).toBe(true);
    expect(offline.witnesses.nostr).toMatchObject({ claimed: 'confirmed', verified: 'unverified' });
    expect(offline.reason).toMatch(/^not confirmed \(--require-confirmed\).*nostr confirmed as claimed, expected signer, relays not checked/);
    // without a key the caller trusts, the event is only "signed by someone"
    const untrusted = await verifyAnchor({ value: attach(workflow, claimed) }, { requireConfirmed: true });
    expect(untrusted.verdict).toBe('FAIL');
    expect(untrusted.witnesses.nostr).toMatchObject({ claimed: 'confirmed', verified: 'untrusted' });
    expect(untrusted.reason).toMatch(/nostr signed, signer not trusted \(give --expected-pubkey\)/);
    const lenient = await verifyAnchor({ value: attach(workflow, claimed) });
    expect(lenient.verdict).toBe('PASS');

    const pending = envelopeModeProof(workflow, { nostrStatus: 'pending' }).proof;
    const report = await verifyAnchor({ value: attach(workflow, pending) }, { requireConfirmed: true });
    expect(report.verdict).toBe('FAIL');
    expect(report.reason).toMatch(/^not confirmed \(--require-confirmed\)/);
    expect(report.checks.every((c) => c.status !== 'FAIL')).toBe(true);
  });

  it('passes a receipt confirmed in Bitcoin against a regtest header with real proof of work', async () => {
    const { proof, block } = envelopeModeProof(receipt, { nostrStatus: 'pending', mineAt: 101 });
    const report = await verifyAnchor({ value: attach(receipt, proof) }, { ...regtest, headerSource: headersFor(block), requireConfirmed: true });
    expect(report.verdict).toBe('PASS');
    expect(statusOf(report, 'bitcoin')).toBe('PASS');
    expect(detailOf(report, 'bitcoin')).toContain(`block 101 ${block!.hashDisplay}`);
    expect(detailOf(report, 'ots-attestations')).toContain('Bitcoin block 101');
    expect(report.witnesses.ots).toMatchObject({ verified: 'confirmed', bitcoin: [{ height: 101, block_hash: block!.hashDisplay, verified: true }] });
    expect(report.reason).toContain('ots confirmed in Bitcoin block 101');
  });

  it('skips the Bitcoin check without a header source, and says the attestation is unchecked', async () => {
    const { proof } = envelopeModeProof(receipt, { nostrStatus: 'pending', mineAt: 5 });
    const report = await verifyAnchor({ value: attach(receipt, proof) }, regtest);
    expect(statusOf(report, 'bitcoin')).toBe('SKIP');
    expect(detailOf(report, 'bitcoin')).toContain('no header source');
    expect(report.verdict).toBe('PASS');
    expect(report.pending).toBe(true);
    expect(report.witnesses.ots?.verified).toBe('unverified');
  });

  it('checks the signer against --expected-pubkey given as hex or npub', async () => {
    const { proof } = envelopeModeProof(receipt);
    for (const given of [KEY.publicKey, KEY.publicKey.toUpperCase(), KEY.npub]) {
      const report = await verifyAnchor({ value: attach(receipt, proof) }, { expectedPubkeys: [parseExpectedPubkey(OTHER_KEY.npub), parseExpectedPubkey(given)] });
      expect(statusOf(report, 'signer')).toBe('PASS');
      expect(report.verdict).toBe('PASS');
    }
  });
});

describe('envelope mode: each tampering fails at its check', () => {
  it('a swapped envelope field fails envelope (bound value) and digest', async () => {
    const { proof } = envelopeModeProof(workflow);
    const other = subjectOf({ ...workflow, receipt_id: 'another-close' });
    const env = proof.envelope as Json;
    const swapped = { ...proof, envelope: { ...env, receipt_uuid: (other.envelope as unknown as Json).receipt_uuid } };
    const report = await verifyAnchor({ value: attach(workflow, swapped) });
    expect(statusOf(report, 'envelope')).toBe('FAIL');
    expect(detailOf(report, 'envelope')).toBe(`altered: receipt_uuid anchored "another-close", the receipt has ${JSON.stringify(workflow.receipt_id)}`);
    expect(statusOf(report, 'digest')).toBe('FAIL');
    expect(report.reason).toMatch(/^envelope: altered: receipt_uuid/);
  });

  it('a swapped field with the digest restated still fails at the witnesses, which committed to the old d', async () => {
    const { proof } = envelopeModeProof(workflow);
    const env = { ...(proof.envelope as Json), step_count: 6 };
    const forged = { ...proof, envelope: env, digest: sha256Hex(canonicalJson(env)) };
    const report = await verifyAnchor({ value: attach(workflow, forged) });
    expectFailures(report, ['envelope', 'nostr-content', 'ots-digest']);
    expect(detailOf(report, 'envelope')).toBe('truncated: anchored 6 steps, receipt has 5');
    expect(detailOf(report, 'ots-digest')).toMatch(/^the \.ots is for digest [0-9a-f]{64}, not d [0-9a-f]{64}$/);
  });

  it('an anchored_at swapped in the envelope fails digest only (and the witnesses)', async () => {
    const { proof } = envelopeModeProof(receipt);
    const forged = { ...proof, envelope: { ...(proof.envelope as Json), anchored_at: '2020-01-01T00:00:00Z' } };
    const report = await verifyAnchor({ value: attach(receipt, forged) });
    expectFailures(report, ['digest', 'nostr-content', 'ots-digest']);
    expect(statusOf(report, 'envelope')).toBe('PASS');
  });

  it('a tampered event signature fails nostr-event', async () => {
    const { proof } = envelopeModeProof(receipt);
    const nostr = proof.nostr as Json;
    const event = nostr.event as Json;
    const sig = event.sig as string;
    const tampered = { ...proof, nostr: { ...nostr, event: { ...event, sig: (sig[0] === '0' ? '1' : '0') + sig.slice(1) } } };
    const report = await verifyAnchor({ value: attach(receipt, tampered) });
    expectFailures(report, ['nostr-event']);
    expect(detailOf(report, 'nostr-event')).toMatch(/signature/);
    expect(report.witnesses.nostr?.verified).toBe('failed');
  });

  it('tampered event content with the id left fails nostr-event (id) and nostr-content', async () => {
    const { proof } = envelopeModeProof(receipt);
    const nostr = proof.nostr as Json;
    const event = nostr.event as Json;
    const tampered = { ...proof, nostr: { ...nostr, event: { ...event, content: `${event.content as string} ` } } };
    const report = await verifyAnchor({ value: attach(receipt, tampered) });
    expectFailures(report, ['nostr-event', 'nostr-content']);
    expect(detailOf(report, 'nostr-event')).toMatch(/is not the NIP-01 hash/);
  });

  it('an event from another key fails signer when --expected-pubkey is given, and is only unverified without it', async () => {
    const { proof } = envelopeModeProof(receipt, { key: OTHER_KEY });
    const strict = await verifyAnchor({ value: attach(receipt, proof) }, { expectedPubkeys: [KEY.publicKey] });
    expectFailures(strict, ['signer']);
    expect(detailOf(strict, 'signer')).toContain(`signed by ${OTHER_KEY.npub}`);
    expect(detailOf(strict, 'signer')).toContain(KEY.npub);

    const lax = await verifyAnchor({ value: attach(receipt, proof) });
    expect(statusOf(lax, 'signer')).toBe('SKIP');
    expect(lax.verdict).toBe('PASS');
  });

  it('an .ots for another digest fails ots-digest', async () => {
    const { proof } = envelopeModeProof(receipt);
    const otherDigest = subjectOf(workflow).digest;
    const ots = { ...(proof.ots as Json), proof: otsBatch([otherDigest]).proofs[0] };
    const report = await verifyAnchor({ value: attach(receipt, { ...proof, ots }) });
    expectFailures(report, ['ots-digest']);
    expect(detailOf(report, 'ots-digest')).toContain(`not d ${proof.digest as string}`);
    expect(statusOf(report, 'ots-attestations')).toBe('SKIP');
  });

  it('a header whose merkle root differs fails bitcoin', async () => {
    const { proof, block } = envelopeModeProof(receipt, { mineAt: 7 });
    const source = new HeadersFileSource(new Map([[7, unrelatedHeader(7)]]));
    const report = await verifyAnchor({ value: attach(receipt, proof) }, { ...regtest, headerSource: source });
    expectFailures(report, ['bitcoin']);
    expect(detailOf(report, 'bitcoin')).toMatch(/block 7 \([0-9a-f]{64}\) has merkle root [0-9a-f]{64}, the proof commits to [0-9a-f]{64}/);
    expect(block).not.toBeNull();
    expect(report.witnesses.ots?.verified).toBe('failed');
  });

  it('a regtest header checked as mainnet fails bitcoin on proof of work', async () => {
    const { proof, block } = envelopeModeProof(receipt, { mineAt: 8 });
    const report = await verifyAnchor({ value: attach(receipt, proof) }, { headerSource: headersFor(block) });
    expectFailures(report, ['bitcoin']);
    expect(detailOf(report, 'bitcoin')).toMatch(/easier than mainnet permits/);
  });

  it('a proof claiming another block hash than the header source has fails bitcoin', async () => {
    const { proof, block } = envelopeModeProof(receipt, { mineAt: 9 });
    const ots = proof.ots as Json;
    const forged = { ...proof, ots: { ...ots, bitcoin: { ...(ots.bitcoin as Json), block_hash: 'f'.repeat(64) } } };
    const report = await verifyAnchor({ value: attach(receipt, forged) }, { ...regtest, headerSource: headersFor(block) });
    expectFailures(report, ['bitcoin']);
    expect(detailOf(report, 'bitcoin')).toContain(`the proof claims block 9 is ${'f'.repeat(64)}`);
  });

  it('a header source without the block skips bitcoin (not a verdict on the proof)', async () => {
    const { proof } = envelopeModeProof(receipt, { mineAt: 10 });
    const report = await verifyAnchor({ value: attach(receipt, proof) }, { ...regtest, headerSource: new HeadersFileSource(new Map()) });
    expect(statusOf(report, 'bitcoin')).toBe('SKIP');
    expect(detailOf(report, 'bitcoin')).toContain('has no header at height 10');
  });

  it('a proof that says confirmed but carries no event fails nostr-event', async () => {
    const { proof } = envelopeModeProof(receipt, { noEvent: true });
    const report = await verifyAnchor({ value: attach(receipt, proof) });
    expectFailures(report, ['nostr-event']);
    const pending = envelopeModeProof(receipt, { noEvent: true, nostrStatus: 'pending' }).proof;
    const ok = await verifyAnchor({ value: attach(receipt, pending) });
    expect(statusOf(ok, 'nostr-event')).toBe('SKIP');
    expect(ok.verdict).toBe('PASS');
  });

  it('an .ots that does not parse fails ots-digest with the codec\'s reason', async () => {
    const { proof } = envelopeModeProof(receipt);
    const bytes = Buffer.from((proof.ots as Json).proof as string, 'base64');
    const truncated = bytes.subarray(0, bytes.length - 3).toString('base64');
    const report = await verifyAnchor({ value: attach(receipt, { ...proof, ots: { ...(proof.ots as Json), proof: truncated } }) });
    expectFailures(report, ['ots-digest']);
    expect(detailOf(report, 'ots-digest')).toMatch(/^the \.ots does not read: .*at byte \d+/);
  });
});
