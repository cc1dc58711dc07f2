import { describe, expect, it } from 'vitest';
import { HeadersFileSource } from '../../src/adapters/bitcoin/sources.js';
import { BitcoinCheckCache } from '../../src/core/verify/bitcoin.js';
import { EventCheckCache } from '../../src/core/verify/nostr.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { CHECK_NAMES, type CheckName } from '../../src/core/verify/types.js';
import { loadFixture } from '../fixtures/index.js';
import { batchEvent, envelopeEvent } from '../../src/core/nostr/events.js';
import { ANCHORED_AT, KEY, attach, batchModeProofs, receiptNumber, subjectOf, type Json } from './build-proofs.js';

const workflow = loadFixture('workflow-receipt-example');

function check(report: VerifyReport, name: CheckName): { status: string; detail: string } {
  return report.checks.find((c) => c.name === name)!;
}

function failing(report: VerifyReport): string[] {
  return report.checks.filter((c) => c.status === 'FAIL').map((c) => c.name);
}

const docs = [receiptNumber(1), receiptNumber(2), workflow, receiptNumber(4), receiptNumber(5)];

describe('batch mode', () => {
  it('passes every subject of a pending batch, with batch-path in place of nostr-content', async () => {
    const { proofs } = batchModeProofs(docs, { nostrStatus: 'partial' });
    for (const [i, doc] of docs.entries()) {
      const report = await verifyAnchor({ value: attach(doc, proofs[i]!) });
      expect(report.checks.map((c) => c.name)).toEqual(CHECK_NAMES.filter((n) => n !== 'nostr-content'));
      expect(failing(report), `subject ${i}`).toEqual([]);
      expect(check(report, 'batch-path')).toMatchObject({ status: 'PASS', detail: expect.stringContaining(`leaf ${i} of 5`) });
      expect(report.verdict).toBe('PASS');
      expect(report.pending).toBe(true);
      expect(report.witnesses.nostr).toMatchObject({ mode: 'batch', claimed: 'partial', verified: 'untrusted' });
      const trusted = await verifyAnchor({ value: attach(doc, proofs[i]!) }, { expectedPubkeys: [KEY.publicKey] });
      expect(trusted.witnesses.nostr).toMatchObject({ mode: 'batch', claimed: 'partial', verified: 'unverified' });
    }
  });

  it('passes every subject after Bitcoin confirmation, checked against regtest headers', async () => {
    const { proofs, block } = batchModeProofs(docs, { mineAt: 300, nostrStatus: 'pending' });
    const source = new HeadersFileSource(new Map([[300, block!.header]]));
    const bitcoinCache = new BitcoinCheckCache();
    for (const [i, doc] of docs.entries()) {
      const report = await verifyAnchor({ value: attach(doc, proofs[i]!) }, { network: 'regtest', headerSource: source, bitcoinCache, requireConfirmed: true });
      expect(failing(report)).toEqual([]);
      expect(check(report, 'bitcoin').status).toBe('PASS');
      expect(report.verdict).toBe('PASS');
    }
    // the batch shares one Bitcoin attestation: one header check for all five proofs
    expect(bitcoinCache.lookups).toBe(1);
  });

  it('verifies the shared batch event signature once for a directory of proofs', async () => {
    const { proofs } = batchModeProofs(docs);
    const eventCache = new EventCheckCache();
    for (const [i, doc] of docs.entries()) {
      const report = await verifyAnchor({ value: attach(doc, proofs[i]!) }, { eventCache });
      expect(check(report, 'nostr-event').status).toBe('PASS');
    }
    expect(eventCache.verifications).toBe(1);
    expect(eventCache.hits).toBe(4);
  });

  it('does not let a tampered copy of a cached event ride on the cached verdict', async () => {
    const { proofs } = batchModeProofs(docs);
    const eventCache = new EventCheckCache();
    await verifyAnchor({ value: attach(docs[0], proofs[0]!) }, { eventCache });
    const nostr = proofs[1]!.nostr as Json;
    const event = nostr.event as Json;
    const tampered = { ...proofs[1]!, nostr: { ...nostr, event: { ...event, tags: [...(event.tags as string[][]), ['t', 'x']] } } };
    const report = await verifyAnchor({ value: attach(docs[1], tampered) }, { eventCache });
    expect(check(report, 'nostr-event').status).toBe('FAIL');
    expect(eventCache.verifications).toBe(2);
  });

  it('fails batch-path for a path that belongs to another digest', async () => {
    const { proofs } = batchModeProofs(docs);
    // subject 0's document with subject 3's proof envelope swapped in: the path of leaf 0 from another d
    const nostr = proofs[0]!.nostr as Json;
    const otherPath = { ...proofs[0]!, nostr: { ...nostr, batch: (proofs[3]!.nostr as Json).batch } };
    const report = await verifyAnchor({ value: attach(docs[0], otherPath) });
    expect(failing(report)).toEqual(['batch-path']);
    expect(check(report, 'batch-path').detail).toMatch(/^the path leads from d to [0-9a-f]{64}, the event's batch_root is [0-9a-f]{64}$/);
  });

  it('fails batch-path when the proof is for a digest outside the batch', async () => {
    const { proofs } = batchModeProofs(docs);
    const outsider = receiptNumber(99);
    const s = subjectOf(outsider);
    const forged = { ...proofs[2]!, envelope: s.envelope, digest: s.digestHex };
    const report = await verifyAnchor({ value: attach(outsider, forged) });
    expect(failing(report)).toEqual(['batch-path', 'ots-digest']);
  });

  it('fails batch-path when the path does not fit the leaf index and size', async () => {
    const { proofs } = batchModeProofs(docs);
    const nostr = proofs[0]!.nostr as Json;
    const batch = nostr.batch as Json;
    const report = await verifyAnchor({ value: attach(docs[0], { ...proofs[0]!, nostr: { ...nostr, batch: { ...batch, path: (batch.path as string[]).slice(1) } } }) });
    expect(check(report, 'batch-path').detail).toBe('an inclusion path of 2 hashes does not fit leaf 0 of a batch of 5');
  });

  it('fails batch-path when the event restates the leaf count of the same root', async () => {
    const { proofs } = batchModeProofs(docs);
    const nostr = proofs[0]!.nostr as Json;
    const root = JSON.parse((nostr.event as Json).content as string).batch_root as string;
    const restated = batchEvent({ anchoredAt: ANCHORED_AT, batchRootHex: root, leafCount: 6 }, KEY);
    const report = await verifyAnchor({ value: attach(docs[0], { ...proofs[0]!, nostr: { ...nostr, event: restated } }) });
    expect(failing(report)).toEqual(['batch-path']);
    expect(check(report, 'batch-path').detail).toBe("the event's leaf_count is 6, the path is for a batch of 5");
  });

  it('fails batch-path when a batch proof carries an envelope-mode event', async () => {
    const { proofs } = batchModeProofs(docs);
    const s = subjectOf(docs[0]);
    const nostr = proofs[0]!.nostr as Json;
    const envelopeEv = envelopeEvent({ canonical: s.canonical, digestHex: s.digestHex }, KEY);
    const report = await verifyAnchor({ value: attach(docs[0], { ...proofs[0]!, nostr: { ...nostr, event: envelopeEv } }) });
    expect(failing(report)).toEqual(['batch-path']);
    expect(check(report, 'batch-path').detail).toBe('the event content has type "zambo-receipt-anchor/1", expected "aer1-anchor-batch/1"');
  });
});
