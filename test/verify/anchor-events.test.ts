/** Events served by relays, read without a proof: what discovery and audit accept and why they refuse the rest. */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { readAnchorEvent, type AnchorEventPolicy } from '../../src/core/verify/anchor-events.js';
import { batchEvent, envelopeEvent, serializeEvent } from '../../src/core/nostr/events.js';
import { KEY, OTHER_KEY } from './build-proofs.js';

const policy: AnchorEventPolicy = { trusted: new Set([KEY.publicKey]), kinds: new Set([3099]) };
const envelope = { type: 'zambo-receipt-anchor/1', subject: 'receipt', receipt_uuid: 'r-1', output_sha256: sha256Hex('o'), anchored_at: '2026-01-31T12:00:00Z' };
const canonical = canonicalJson(envelope);
const digestHex = sha256Hex(canonical);

function signed(tags: string[][], content = canonical, key = KEY): string {
  return serializeEvent(key.sign({ kind: 3099, created_at: 1_769_860_800, tags, content }));
}

describe('readAnchorEvent', () => {
  it('accepts the daemon\'s envelope event and names its subject key and digest', () => {
    const r = readAnchorEvent(serializeEvent(envelopeEvent({ canonical, digestHex }, KEY)), policy);
    expect(r).toMatchObject({ ok: true, mode: 'envelope', key: 'r-1', digest: digestHex });
  });

  it('recognizes a batch event and ties it to no subject', () => {
    const r = readAnchorEvent(serializeEvent(batchEvent({ anchoredAt: '2026-01-31T12:00:00Z', batchRootHex: digestHex, leafCount: 3 }, KEY)), policy);
    expect(r).toMatchObject({ ok: true, mode: 'batch' });
  });

  it('refuses, naming why: another signer, another kind, a bad signature, a foreign i tag, a wrong x tag, nested or non-canonical content', () => {
    const good = envelopeEvent({ canonical, digestHex }, OTHER_KEY);
    const cases: Array<[string, string, RegExp]> = [
      ['untrusted signer (a relay that ignores the authors filter)', serializeEvent(good), /^signed by [0-9a-f]{64}, not a trusted key$/],
      ['kind', serializeEvent(KEY.sign({ kind: 4000, created_at: 1, tags: [['x', digestHex]], content: canonical })), /^kind 4000 was not asked for$/],
      ['signature', JSON.stringify({ ...JSON.parse(signed([['x', digestHex]])), content: canonical.replace('r-1', 'r-2') }), /not the NIP-01 hash/],
      ['i tag of another subject', signed([['x', digestHex], ['i', 'aer1:r-2']]), /^its i tag does not name the envelope's subject key "r-1"$/],
      ['x tag', signed([['x', sha256Hex('other')], ['i', 'aer1:r-1']]), /^its x tag is not the envelope's digest/],
      ['nested content', signed([], JSON.stringify({ ...envelope, receipt_uuid: [[[['deep']]]] })), /not a flat JSON object/],
      ['not canonical', signed([['x', digestHex]], JSON.stringify(envelope, null, 1)), /not the envelope's canonical bytes/],
      ['not an envelope', signed([], '{"type":"other"}'), /^its content is not a valid envelope: /],
    ];
    for (const [what, json, reason] of cases) {
      const r = readAnchorEvent(json, policy);
      expect(r.ok, what).toBe(false);
      if (!r.ok) expect(r.reason, what).toMatch(reason);
    }
  });

  it('accepts an event signed before the subject tag existed (no i tag at all)', () => {
    expect(readAnchorEvent(signed([['x', digestHex]]), policy)).toMatchObject({ ok: true, mode: 'envelope', key: 'r-1' });
  });
});
