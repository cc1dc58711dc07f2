/**
 * A proof whose relays took copies of the event (NIP-13 proof of work, re-dated): the
 * verifier checks each copy against the event, and a copy that is not the same anchor fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAnchor } from '../../src/core/verify/pipeline.js';
import { EventCheckCache } from '../../src/core/verify/nostr.js';
import { PowMiner, getPow } from '../../src/core/nostr/pow.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
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

  /** A copy of `ev` signed by KEY with these tags (the event's own tags, nonce tags given here). */
  function copyWithTags(ev: SignedEvent, nonceTags: string[][], createdAt = ev.created_at): SignedEvent {
    return KEY.sign({ kind: ev.kind, created_at: createdAt, content: ev.content, tags: [...ev.tags, ...nonceTags] });
  }

  it('holds a copy to NIP-13 exactly: one nonce tag ["nonce", "<n>", "<target>"], its target met by the id', async () => {
    const { event } = envelopeModeProof(doc);
    const unmet = copyWithTags(event!, [['nonce', '7', '200']]);
    expect(getPow(unmet.id)).toBeLessThan(200);
    const cases: Array<[string, SignedEvent, RegExp]> = [
      ['two nonce tags', copyWithTags(event!, [['nonce', '1', '0'], ['nonce', '2', '0']]), /2 nonce tags/],
      ['a nonce tag of two entries', copyWithTags(event!, [['nonce', '1']]), /nonce tag \["nonce","1"\] is not \["nonce", "<n>", "<target>"\]/],
      ['a nonce tag of four entries', copyWithTags(event!, [['nonce', '1', '0', 'x']]), /nonce tag .* is not \["nonce", "<n>", "<target>"\]/],
      ['a target that is not a number', copyWithTags(event!, [['nonce', '1', 'twenty']]), /nonce tag .* is not \["nonce", "<n>", "<target>"\]/],
      ['a target its id does not meet', unmet, /leading zero bits, below the target 200/],
    ];
    for (const [name, copy, reason] of cases) {
      const { verdict, check } = await nostrEvent(doc, withCopy(copy));
      expect(verdict, name).toBe('FAIL');
      expect(check.status, name).toBe('FAIL');
      expect(check.detail, name).toMatch(reason);
      expect(check.detail, name).not.toMatch(/\n/);
    }
  });

  it('takes a re-dated copy (created_at is the signer\'s word, never a time proof) and says so', async () => {
    const { event } = envelopeModeProof(doc);
    const copy = copyWithTags(event!, [], event!.created_at + 86_400 * 365 * 10);
    const report = await verifyAnchor({ value: doc, proof: withCopy(copy) }, { expectedPubkeys: [KEY.publicKey] });
    expect(report.verdict).toBe('PASS');
    expect(report.checks.find((c) => c.name === 'nostr-event')!.detail).toContain(`created_at ${copy.created_at}`);
    // offline the copy proves nothing more than the event: the witness stays unverified
    expect(report.witnesses.nostr?.verified).toBe('unverified');
  });
});

describe('many relay copies', () => {
  it('5,000 entries naming one copy cost one signature check; 5,000 bad copies stop at the first; each run well under 2 s', async () => {
    const doc = receiptNumber(904);
    const { proof, event } = envelopeModeProof(doc);
    const copy = minedCopy(event!, 4);
    const many = (make: (i: number) => unknown): Json => {
      const p = JSON.parse(JSON.stringify(proof)) as Json;
      (p.nostr as Json).relays = Array.from({ length: 5000 }, (_, i) => ({ url: `wss://r${i}.example`, status: 'accepted', message: '', at: '', event: make(i) }));
      return p;
    };
    const cache = new EventCheckCache();
    let t0 = performance.now();
    const same = await verifyAnchor({ value: doc, proof: many(() => copy) }, { expectedPubkeys: [KEY.publicKey], eventCache: cache });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(same.verdict).toBe('PASS');
    expect(cache.verifications).toBe(2); // the event and its one copy
    expect(same.reason.length).toBeLessThan(400);
    // the nostr-event line names a few copies and counts the rest: one bounded line
    const line = same.checks.find((c) => c.name === 'nostr-event')!.detail;
    expect(line.length).toBeLessThan(1000);
    expect(line).toMatch(/and 4997 more relays took copies/);
    t0 = performance.now();
    const bad = await verifyAnchor({ value: doc, proof: many((i) => ({ ...copy, content: `${copy.content}${i}` })) }, { expectedPubkeys: [KEY.publicKey] });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(bad.verdict).toBe('FAIL');
    expect(bad.reason).toMatch(/^nostr-event: relays\[0\]\.event \(wss:\/\/r0\.example\): id [0-9a-f]{64} is not the NIP-01 hash/);
    // a relay URL of the proof is quoted bounded, whatever its length
    const long = JSON.parse(JSON.stringify(proof)) as Json;
    ((long.nostr as Json).relays as Json[])[0] = { url: `wss://${'a'.repeat(300_000)}`, status: 'accepted', event: { ...copy, content: `${copy.content} ` } };
    const r = await verifyAnchor({ value: doc, proof: long }, { expectedPubkeys: [KEY.publicKey] });
    expect(r.verdict).toBe('FAIL');
    expect(r.reason.length).toBeLessThan(500);
  });
});

