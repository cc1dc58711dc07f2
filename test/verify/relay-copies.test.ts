/**
 * A proof whose relays took copies of the event (NIP-13 proof of work, re-dated): the
 * verifier checks each copy against the event, and a copy that is not the same anchor fails.
 */
import { describe, expect, it } from 'vitest';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { PowMiner } from '../../src/core/nostr/pow.js';
import type { SignedEvent } from '../../src/core/nostr/events.js';
import type { SigningKey } from '../../src/core/nostr/keys.js';
import { KEY, OTHER_KEY, envelopeModeProof, receiptNumber, type Json } from './build-proofs.js';

function minedCopy(ev: SignedEvent, bits: number, key: SigningKey = KEY, tweak: (t: { tags: string[][]; content: string; created_at: number }) => void = () => undefined): SignedEvent {
  const miner = new PowMiner(ev, bits);
  for (let i = 0; i < 10_000; i++) {
    const m = miner.step(1000);
    if (m) {
      const t = { tags: m.tags, content: m.content, created_at: m.created_at };
      tweak(t);
      return key.sign({ kind: m.kind, ...t });
    }
  }
  throw new Error('not mined');
}

async function nostrEvent(doc: Json, proof: Json) {
  const report = await verifyAnchor({ value: doc, proof }, { expectedPubkeys: [KEY.publicKey] });
  return { verdict: report.verdict, check: report.checks.find((c) => c.name === 'nostr-event')! };
}

describe('relay copies in a proof', () => {
  const doc = receiptNumber(901);

  function withCopy(copy: SignedEvent): Json {
    const { proof } = envelopeModeProof(doc);
    const relays = (proof.nostr as { relays: Json[] }).relays;
    relays[0] = { ...relays[0], event: copy };
    return proof;
  }

  it('a mined copy verifies: PASS, the detail names the relay, the copy and its proof of work', async () => {
    const { event } = envelopeModeProof(doc);
    const copy = minedCopy(event!, 8);
    const proof = withCopy(copy);
    const { verdict, check } = await nostrEvent(doc, proof);
    expect(verdict).toBe('PASS');
    expect(check.status).toBe('PASS');
    expect(check.detail).toMatch(new RegExp(`took copy ${copy.id} \\(proof of work \\d+ bits\\)`));
  });

  it('a copy signed by another key, with another tag, another content or a broken id fails nostr-event', async () => {
    const { event } = envelopeModeProof(doc);
    const cases: Array<[string, SignedEvent, RegExp]> = [
      ['other signer', minedCopy(event!, 4, OTHER_KEY), /is signed by .*, not by the event's signer/],
      ['extra tag', minedCopy(event!, 4, KEY, (t) => t.tags.push(['t', 'extra'])), /other tags than the event/],
      ['other content', minedCopy(event!, 4, KEY, (t) => (t.content = t.content.replace('"receipt"', '"receipt" '))), /another kind or content/],
      ['broken id', { ...minedCopy(event!, 4), id: 'ab'.repeat(32) }, /not the NIP-01 hash/],
    ];
    for (const [name, copy, reason] of cases) {
      const { verdict, check } = await nostrEvent(doc, withCopy(copy));
      expect(verdict, name).toBe('FAIL');
      expect(check.status, name).toBe('FAIL');
      expect(check.detail, name).toMatch(reason);
    }
  });
});
