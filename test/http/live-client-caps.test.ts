/**
 * Issue 18, reproduction 6: 2,000 SSE clients slowed intake, and 300–400 clients replaying
 * history without reading added 120–140 MB and held /livez for over 10 s; nothing capped
 * live clients or replays. Now `http.maxLiveClients` caps SSE + WebSocket clients (one more
 * gets 503 with Retry-After), a replay is written in bounded pages that wait for the client
 * to take them, a client that does not read is closed, and one connection replays at most
 * `http.maxReplay` entries, then ends so the client resumes from its last id without a gap.
 */
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/adapters/http/server.js';
import { waitFor } from '../helpers/harness.js';
import { checkedFetch } from '../helpers/openapi.js';
import { openSse, openWs, wsRefusal, type SseClient } from './clients.js';
import { startStack, withHttp, type Stack } from './fixture.js';

const CAP = 20;
const BACKLOG = 20_000;
const PAD = 'x'.repeat(360);
const MiB = 1024 * 1024;

let s: Stack;
let firstId = '';
let lastId = '';

beforeAll(async () => {
  s = await startStack({ http: { readsRequireToken: false, maxReplay: BACKLOG } });
  // a long history to replay: about 8 MB
  const stream = s.daemon.store.keys.events;
  for (let i = 0; i < BACKLOG; i += 1000) {
    const batch = s.daemon.redis.pipeline();
    for (let j = i; j < i + 1000; j++) {
      batch.xadd(stream, '*', 'data', JSON.stringify({ type: 'state', key: `history-${j}`, status: 'pending', at: new Date().toISOString(), detail: PAD }));
    }
    await batch.exec();
  }
  firstId = (await s.daemon.redis.xrange(stream, '-', '+', 'COUNT', 1))[0]![0];
  lastId = (await s.daemon.redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0];
}, 60_000);

afterAll(async () => {
  await s?.close();
});

/** A client that asks for the whole history and never reads a byte of the answer. */
function nonReader(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.pause();
      socket.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nLast-Event-ID: 0-0\r\n\r\n`);
      resolve(socket);
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Memory held after a full collection: what the server keeps, not the garbage it made. */
function memory(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
}

describe('the cap on live clients', () => {
  it(`admits ${CAP} SSE and WebSocket clients together; the next gets 503 with Retry-After until one leaves`, async () => {
    // a server started after the history was written: its clients get only what comes next
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxLiveClients: CAP }), log: s.log });
    const sse: SseClient[] = [];
    const ws: Array<Awaited<ReturnType<typeof openWs>>> = [];
    const wsBase = server.url.replace('http', 'ws');
    try {
      for (let i = 0; i < CAP / 2; i++) sse.push(await openSse(`${server.url}/v1/events`));
      for (let i = 0; i < CAP / 2; i++) ws.push(await openWs(`${wsBase}/v1/ws`));
      expect(sse.map((c) => c.status)).toEqual(Array(CAP / 2).fill(200));

      expect(server.liveClients).toBe(CAP);
      const over = await checkedFetch(`${server.url}/v1/events`);
      expect(over.status).toBe(503);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await over.json()).toMatchObject({ error: { code: 'too_many_clients' } });
      const refused = await wsRefusal(`${wsBase}/v1/ws`);
      expect(refused.status).toBe(503);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // the metrics show the clients (this server's and the stack's own, none) and the two refusals
      const metrics = await (await checkedFetch(`${server.url}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`^aer1_http_live_clients ${CAP}$`, 'm'));
      expect(metrics).toMatch(/^aer1_http_live_clients_refused_total (?:[2-9]|\d{2,})$/m);
      // ordinary requests are not capped
      expect((await checkedFetch(`${server.url}/livez`)).status).toBe(200);
      expect((await checkedFetch(`${server.url}/v1/stats`)).status).toBe(200);

      sse.pop()!.close();
      const again = await waitFor('a slot freed', async () => {
        const c = await openSse(`${server.url}/v1/events`);
        if (c.status === 200) return c;
        c.close();
        return null;
      }, 10_000, 50);
      sse.push(again);
      ws.pop()!.close();
      ws.push(await waitFor('a slot freed', async () => openWs(`${wsBase}/v1/ws`).catch(() => null), 10_000, 50));
    } finally {
      for (const c of [...sse, ...ws]) c.close();
      await server.close();
    }
  });
});

describe('a burst of changes', () => {
  it('reaches every client that reads, none dropped: the feed reads a page at a time', { timeout: 60_000 }, async () => {
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false }), log: s.log });
    const clients: SseClient[] = [];
    try {
      for (let i = 0; i < 10; i++) clients.push(await openSse(`${server.url}/v1/events`));
      await waitFor('10 live clients', () => server.liveClients === 10, 10_000, 20);
      // 3,000 changes at once (~1.2 MB): more than a client may have unsent, if it were sent in one go
      const burst = 3000;
      const batch = s.daemon.redis.pipeline();
      for (let j = 0; j < burst; j++) batch.xadd(s.daemon.store.keys.events, '*', 'data', JSON.stringify({ type: 'state', key: `burst-${j}`, status: 'pending', at: new Date().toISOString(), detail: PAD }));
      await batch.exec();
      for (const c of clients) await c.until((m) => m.length >= burst, 50_000);
      expect(server.liveClients).toBe(10);
      for (const c of clients) expect(c.messages.map((m) => (JSON.parse(m.data) as { key: string }).key)).toEqual(Array.from({ length: burst }, (_, j) => `burst-${j}`));
    } finally {
      for (const c of clients) c.close();
      await server.close();
    }
  });
});