describe('relay copies online', () => {
  const doc = receiptNumber(902);
  const built = envelopeModeProof(doc);
  const event = built.event!;
  const copy = minedCopy(event, 8);
  let holdsEvent: DevRelay;
  let holdsCopy: DevRelay;
  const fetcher = new RelayClientFetcher(5000);

  beforeAll(async () => {
    [holdsEvent, holdsCopy] = await Promise.all([startDevRelay(), startDevRelay()]);
    for (const [relay, ev] of [[holdsEvent, event], [holdsCopy, copy]] as const) {
      const publisher = new RelayClient(relay.url, { ping: false });
      try {
        expect((await publisher.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
      } finally {
        publisher.close();
      }
    }
  });

  afterAll(async () => {
    fetcher.close();
    await Promise.all([holdsEvent?.close(), holdsCopy?.close()]);
  });

  function proofWith(entries: Array<{ url: string; event?: SignedEvent }>): Json {
    const proof = JSON.parse(JSON.stringify(built.proof)) as Json;
    (proof.nostr as Json).relays = entries.map((e) => ({ url: e.url, status: 'accepted', message: '', at: '', ...(e.event ? { event: e.event } : {}) }));
    return proof;
  }

  const trusted = () => ({ relayFetcher: fetcher, expectedPubkeys: [KEY.publicKey] });

  it('counts the copy a relay holds for that relay', async () => {
    const proof = proofWith([{ url: holdsEvent.url }, { url: holdsCopy.url, event: copy }]);
    const report = await verifyAnchor({ value: doc, proof }, { ...trusted(), relays: [holdsEvent.url, holdsCopy.url] });
    expect(report.checks.find((c) => c.name === 'online')!.status).toBe('PASS');
    expect(report.witnesses.nostr).toMatchObject({ verified: 'confirmed', held_by: [holdsEvent.url, holdsCopy.url] });
    // said as it is: the second relay holds a copy, another id, not the identical event
    expect(report.checks.find((c) => c.name === 'online')!.detail).toBe(`identical event served by ${holdsEvent.url}; an identical copy of it (same signer, kind, content and tags, another id) by ${holdsCopy.url}`);
    expect(report.witnesses.nostr?.established).toContain(`the identical event is held by ${holdsEvent.url}; a copy of it (same signer, kind, content and tags) by ${holdsCopy.url}`);
  });

  it('a copy moved to another relay\'s entry (the proof\'s unsigned part) does not turn the relay holding the event itself into a FAIL', async () => {
    const proof = proofWith([{ url: holdsEvent.url, event: copy }, { url: holdsCopy.url }]);
    const report = await verifyAnchor({ value: doc, proof }, { ...trusted(), relays: [holdsEvent.url] });
    expect(report.checks.find((c) => c.name === 'online')).toMatchObject({ status: 'PASS' });
    expect(report.witnesses.nostr).toMatchObject({ verified: 'confirmed', held_by: [holdsEvent.url] });
  });

  it('a relay the caller spells otherwise than the proof (a trailing slash) is still asked for the copies the proof carries', async () => {
    const proof = proofWith([{ url: `${holdsCopy.url}/`, event: copy }]);
    const report = await verifyAnchor({ value: doc, proof }, { ...trusted(), relays: [holdsCopy.url] });
    expect(report.checks.find((c) => c.name === 'online')).toMatchObject({ status: 'PASS' });
    expect(report.witnesses.nostr).toMatchObject({ verified: 'confirmed', held_by: [holdsCopy.url] });
  });

  it('a copy never confirms for a signer the caller does not trust', async () => {
    const proof = proofWith([{ url: holdsCopy.url, event: copy }]);
    const report = await verifyAnchor({ value: doc, proof }, { relayFetcher: fetcher, relays: [holdsCopy.url], expectedPubkeys: [OTHER_KEY.publicKey] });
    expect(report.verdict).toBe('FAIL');
    expect(report.witnesses.nostr?.verified).not.toBe('confirmed');
  });
});
