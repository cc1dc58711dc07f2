/**
 * RelayClient.query: one bounded NIP-01 filter (authors, kinds, `#i`, since, limit), raw
 * JSON texts back, against a real dev relay and a hostile fake one.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { canonicalJson } from '../../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../../src/core/aer1/hash.js';
import { startDevRelay, type DevRelay } from '../../../src/dev/relay/dev-relay.js';
import { batchEvent, envelopeEvent, serializeEvent, type SignedEvent } from '../../../src/core/nostr/events.js';
import { SigningKey } from '../../../src/core/nostr/keys.js';
import { MAX_QUERY_LIMIT, RelayClient, RelayFetchError } from '../../../src/adapters/nostr/relay-client.js';

const signer = SigningKey.parse('3'.repeat(64));
const stranger = SigningKey.parse('4'.repeat(64));

function receiptEvent(key: SigningKey, uuid: string, anchoredAt: string, kind?: number): SignedEvent {
  const canonical = canonicalJson({ type: 'zambo-receipt-anchor/1', subject: 'receipt', receipt_uuid: uuid, output_sha256: sha256Hex(uuid), anchored_at: anchoredAt });
  return envelopeEvent({ canonical, digestHex: sha256Hex(canonical), ...(kind !== undefined ? { kind } : {}) }, key);
}

async function fakeRelay(onReq: (ws: WebSocket, subId: string) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as unknown[];
      if (msg[0] === 'REQ') onReq(ws, msg[1] as string);
    });
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

describe('RelayClient.query against the dev relay', () => {
  let relay: DevRelay;
  let client: RelayClient;
  const mine = [
    receiptEvent(signer, 'r-1', '2026-01-01T00:00:01Z'),
    receiptEvent(signer, 'r-2', '2026-01-01T00:00:02Z'),
    receiptEvent(signer, 'r-2', '2026-01-01T00:00:03Z'), // the same subject anchored again
    receiptEvent(signer, 'r-3', '2026-01-01T00:00:04Z', 4321),
  ];
  const forged = receiptEvent(stranger, 'r-2', '2026-01-01T00:00:05Z');
  const batch = batchEvent({ anchoredAt: '2026-01-01T00:00:06Z', batchRootHex: sha256Hex('root'), leafCount: 7 }, signer);

  beforeAll(async () => {
    relay = await startDevRelay();
    client = new RelayClient(relay.url, { ping: false });
    for (const ev of [...mine, forged, batch]) expect((await client.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
  });

  afterAll(async () => {
    client?.close();
    await relay?.close();
  });

  it('finds a subject by its indexed i tag, for the named author and kind only, as raw texts', async () => {
    const texts = await client.query({ authors: [signer.publicKey], kinds: [3099], '#i': ['aer1:r-2'], limit: 50 }, { timeoutMs: 5000 });
    expect(texts.map((t) => (JSON.parse(t) as SignedEvent).id).sort()).toEqual([mine[1]!.id, mine[2]!.id].sort());
    expect(texts).toContain(serializeEvent(mine[1]!));
  });

  it('lists every event of the signer (envelope and batch), counts batch events by their marker, honours since and kinds', async () => {
    const all = await client.query({ authors: [signer.publicKey], kinds: [3099, 4321], limit: 50 }, { timeoutMs: 5000 });
    expect(all).toHaveLength(5);
    const batches = await client.query({ authors: [signer.publicKey], kinds: [3099], '#t': ['aer1-batch'], limit: 50 }, { timeoutMs: 5000 });
    expect(batches.map((t) => (JSON.parse(t) as SignedEvent).id)).toEqual([batch.id]);
    const recent = await client.query({ authors: [signer.publicKey], kinds: [3099], since: mine[2]!.created_at, limit: 50 }, { timeoutMs: 5000 });
    expect(recent.map((t) => (JSON.parse(t) as SignedEvent).id).sort()).toEqual([mine[2]!.id, batch.id].sort());
  });

  it('keeps at most limit events', async () => {
    const two = await client.query({ authors: [signer.publicKey], kinds: [3099, 4321], limit: 2 }, { timeoutMs: 5000 });
    expect(two).toHaveLength(2);
  });

  it('refuses a query without a bounded limit', async () => {
    await expect(client.query({ authors: [signer.publicKey] })).rejects.toThrow(RangeError);
    await expect(client.query({ authors: [signer.publicKey], limit: MAX_QUERY_LIMIT + 1 })).rejects.toThrow(/filter.limit must be an integer/);
  });
});

describe('RelayClient.query against a hostile relay', () => {
  it('cuts a relay off at limit events even when it sends more and never sends EOSE', async () => {
    const events = Array.from({ length: 5 }, (_, i) => receiptEvent(signer, `flood-${i}`, '2026-01-01T00:00:00Z'));
    const fake = await fakeRelay((ws, subId) => {
      for (const ev of events) ws.send(JSON.stringify(['EVENT', subId, ev]));
    });
    const client = new RelayClient(fake.url, { ping: false });
    try {
      const texts = await client.query({ authors: [signer.publicKey], limit: 3 }, { timeoutMs: 5000 });
      expect(texts).toEqual(events.slice(0, 3).map((e) => JSON.stringify(e)));
    } finally {
      client.close();
      await fake.close();
    }
  });

  it('rejects with the relay\'s bounded reason when it refuses the request with CLOSED, and within the deadline when silent', async () => {
    const closing = await fakeRelay((ws, subId) => ws.send(JSON.stringify(['CLOSED', subId, `restricted: ${'no '.repeat(200)}`])));
    const silent = await fakeRelay(() => undefined);
    const a = new RelayClient(closing.url, { ping: false });
    const b = new RelayClient(silent.url, { ping: false });
    try {
      const err = await a.query({ authors: [signer.publicKey], limit: 10 }, { timeoutMs: 5000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RelayFetchError);
      expect((err as Error).message).toMatch(/^ws:\/\/127\.0\.0\.1:\d+: the relay closed the request: restricted: (no ){60}/);
      expect((err as Error).message.length).toBeLessThan(300);
      const started = Date.now();
      await expect(b.query({ authors: [signer.publicKey], limit: 10 }, { timeoutMs: 300 })).rejects.toThrow(/no answer to REQ within 300 ms/);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      a.close();
      b.close();
      await Promise.all([closing.close(), silent.close()]);
    }
  });
});
