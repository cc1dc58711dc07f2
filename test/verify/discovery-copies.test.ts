/**
 * Relay copies and NIP-03 attestations beside anchors on real dev relays: discovery and the
 * audit count a copy (NIP-13 mined, re-dated) with the event it copies — one anchor, held by
 * every relay that took either — and a kind-1040 attestation, the signer's or a forger's,
 * never as an anchor nor as a withheld subject.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit, auditExitCode } from '../../src/core/verify/audit.js';
import { discoverAnchors } from '../../src/core/verify/discover.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { envelopeEvent, type SignedEvent } from '../../src/core/nostr/events.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { PowMiner } from '../../src/core/nostr/pow.js';
import { nip03Event } from '../../src/core/nostr/nip03.js';
import { KEY, OTHER_KEY, attach, batchModeProofs, receiptNumber, subjectOf, type Json } from './build-proofs.js';

function mined(ev: SignedEvent, bits: number, createdAt = ev.created_at): SignedEvent {
  const miner = new PowMiner({ ...ev, created_at: createdAt }, bits);
  for (let i = 0; i < 10_000; i++) {
    const m = miner.step(1000);
    if (m) return KEY.sign({ kind: m.kind, created_at: m.created_at, tags: m.tags, content: m.content });
  }
  throw new Error('not mined');
}

describe('relay copies and NIP-03 attestations in discovery and audit', () => {
  const doc = receiptNumber(903);
  const s = subjectOf(doc);
  const event = envelopeEvent({ canonical: s.canonical, digestHex: s.digestHex }, KEY);
  const powCopy = mined(event, 8);
  const redated = mined(event, 4, event.created_at + 3600);
  const attestation = nip03Event({ eventId: event.id, eventKind: event.kind, ots: Buffer.from('not really an ots file'), createdAt: event.created_at + 7200 }, KEY);
  const forgedAttestation = nip03Event({ eventId: event.id, eventKind: event.kind, ots: Buffer.from('forged'), createdAt: event.created_at + 7200 }, OTHER_KEY);
  let a: DevRelay;
  let b: DevRelay;
  let c: DevRelay;
  const fetcher = new RelayClientFetcher(5000);

  beforeAll(async () => {
    [a, b, c] = await Promise.all([startDevRelay(), startDevRelay(), startDevRelay()]);
    for (const [relay, events] of [[a, [event, attestation, forgedAttestation]], [b, [powCopy, attestation]], [c, [redated]]] as const) {
      const client = new RelayClient(relay.url, { ping: false });
      try {
        for (const ev of events) expect((await client.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
      } finally {
        client.close();
      }
    }
  });

  afterAll(async () => {
    fetcher.close();
    await Promise.all([a?.close(), b?.close(), c?.close()]);
  });

  it('discovery finds one anchor held by the three relays, each asked for the copy it holds', async () => {
    const relays = [a.url, b.url, c.url];
    const report = await discoverAnchors(doc, { relays, trustedPubkeys: [KEY.publicKey], fetcher, verify: { relays } });
    expect(report.verdict).toBe('PASS');
    expect(report.anchors).toHaveLength(1);
    expect(report.anchors[0]).toMatchObject({ event_id: event.id, relays: [a.url, b.url, c.url] });
    expect(report.reason).toMatch(/^the anchor found on the relays matches the document: nostr confirmed/);
    expect(report.anchors[0]!.report.witnesses.nostr).toMatchObject({ verified: 'confirmed', held_by: [a.url, b.url, c.url] });
  });

  it('the audit counts one anchor event, one matching row; with the folder empty, one withheld row', async () => {
    for (const kinds of [[3099], [3099, 1040]]) {
      const report = await audit([{ file: 'r.json', value: doc }], { relays: [a.url, b.url, c.url], trustedPubkeys: [KEY.publicKey], kinds, fetcher });
      expect(report.anchor_events, `kinds ${kinds}`).toBe(1);
      expect(report.rows, `kinds ${kinds}`).toEqual([expect.objectContaining({ outcome: 'matching', anchors: [event.id], detail: expect.stringMatching(/^matches its anchor/) })]);
      expect(auditExitCode(report)).toBe(0);
      const empty = await audit([], { relays: [a.url, b.url, c.url], trustedPubkeys: [KEY.publicKey], kinds, fetcher });
      expect(empty.rows.map((r) => r.outcome), `kinds ${kinds}`).toEqual(['withheld']);
      expect(empty.anchor_events).toBe(1);
    }
  });

  it('a kind-1040 attestation is never an anchor, whoever signed it, and says why it was set aside', async () => {
    const report = await audit([], { relays: [a.url], trustedPubkeys: [KEY.publicKey, OTHER_KEY.publicKey], kinds: [3099, 1040], fetcher });
    expect(report.anchor_events).toBe(1);
    expect(report.batch_events).toBe(0);
    const reasons = report.ignored.filter((i) => i.event_id === attestation.id || i.event_id === forgedAttestation.id).map((i) => i.reason);
    expect(reasons).toEqual(['its content is not JSON', 'its content is not JSON']);
  });

  it('a batch event and its mined copy are one batch event; a document whose relay holds only the copy matches by its attached proof', async () => {
    const docs = [receiptNumber(905), receiptNumber(906)];
    const batch = batchModeProofs(docs, { noOts: true });
    const copy = mined(batch.event, 8);
    const [d, e] = await Promise.all([startDevRelay(), startDevRelay()]);
    try {
      for (const [relay, ev] of [[d, batch.event], [e, copy]] as const) {
        const client = new RelayClient(relay.url, { ping: false });
        try {
          expect((await client.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
        } finally {
          client.close();
        }
      }
      const both = await audit([], { relays: [d.url, e.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher });
      expect(both.batch_events).toBe(1);
      // the proof says relay e took the copy; e holds nothing else
      const proof = JSON.parse(JSON.stringify(batch.proofs[0])) as Json;
      (proof.nostr as Json).relays = [{ url: e.url, status: 'accepted', message: '', at: '', event: copy }];
      const report = await audit([{ file: 'b.json', value: attach(docs[0], proof) }], { relays: [e.url], trustedPubkeys: [KEY.publicKey], kinds: [3099], fetcher });
      expect(report.rows).toEqual([expect.objectContaining({ outcome: 'matching', detail: expect.stringContaining(`on ${e.url}`) })]);
    } finally {
      await Promise.all([d.close(), e.close()]);
    }
  });
});
