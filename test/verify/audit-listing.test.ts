/**
 * The audit's listing is paged and bounded: every anchor of the signer is listed across
 * pages (a real dev relay, small pages), more events in one second than a page holds are
 * read by asking for that second again, and a listing cut short by its bound is reported
 * incomplete (exit 3), never as "all match".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { audit, auditExitCode } from '../../src/core/verify/audit.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { envelopeEvent, type SignedEvent } from '../../src/core/nostr/events.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { KEY, OTHER_KEY } from './build-proofs.js';

function anchorOf(uuid: string, anchoredAt: string, key = KEY): SignedEvent {
  const canonical = canonicalJson({ type: 'zambo-receipt-anchor/1', subject: 'receipt', receipt_uuid: uuid, output_sha256: sha256Hex(uuid), anchored_at: anchoredAt });
  return envelopeEvent({ canonical, digestHex: sha256Hex(canonical) }, key);
}

describe('audit listing', () => {
  let spread: DevRelay;
  let crowded: DevRelay;
  const fetcher = new RelayClientFetcher(5000);
  // seven anchors a second apart, one signed by someone else
  const spreadEvents = Array.from({ length: 7 }, (_, i) => anchorOf(`spread-${i}`, `2026-01-01T00:00:0${i}Z`));
  // three anchors in the same second: more than a page of 2 can hold
  const crowdedEvents = Array.from({ length: 3 }, (_, i) => anchorOf(`crowded-${i}`, '2026-01-01T00:00:00Z'));

  beforeAll(async () => {
    [spread, crowded] = await Promise.all([startDevRelay(), startDevRelay()]);
    for (const [relay, events] of [[spread, [...spreadEvents, anchorOf('other', '2026-01-01T00:00:09Z', OTHER_KEY)]], [crowded, crowdedEvents]] as const) {
      const c = new RelayClient(relay.url, { ping: false });
      try {
        for (const ev of events) expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
      } finally {
        c.close();
      }
    }
  });

  afterAll(async () => {
    fetcher.close();
    await Promise.all([spread?.close(), crowded?.close()]);
  });

  it('pages through every anchor of the signer, pages of 2, and none of another signer', async () => {
    const report = await audit([], { relays: [spread.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher, bound: { pageSize: 2 } });
    expect(report.relays).toEqual([expect.objectContaining({ url: spread.url, events: 7, error: null, complete: true, incomplete: null })]);
    expect(report.rows.map((r) => r.key)).toEqual(spreadEvents.map((_, i) => `spread-${i}`));
    expect(report.counts.withheld).toBe(7);
    expect(auditExitCode(report)).toBe(1);
  });

  it('lists from --since on, and still finds a folder document anchored before it by key', async () => {
    const doc = { file: 'spread-0.json', value: { id: 'spread-0', canonical_bytes: '', output_hash: `sha256:${sha256Hex('')}` } };
    const report = await audit([doc], { relays: [spread.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher, bound: { pageSize: 2 }, since: spreadEvents[5]!.created_at });
    expect(report.rows.filter((r) => r.outcome === 'withheld').map((r) => r.key)).toEqual(['spread-5', 'spread-6']);
    // spread-0 predates --since: looked up by key, found, and its output differs from the anchor
    expect(report.rows.find((r) => r.key === 'spread-0')).toMatchObject({ outcome: 'altered', anchors: [spreadEvents[0]!.id] });
  });

  it('reads three anchors of one second with pages of 2: the tie second is asked for again, none is lost', async () => {
    const report = await audit([], { relays: [crowded.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher, bound: { pageSize: 2 } });
    expect(report.relays[0]).toMatchObject({ url: crowded.url, events: 3, complete: true, error: null });
    expect(report.rows.map((r) => r.key).sort()).toEqual(['crowded-0', 'crowded-1', 'crowded-2']);
  });

  it('reports a listing cut short by its bound as incomplete, never "all match"', async () => {
    const report = await audit([], { relays: [crowded.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher, bound: { pageSize: 2, maxEvents: 2 } });
    expect(report.relays[0]).toMatchObject({ url: crowded.url, events: 2, complete: false, error: null, incomplete: 'the bound of 2 events was reached' });
    expect(report.complete).toBe(false);
    // the two anchors read are withheld (exit 1); with nothing found it would be exit 3, never 0
    expect(report.counts.withheld).toBe(2);
    expect(auditExitCode(report)).toBe(1);
    expect(auditExitCode({ ...report, rows: [] })).toBe(3);
  });
});
