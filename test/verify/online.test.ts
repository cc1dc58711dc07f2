/**
 * `--online`: the event fetched back by id from the relays the caller names (real
 * @nostr-relay dev relays on loopback) and compared byte for byte; the proof's own relay
 * list is asked only when the caller opts in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import type { SignedEvent } from '../../src/core/nostr/events.js';
import { RelayClientFetcher } from '../../src/adapters/nostr/relay-fetcher.js';
import { verifyAnchor, type VerifyReport } from '../../src/core/verify/pipeline.js';
import { loadFixture } from '../fixtures/index.js';
import { KEY, attach, envelopeModeProof, type Json } from './build-proofs.js';

const receipt = loadFixture('receipt-minimal');

function online(report: VerifyReport): { status: string; detail: string } {
  return report.checks.find((c) => c.name === 'online')!;
}

function withRelays(proof: Json, urls: string[]): Json {
  const nostr = proof.nostr as Json;
  return { ...proof, nostr: { ...nostr, relays: urls.map((url) => ({ url, status: 'accepted', message: '', at: '' })) } };
}

describe('online: the event read back from its relays', () => {
  let relay: DevRelay;
  let empty: DevRelay;
  let stopped: DevRelay;
  const fetcher = new RelayClientFetcher(5000);
  const built = envelopeModeProof(receipt, { nostrStatus: 'pending' });
  const event = built.event as SignedEvent;

  beforeAll(async () => {
    [relay, empty, stopped] = await Promise.all([startDevRelay(), startDevRelay(), startDevRelay()]);
    await stopped.stop();
    const publisher = new RelayClient(relay.url, { ping: false });
    try {
      const result = await publisher.publish(event, { timeoutMs: 5000 });
      expect(result.status).toBe('accepted');
    } finally {
      publisher.close();
    }
  });

  afterAll(async () => {
    fetcher.close();
    await Promise.all([relay?.close(), empty?.close(), stopped?.close()]);
  });

  const trusted = { relayFetcher: fetcher, expectedPubkeys: [KEY.publicKey] };

  it('passes when a relay the caller names serves the identical event, and counts a trusted signer\'s witness confirmed', async () => {
    const report = await verifyAnchor({ value: attach(receipt, built.proof) }, { ...trusted, relays: [relay.url, empty.url] });
    expect(online(report)).toEqual({ name: 'online', status: 'PASS', detail: `identical event served by ${relay.url}; not on ${empty.url}` });
    expect(report.witnesses.nostr).toMatchObject({ verified: 'confirmed', held_by: [relay.url] });
    expect(report.pending).toBe(false);
  });

  it('never counts an event confirmed when its signer is not one the caller trusts, wherever it is held', async () => {
    const report = await verifyAnchor({ value: attach(receipt, built.proof) }, { relayFetcher: fetcher, relays: [relay.url], requireConfirmed: true });
    expect(online(report).status).toBe('PASS');
    expect(report.witnesses.nostr).toMatchObject({ verified: 'untrusted', held_by: [relay.url] });
    expect(report.witnesses.nostr?.not_established).toContain('that the signer is anyone you trust (give --expected-pubkey or --trust-file)');
    expect(report.verdict).toBe('FAIL');
    expect(report.reason).toMatch(/nostr published, signer not trusted/);
  });

  it('asks only the relays the caller names, not the proof\'s list, unless told to', async () => {
    const proof = withRelays(built.proof, [relay.url]);
    const named = await verifyAnchor({ value: attach(receipt, proof) }, { ...trusted, relays: [empty.url] });
    expect(online(named)).toMatchObject({ status: 'FAIL', detail: `event ${event.id} not found: not on ${empty.url}` });
    const none = await verifyAnchor({ value: attach(receipt, proof) }, trusted);
    expect(online(none)).toMatchObject({ status: 'SKIP', detail: expect.stringMatching(/^no relay to ask/) });
    expect(none.witnesses.nostr?.verified).not.toBe('confirmed');
    const opted = await verifyAnchor({ value: attach(receipt, proof) }, { ...trusted, useProofRelays: true });
    expect(online(opted)).toMatchObject({ status: 'PASS', detail: `identical event served by ${relay.url} (all taken from the proof itself, --use-proof-relays)` });
  });

  it('--use-proof-relays asks at most 16 of the proof\'s relays, only ws:// or wss:// URLs in ASCII, and says how many it left out', async () => {
    const asked: string[] = [];
    // the real fetcher, wrapped to count the URLs it is asked to reach
    const counting = {
      fetch: (url: string, id: string) => {
        asked.push(url);
        return fetcher.fetch(url, id);
      },
      query: fetcher.query.bind(fetcher),
      close: () => undefined,
    };
    const hostile = [relay.url, 'http://127.0.0.1:6379/', 'wss://rel\u0430y.example/', 'ftp://127.0.0.1/', ...Array.from({ length: 40 }, (_, i) => `${stopped.url}/p${i}`)];
    const proof = withRelays(built.proof, hostile);
    const report = await verifyAnchor({ value: attach(receipt, proof) }, { ...trusted, relayFetcher: counting, useProofRelays: true });
    expect(new Set(asked).size).toBe(16);
    expect(asked).toContain(relay.url);
    expect(asked.some((u) => !/^wss?:\/\/[\x21-\x7e]+$/.test(u))).toBe(false);
    expect(online(report).status).toBe('PASS');
    expect(online(report).detail).toMatch(/; 28 relays of the proof not asked \(3 not ws:\/\/ or wss:\/\/ in ASCII, 25 past the first 16\)$/);
  });

  it('fails when every relay that answered has no such event', async () => {
    const report = await verifyAnchor({ value: attach(receipt, built.proof) }, { ...trusted, relays: [empty.url, stopped.url] });
    expect(online(report).status).toBe('FAIL');
    expect(online(report).detail).toBe(`event ${event.id} not found: not on ${empty.url}; unreachable: ${stopped.url}`);
    expect(report.verdict).toBe('FAIL');
  });

  it('fails when a relay serves a different event under the same id (the same template signed again)', async () => {
    const again = KEY.sign({ kind: event.kind, created_at: event.created_at, tags: event.tags, content: event.content });
    expect(again.id).toBe(event.id);
    expect(again.sig).not.toBe(event.sig); // BIP-340 with fresh auxiliary randomness
    const resigned = { ...built.proof, nostr: { ...(built.proof.nostr as Json), event: again } };
    const report = await verifyAnchor({ value: attach(receipt, resigned) }, { ...trusted, relays: [relay.url] });
    expect(report.checks.find((c) => c.name === 'nostr-event')!.status).toBe('PASS');
    expect(online(report)).toMatchObject({ status: 'FAIL', detail: `${relay.url} serves a different event under id ${event.id}` });
  });

  it('skips when no relay can be asked', async () => {
    const report = await verifyAnchor({ value: attach(receipt, built.proof) }, { ...trusted, relays: [stopped.url] });
    expect(online(report).status).toBe('SKIP');
    expect(online(report).detail).toBe(`no relay could be asked: unreachable: ${stopped.url}`);
  });

  it('is skipped offline (no fetcher)', async () => {
    const report = await verifyAnchor({ value: attach(receipt, withRelays(built.proof, [relay.url])) });
    expect(online(report)).toMatchObject({ status: 'SKIP', detail: 'offline (give --online --relay URL to fetch the event back from relays you name)' });
  });
});