describe('a burst of packed entries (a few hundred changes each)', () => {
  it('reaches every client that reads, live and replayed, none dropped: the feed sends a page of changes at a time', { timeout: 60_000 }, async () => {
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxReplay: BACKLOG }), log: s.log });
    const clients: SseClient[] = [];
    try {
      for (let i = 0; i < 5; i++) clients.push(await openSse(`${server.url}/v1/events`));
      await waitFor('5 live clients', () => server.liveClients === 5, 10_000, 20);
      const before = (await s.daemon.redis.xrevrange(s.daemon.store.keys.events, '+', '-', 'COUNT', 1))[0]![0];
      // 12 entries of 250 changes (~1.4 MB of events): one entry alone is ~120 KB, the lot far more than a client may have unsent
      const per = 250;
      const entries = 12;
      const batch = s.daemon.redis.pipeline();
      for (let e = 0; e < entries; e++) {
        const run = ['pending', 'pending', 'partial', ...Array.from({ length: per }, (_, j) => `packed-burst-${e * per + j}`)];
        batch.xadd(s.daemon.store.keys.events, '*', 'data', JSON.stringify({ type: 'state', witness: 'ots', to: 'partial', at: new Date().toISOString(), detail: PAD, runs: [run] }));
      }
      await batch.exec();
      const want = Array.from({ length: per * entries }, (_, j) => `packed-burst-${j}`);
      clients.push(await openSse(`${server.url}/v1/events`, { 'Last-Event-ID': before }));
      for (const c of clients) await c.until((m) => m.length >= want.length, 50_000);
      expect(server.liveClients).toBe(6);
      for (const c of clients) expect(c.messages.map((m) => (JSON.parse(m.data) as { key: string }).key)).toEqual(want);
    } finally {
      for (const c of clients) c.close();
      await server.close();
    }
  });
});

describe('clients replaying history', () => {
  it('40 that never read do not hold up /livez, stay bounded in memory, and are closed', { timeout: 120_000 }, async () => {
    const n = 40;
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxLiveClients: 100, maxReplay: BACKLOG }), log: s.log });
    const sockets: Socket[] = [];
    const before = memory();
    let peak = before;
    try {
      for (let i = 0; i < n; i++) sockets.push(await nonReader(server.port));
      await waitFor(`${n} live clients`, () => {
        peak = Math.max(peak, memory());
        return server.liveClients === n;
      }, 30_000, 200);
      // while they are connected, a probe is answered (a generous bound: 10 s)
      const started = Date.now();
      const live = await checkedFetch(`${server.url}/livez`, { signal: AbortSignal.timeout(10_000) });
      expect(live.status).toBe(200);
      const livezMs = Date.now() - started;
      await waitFor('the non-readers closed', () => {
        peak = Math.max(peak, memory());
        return server.liveClients === 0;
      }, 60_000, 250);
      const grew = (peak - before) / MiB;
      console.log(`live-client caps: ${n} non-reading replays of ${BACKLOG} entries (~${((BACKLOG * 420) / MiB).toFixed(0)} MiB each): /livez in ${livezMs} ms, peak memory +${grew.toFixed(1)} MiB, all closed`);
      // before the caps: +98 MiB held for 40 clients (4 MiB each before a drop), growing with the client count
      expect(grew).toBeLessThan(48);
    } finally {
      for (const socket of sockets) socket.destroy();
      await server.close();
    }
  });

  it('a reader gets the whole history in order, page by page', { timeout: 60_000 }, async () => {
    const c = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': '0-0' });
    try {
      const got = await c.until((m) => m.length >= BACKLOG, 50_000);
      expect(got[0]!.id).toBe(firstId);
      expect(got[BACKLOG - 1]!.id).toBe(lastId);
      expect(new Set(got.map((e) => e.id)).size).toBe(BACKLOG);
    } finally {
      c.close();
    }
  });

  it('past http.maxReplay entries the stream ends, and resuming from the last id continues without a gap or repeat', async () => {
    const max = 300;
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxReplay: max }), log: s.log });
    try {
      const ids: string[] = [];
      let since = firstId;
      for (let round = 0; round < 3; round++) {
        const c = await openSse(`${server.url}/v1/events`, { 'Last-Event-ID': since });
        const events = await c.until((m) => m.length >= max);
        // the connection ends after the replay: nothing more, and the end is seen
        await expect(c.until(() => false, 10_000)).rejects.toThrow(/event stream ended/);
        expect(events).toHaveLength(max);
        ids.push(...events.map((e) => e.id!));
        since = ids[ids.length - 1]!;
      }
      const expected = (await s.daemon.redis.xrange(s.daemon.store.keys.events, `(${firstId}`, '+', 'COUNT', 3 * max)).map((e) => e[0]);
      expect(ids).toEqual(expected);
      // WebSocket: closed with a reason naming where to resume
      const ws = await openWs(`${server.url.replace('http', 'ws')}/v1/ws?since=${firstId}`);
      const code = await new Promise<[number, string]>((resolve) => ws.ws.once('close', (c, r) => resolve([c, String(r)])));
      expect(ws.messages).toHaveLength(max);
      expect(code[0]).toBe(4000);
      expect(code[1]).toContain(`since=${expected[max - 1]}`);
    } finally {
      await server.close();
    }
  });
});
