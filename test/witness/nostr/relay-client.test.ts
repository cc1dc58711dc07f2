import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { verifyEvent } from 'nostr-tools/pure';
import { WebSocketServer } from 'ws';
import { startDevRelay, type DevRelay } from '../../../src/dev/relay/dev-relay.js';
import {
  batchContent,
  batchEvent,
  sameSignedEvent,
  serializeEvent,
  verifySignedEvent,
} from '../../../src/core/nostr/events.js';
import { RelayClient, RelayFetchError, splitEventFrame, type PublishResult } from '../../../src/adapters/nostr/relay-client.js';
import { parseOkFrame } from '../../../src/adapters/nostr/relay-frames.js';
import { sha256Hex } from '../../../src/core/aer1/hash.js';
import { TEST_KEY, eventFor, workflowEnvelope } from './fixtures.js';

const key = TEST_KEY;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const clients: RelayClient[] = [];
function client(url: string, opts: ConstructorParameters<typeof RelayClient>[1] = {}): RelayClient {
  const c = new RelayClient(url, opts);
  clients.push(c);
  return c;
}

describe('RelayClient against the dev relay', () => {
  let relay: DevRelay;
  beforeAll(async () => {
    relay = await startDevRelay();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await relay.close();
  });

  it('publishes an envelope event: accepted, then accepted again as duplicate', async () => {
    const c = client(relay.url);
    const ev = eventFor(1);
    const first = await c.publish(ev, { timeoutMs: 5000 });
    expect(first).toEqual({ status: 'accepted', message: '', retryable: false, at: expect.stringMatching(ISO) });
    const again = await c.publish(ev, { timeoutMs: 5000 });
    expect(again).toEqual({
      status: 'accepted',
      message: 'duplicate: the event already exists',
      prefix: 'duplicate',
      retryable: false,
      at: expect.stringMatching(ISO),
    });
    expect(relay.eventCount()).toBe(1);
  });

  it('gets a tampered event rejected with prefix invalid, not retryable', async () => {
    const c = client(relay.url);
    const ev = eventFor(1);
    const tampered = { ...ev, content: ev.content.replace('wf-1', 'wf-2') };
    const r = await c.publish(tampered, { timeoutMs: 5000 });
    expect(r).toMatchObject({ status: 'rejected', prefix: 'invalid', retryable: false, message: 'invalid: id is wrong' });
  });

  it('reports rate-limited as a retryable rejection, then accepted once the relay allows it', async () => {
    const c = client(relay.url);
    const ev = eventFor(2);
    let refusals = 0;
    relay.beforeEvent = (e) => (e.id === ev.id && refusals++ < 1 ? { accept: false, message: 'rate-limited: 6 events a minute' } : undefined);
    try {
      const r = await c.publish(ev, { timeoutMs: 5000 });
      expect(r).toMatchObject({ status: 'rejected', prefix: 'rate-limited', retryable: true, message: 'rate-limited: 6 events a minute' });
      expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
    } finally {
      relay.beforeEvent = undefined;
    }
  });

  it('classifies each machine prefix as documented', async () => {
    const c = client(relay.url);
    const expected: Record<string, boolean> = {
      error: true,
      pow: true,
      blocked: false,
      restricted: false,
      mute: false,
      'auth-required': true,
      invalid: false,
    };
    const byId = new Map<string, string>();
    relay.beforeEvent = (e) => {
      const prefix = byId.get(e.id);
      return prefix ? { accept: false, message: `${prefix}: test` } : undefined;
    };
    try {
      let n = 100;
      for (const [prefix, retryable] of Object.entries(expected)) {
        const ev = eventFor(n++);
        byId.set(ev.id, prefix);
        const r = await c.publish(ev, { timeoutMs: 5000 });
        expect(r, prefix).toMatchObject({ status: 'rejected', prefix, retryable, message: `${prefix}: test` });
      }
      const odd = eventFor(n++);
      relay.beforeEvent = (e) => (e.id === odd.id ? { accept: false, message: 'no prefix here' } : undefined);
      expect(await c.publish(odd, { timeoutMs: 5000 })).toMatchObject({ status: 'rejected', retryable: true, message: 'no prefix here' });
      expect((await c.publish(odd, { timeoutMs: 5000 })).prefix).toBeUndefined();
    } finally {
      relay.beforeEvent = undefined;
    }
  });

  it('reads back the bytes that were published, and they verify on a fresh parse', async () => {
    const c = client(relay.url);
    const ev = eventFor(3);
    expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
    const back = await c.fetchById(ev.id, { timeoutMs: 5000 });
    expect(back).toBe(serializeEvent(ev));
    expect(sameSignedEvent(back!, ev)).toBe(true);
    expect(verifyEvent(JSON.parse(back!))).toBe(true);
    const verified = verifySignedEvent(back!);
    expect(verified.ok).toBe(true);
    // the content is the envelope's canonical bytes (SPEC 4.1), its digest in the x tag
    const env = workflowEnvelope(3);
    expect(JSON.parse(back!).content).toBe(env.canonical);
    expect(sha256Hex(JSON.parse(back!).content)).toBe(env.digestHex);
    expect(JSON.parse(back!).tags).toContainEqual(['x', env.digestHex]);
  });

  it('publishes a batch event whose stored copy carries the batch root as SPEC says', async () => {
    const c = client(relay.url);
    const root = sha256Hex('a batch root');
    const ev = batchEvent({ anchoredAt: '2025-06-01T12:00:00Z', batchRootHex: root, leafCount: 200 }, key);
    expect((await c.publish(ev, { timeoutMs: 5000 })).status).toBe('accepted');
    const stored = relay.events().find((e) => e.id === ev.id);
    expect(stored).toBeDefined();
    const json = JSON.stringify(stored);
    expect(verifyEvent(JSON.parse(json))).toBe(true);
    expect(stored!.content).toBe(batchContent('2025-06-01T12:00:00Z', root, 200));
    expect(JSON.parse(stored!.content)).toEqual({
      anchored_at: '2025-06-01T12:00:00Z',
      batch_root: root,
      leaf_count: 200,
      tree: 'rfc6962-sha256',
      type: 'aer1-anchor-batch/1',
    });
    expect(stored!.tags).toContainEqual(['x', root]);
  });

  it('answers null for an id the relay does not have', async () => {
    const c = client(relay.url);
    expect(await c.fetchById('0'.repeat(64), { timeoutMs: 5000 })).toBeNull();
  });

  it('joins two concurrent publishes of the same event instead of hanging', async () => {
    const c = client(relay.url);
    const ev = eventFor(4);
    const [a, b] = await Promise.all([c.publish(ev, { timeoutMs: 5000 }), c.publish(ev, { timeoutMs: 5000 })]);
    expect(a.status).toBe('accepted');
    expect(b).toEqual(a);
    const many = await Promise.all([5, 6, 7, 5, 6, 7].map((n) => c.publish(eventFor(n), { timeoutMs: 5000 })));
    expect(many.map((r) => r.status)).toEqual(Array(6).fill('accepted'));
  });

  it('answers each of many publishes sent in one tick with its own OK', async () => {
    const c = client(relay.url);
    await c.connect();
    const before = relay.eventCount();
    const fresh = Array.from({ length: 150 }, (_, i) => eventFor(100 + i));
    const bad = eventFor(300);
    const tampered = { ...bad, content: bad.content.replace('wf-300', 'wf-301') };
    // started in one tick: their EVENT frames leave together, the OKs come back together
    const first = await Promise.all([...fresh, tampered].map((ev) => c.publish(ev, { timeoutMs: 10_000 })));
    expect(first.slice(0, -1).map((r) => r.status)).toEqual(Array(150).fill('accepted'));
    expect(first.at(-1)).toMatchObject({ status: 'rejected', prefix: 'invalid', retryable: false });
    expect(relay.eventCount()).toBe(before + 150);
    // duplicates (OK false "duplicate:") and new events in one tick: each gets its own answer
    const mixed = [...fresh.slice(0, 20), ...Array.from({ length: 20 }, (_, i) => eventFor(260 + i))];
    const second = await Promise.all(mixed.map((ev) => c.publish(ev, { timeoutMs: 10_000 })));
    expect(second.map((r) => [r.status, r.prefix])).toEqual([
      ...Array(20).fill(['accepted', 'duplicate']),
      ...Array(20).fill(['accepted', undefined]),
    ]);
    expect(await c.fetchById(eventFor(279).id, { timeoutMs: 5000 })).toBe(serializeEvent(eventFor(279)));
  });

  it('fails every publish waiting on a connection the relay drops, and they pass on the next use', async () => {
    const c = client(relay.url);
    await c.connect();
    const events = Array.from({ length: 20 }, (_, i) => eventFor(320 + i));
    relay.faults.dropOnEvent = true;
    let dropped: PublishResult[];
    try {
      dropped = await Promise.all(events.map((ev) => c.publish(ev, { timeoutMs: 10_000 })));
    } finally {
      relay.faults.dropOnEvent = false;
    }
    expect(dropped.map((r) => [r.status, r.message, r.retryable])).toEqual(Array(20).fill(['error', 'relay connection closed', true]));
    const again = await Promise.all(events.map((ev) => c.publish(ev, { timeoutMs: 10_000 })));
    expect(again.map((r) => r.status)).toEqual(Array(20).fill('accepted'));
  });

  it('ends a silent publish at its own deadline though one with a later deadline started first', async () => {
    const c = client(relay.url);
    await c.connect();
    relay.faults.silent = true;
    try {
      const long = c.publish(eventFor(350), { timeoutMs: 60_000 });
      const short = await c.publish(eventFor(351), { timeoutMs: 300 });
      expect(short).toMatchObject({ status: 'timeout', retryable: true, message: 'no OK within 300 ms' });
      // a timeout drops the connection (its OKs may still come): the other publish on it ends with it
      expect(await long).toMatchObject({ status: 'error', retryable: true, message: 'relay connection closed by us' });
    } finally {
      relay.faults.silent = false;
    }
    expect((await c.publish(eventFor(350), { timeoutMs: 5000 })).status).toBe('accepted');
  });

  it('times out within the deadline when the relay never answers, then recovers', async () => {
    const c = client(relay.url);
    // connected first, so the short deadline is spent waiting for the OK alone
    expect(await c.fetchById(eventFor(8).id, { timeoutMs: 5000 })).toBeNull();
    relay.faults.silent = true;
    let r: PublishResult;
    try {
      r = await c.publish(eventFor(8), { timeoutMs: 300 });
    } finally {
      relay.faults.silent = false;
    }
    expect(r).toMatchObject({ status: 'timeout', retryable: true, message: 'no OK within 300 ms' });
    expect((await c.publish(eventFor(8), { timeoutMs: 5000 })).status).toBe('accepted');
  });

  it('reports a dropped connection as a retryable error and reconnects on the next use', async () => {
    const c = client(relay.url);
    expect((await c.publish(eventFor(9), { timeoutMs: 5000 })).status).toBe('accepted');
    relay.faults.dropOnEvent = true;
    let r: PublishResult;
    try {
      r = await c.publish(eventFor(10), { timeoutMs: 5000 });
    } finally {
      relay.faults.dropOnEvent = false;
    }
    expect(r).toMatchObject({ status: 'error', retryable: true, message: 'relay connection closed' });
    expect((await c.publish(eventFor(10), { timeoutMs: 5000 })).status).toBe('accepted');
  });

  it('reports a stopped relay as retryable, and is accepted once it is back on the same port', async () => {
    const c = client(relay.url);
    expect((await c.publish(eventFor(11), { timeoutMs: 5000 })).status).toBe('accepted');
    await relay.stop();
    try {
      const down = await c.publish(eventFor(12), { timeoutMs: 2000 });
      expect(['error', 'timeout']).toContain(down.status);
      expect(down.retryable).toBe(true);
      expect(down.message).toMatch(/connection (failed|closed)|ECONNREFUSED/);
      await expect(c.fetchById(eventFor(11).id, { timeoutMs: 1000 })).rejects.toBeInstanceOf(RelayFetchError);
    } finally {
      await relay.restart();
    }
    expect((await c.publish(eventFor(12), { timeoutMs: 5000 })).status).toBe('accepted');
    expect(await c.fetchById(eventFor(12).id, { timeoutMs: 5000 })).toBe(serializeEvent(eventFor(12)));
  });

  it('settles an in-flight publish as an error when the client is closed, and works again after', async () => {
    const c = client(relay.url);
    relay.faults.silent = true;
    try {
      const pending = c.publish(eventFor(13), { timeoutMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      c.close();
      expect(await pending).toMatchObject({ status: 'error', retryable: true });
    } finally {
      relay.faults.silent = false;
    }
    expect((await c.publish(eventFor(13), { timeoutMs: 5000 })).status).toBe('accepted');
  });
});

describe('RelayClient against peers that misbehave', () => {
  let blackhole: Server;
  let blackholePort: number;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // accepts TCP and never answers the WebSocket handshake
    blackhole = createServer((s) => {
      sockets.push(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    blackholePort = (blackhole.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => blackhole.close(() => resolve()));
  });

  it('gives up on a handshake that never completes within the deadline, without crashing', async () => {
    const c = client(`ws://127.0.0.1:${blackholePort}`, { connectTimeoutMs: 200 });
    const r = await c.publish(eventFor(20), { timeoutMs: 2000 });
    expect(r.status).toBe('timeout');
    expect(r.retryable).toBe(true);
    expect(r.message).toMatch(/connect/);
    // the socket's late error must not surface as an uncaught exception
    await new Promise((resolve) => setTimeout(resolve, 1500));
  });

  it('gives up when the whole deadline is shorter than the connect timeout', async () => {
    const c = client(`ws://127.0.0.1:${blackholePort}`, { connectTimeoutMs: 5000 });
    const r = await c.publish(eventFor(21), { timeoutMs: 200 });
    expect(r).toMatchObject({ status: 'timeout', retryable: true });
  });

  it('reports a refused connection as a retryable error', async () => {
    const free = createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const port = (free.address() as AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    const c = client(`ws://127.0.0.1:${port}`);
    const r = await c.publish(eventFor(22), { timeoutMs: 2000 });
    expect(r).toMatchObject({ status: 'error', retryable: true });
    expect(r.message).toMatch(/ECONNREFUSED/);
  });

  it('hands back a served event byte for byte, even one that does not verify; a NOTICE-only answer is a timeout', async () => {
    const ev = eventFor(23);
    const tampered = { ...ev, content: ev.content.replace('wf-23', 'wf-24') };
    const served = JSON.stringify(tampered, null, 1); // odd whitespace, as some relay might send
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const msg = JSON.parse(data.toString()) as unknown[];
        if (msg[0] === 'REQ') {
          ws.send(`["EVENT",${JSON.stringify(msg[1])}, ${served} ]`);
          ws.send(JSON.stringify(['EOSE', msg[1]]));
        } else if (msg[0] === 'EVENT') {
          ws.send(JSON.stringify(['NOTICE', 'we do not take events here']));
        }
      });
    });
    const c = client(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    try {
      const back = await c.fetchById(ev.id, { timeoutMs: 5000 });
      expect(back).toBe(served);
      expect(sameSignedEvent(back!, ev)).toBe(false);
      expect(verifySignedEvent(back!).ok).toBe(false);
      const r = await c.publish(ev, { timeoutMs: 300 });
      expect(r).toMatchObject({ status: 'timeout', retryable: true, message: 'no OK within 300 ms (NOTICE: we do not take events here)' });
    } finally {
      c.close();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });

  it('refuses URLs that are not ws:// or wss://', () => {
    expect(() => new RelayClient('http://127.0.0.1:1')).toThrow(/ws:\/\/ or wss:\/\//);
    expect(() => new RelayClient('not a url')).toThrow(/not a URL/);
  });
});

describe('parseOkFrame', () => {
  const id = 'ab'.repeat(32);
  it('reads the usual shape and any other spelling of an OK alike', () => {
    expect(parseOkFrame(`["OK","${id}",true,""]`)).toEqual({ id, ok: true, message: '' });
    expect(parseOkFrame(`["OK","${id}",false,"duplicate: have it"]`)).toEqual({ id, ok: false, message: 'duplicate: have it' });
    expect(parseOkFrame(`["OK","${id}",false,"invalid: \\"x\\"], [\\u00e9"]`)).toEqual({ id, ok: false, message: 'invalid: "x"], [\u00e9' });
    expect(parseOkFrame(`[ "OK", "${id}", true, "spaced" ]`)).toEqual({ id, ok: true, message: 'spaced' });
    expect(parseOkFrame(`["OK","${id}",true]`)).toEqual({ id, ok: true, message: '' });
    expect(parseOkFrame('["OK","short",false,"error: x"]')).toEqual({ id: 'short', ok: false, message: 'error: x' });
  });
  it('passes over frames that are not OK answers', () => {
    expect(parseOkFrame(`["OK","${id}",true,"a"],["x"]`)).toBeUndefined();
    expect(parseOkFrame('["NOTICE","OK"]')).toBeUndefined();
    expect(parseOkFrame(`["EVENT","s",{"id":"${id}"}]`)).toBeUndefined();
    expect(parseOkFrame('["OK",1,true,""]')).toBeUndefined();
    expect(parseOkFrame('not json "OK"')).toBeUndefined();
  });
});

describe('splitEventFrame', () => {
  it('returns the event text exactly as sent, whitespace around it aside', () => {
    const ev = '{"id":"a","content":"x]\\"y"}';
    expect(splitEventFrame(`["EVENT","s:1",${ev}]`)).toEqual({ subId: 's:1', eventJson: ev });
    expect(splitEventFrame(`[ "EVENT" , "s\\"2" ,\n ${ev} \n] `)).toEqual({ subId: 's"2', eventJson: ev });
    expect(splitEventFrame('["EOSE","s"]')).toBeUndefined();
    expect(splitEventFrame('["EVENT","s",[1]]')).toBeUndefined();
    expect(splitEventFrame('["EVENT","s",{"a":1}')).toBeUndefined();
  });
});
