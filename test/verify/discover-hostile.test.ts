/**
 * Discovery against relays that do not keep to the filter: what they serve is verified
 * event by event, and only the trusted signer's anchors of this very subject count.
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors/errors.js';
import { discoverAnchors } from '../../src/core/verify/discover.js';
import type { RelayFetcher } from '../../src/core/verify/online.js';
import { envelopeEvent, serializeEvent } from '../../src/core/nostr/events.js';
import { loadFixture } from '../fixtures/index.js';
import { KEY, OTHER_KEY, receiptNumber, subjectOf } from './build-proofs.js';

const receipt = loadFixture('receipt-minimal');

function eventFor(doc: unknown, key = KEY): string {
  const s = subjectOf(doc);
  return serializeEvent(envelopeEvent({ canonical: s.canonical, digestHex: s.digestHex }, key));
}

/** Serves the same texts to every query, whatever the filter; `fetch` by id finds them too. */
function servingAll(texts: string[], unreachable: string[] = []): RelayFetcher & { queries: unknown[] } {
  const queries: unknown[] = [];
  return {
    queries,
    async query(url, filter) {
      queries.push(filter);
      if (unreachable.includes(url)) throw new Error(`${url}: connect ECONNREFUSED`);
      return texts;
    },
    async fetch(url, id) {
      if (unreachable.includes(url)) throw new Error(`${url}: connect ECONNREFUSED`);
      return texts.find((t) => (JSON.parse(t) as { id: string }).id === id) ?? null;
    },
    close() {},
  };
}

describe('discovery against relays that ignore the filter', () => {
  it('ignores a forger\'s event, another subject\'s anchor and garbage, naming why; checks only the trusted anchor', async () => {
    const genuine = eventFor(receipt);
    const forged = eventFor(receipt, OTHER_KEY);
    const other = eventFor(receiptNumber(7));
    const fetcher = servingAll([forged, other, '{"id":"nope"}', genuine]);
    const report = await discoverAnchors(receipt, { relays: ['wss://a.example', 'wss://b.example'], trustedPubkeys: [KEY.publicKey], fetcher });
    expect(fetcher.queries[0]).toEqual({ authors: [KEY.publicKey], kinds: [3099], '#i': [`aer1:${(receipt as { id: string }).id}`], limit: 500 });
    expect(report.verdict).toBe('PASS');
    expect(report.anchors).toHaveLength(1);
    expect(report.anchors[0]).toMatchObject({ pubkey: KEY.publicKey, relays: ['wss://a.example', 'wss://b.example'] });
    const reasons = report.ignored.filter((i) => i.relay === 'wss://a.example').map((i) => i.reason);
    expect(reasons).toEqual([
      `signed by ${OTHER_KEY.publicKey}, not a trusted key`,
      'id must be 64 lowercase hex characters',
      'it anchors another subject "00000000-0000-4000-8000-000000000007"',
    ]);
  });

  it('fails naming equivocation when two trusted anchors of the key commit to different roots (a conflicting re-anchor)', async () => {
    const altered = { ...receiptNumber(8), id: (receipt as { id: string }).id };
    const fetcher = servingAll([eventFor(receipt), eventFor(altered)]);
    const report = await discoverAnchors(receipt, { relays: ['wss://a.example'], trustedPubkeys: [KEY.publicKey], fetcher });
    expect(report.anchors).toHaveLength(2);
    expect(report.anchors.map((a) => a.report.verdict).sort()).toEqual(['FAIL', 'PASS']);
    expect(report.verdict).toBe('FAIL');
    expect(report.reason).toMatch(/^equivocation: the trusted signer anchored receipt ".*" with two different roots: event [0-9a-f]{64} \(created_at \d+ .*\) and event [0-9a-f]{64} .* differ in output_sha256 .*; against the document: anchor event [0-9a-f]{64}: /);
  });

  it('refuses a document nested thousands deep with a usage error (exit 2), not a stack overflow', async () => {
    const workflow = loadFixture('workflow-receipt-example');
    const deep = JSON.parse(JSON.stringify({ ...workflow, type: '__DEEP__' }).replace('"__DEEP__"', `${'['.repeat(5000)}"x"${']'.repeat(5000)}`)) as unknown;
    const err = await discoverAnchors(deep, { relays: ['wss://a.example'], trustedPubkeys: [KEY.publicKey], fetcher: servingAll([]) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toBe('the document is nested deeper than 64 levels (the limit for any JSON input)');
  });

  it('says no relay could be asked when none answers: INCONCLUSIVE, even under --require-anchored (nothing shows it is not anchored)', async () => {
    const fetcher = servingAll([], ['wss://a.example']);
    const report = await discoverAnchors(receipt, { relays: ['wss://a.example'], trustedPubkeys: [KEY.publicKey], fetcher, requireAnchored: true });
    expect(report.verdict).toBe('INCONCLUSIVE');
    expect(report.reason).toBe(`no relay could be asked for receipt "${(receipt as { id: string }).id}" (wss://a.example: the relay failed: wss://a.example: connect ECONNREFUSED); the relays' answers are incomplete (no relay answered): nothing was established`);
  });
});
