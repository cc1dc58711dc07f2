/**
 * Live state changes: an SSE client and a WebSocket client both see a subject go from
 * pending to confirmed; both resume after a given stream id without gaps or repeats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareStreamIds } from '../../src/adapters/http/event-feed.js';
import { receiptFields } from '../helpers/harness.js';
import { checkedFetch } from '../helpers/openapi.js';
import { openSse, openWs, wsRefusal, type SseEvent } from './clients.js';
import { startHttpServer } from '../../src/adapters/http/server.js';
import { TOKEN, startStack, withHttp, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack({ http: { readsRequireToken: false } });
});

afterAll(async () => {
  await s?.close();
});

type Change = { id: string; type: string; key: string; status: string; witness?: string; to?: string };

const sseChanges = (events: SseEvent[]): Change[] => events.map((e) => ({ ...(JSON.parse(e.data) as Change), sseId: e.id }));
/** The list without immediate repeats. */
const distinct = (list: string[]): string[] => list.filter((x, i) => i === 0 || list[i - 1] !== x);
const forKey = <T extends { key?: unknown }>(list: T[], key: string): T[] => list.filter((m) => m.key === key);
const confirmedFor = (key: string) => (list: Array<{ key?: unknown; status?: unknown }>) => list.some((m) => m.key === key && m.status === 'confirmed');

describe('a subject from pending to confirmed', () => {
  it('is seen on /v1/events and on /v1/ws with the same messages', async () => {
    const sse = await openSse(`${s.http.url}/v1/events`);
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const ws = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws`);
    try {
      const subject = receiptFields();
      const key = subject.receipt_uuid;
      expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
      await s.confirm([key]);

      const viaSse = forKey(sseChanges(await sse.until((m) => confirmedFor(key)(sseChanges(m)))), key);
      const viaWs = forKey((await ws.until(confirmedFor(key))) as Change[], key);

      // accepted (pending), nostr confirmed (partial), ots confirmed (confirmed)
      expect(distinct(viaSse.map((m) => m.status))).toEqual(['pending', 'partial', 'confirmed']);
      expect(viaSse[0]).toMatchObject({ type: 'accepted', status: 'pending', digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
      const confirmations = viaSse.filter((m) => m.type === 'state' && m.to === 'confirmed').map((m) => m.witness);
      expect(confirmations).toEqual(['nostr', 'ots']);
      // every SSE event carries its stream id, the same one as in the data
      for (const m of viaSse as Array<Change & { sseId: string }>) expect(m.sseId).toBe(m.id);
      const strip = (list: Array<Record<string, unknown>>) => list.map(({ sseId: _s, ...rest }) => rest);
      expect(viaWs).toEqual(strip(viaSse as unknown as Array<Record<string, unknown>>));
    } finally {
      sse.close();
      ws.close();
    }
  });
});

describe('resuming', () => {
  it('replays after Last-Event-ID (SSE) and ?since= (WebSocket), then goes on live, once each', async () => {
    const first = receiptFields();
    const watcher = await openSse(`${s.http.url}/v1/events`);
    expect((await s.post('/v1/anchors', first, { auth: true })).status).toBe(202);
    await s.confirm([first.receipt_uuid]);
    const seen = forKey(sseChanges(await watcher.until((m) => confirmedFor(first.receipt_uuid)(sseChanges(m)))), first.receipt_uuid);
    watcher.close();
    const acceptedId = seen[0]!.id;

    const sse = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': acceptedId });
    const ws = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws?since=${acceptedId}`);
    try {
      // the changes after the accepted one are replayed
      const after = seen.length - 1;
      const replayed = await sse.until((m) => forKey(sseChanges(m), first.receipt_uuid).length >= after);
      expect(forKey(sseChanges(replayed), first.receipt_uuid).map((m) => m.id)).toEqual(seen.slice(1).map((m) => m.id));
      await ws.until((m) => forKey(m as Change[], first.receipt_uuid).length >= after);

      // then a new subject arrives live
      const second = receiptFields();
      expect((await s.post('/v1/anchors', second, { auth: true })).status).toBe(202);
      await s.confirm([second.receipt_uuid]);
      const all = sseChanges(await sse.until((m) => confirmedFor(second.receipt_uuid)(sseChanges(m))));
      const wsAll = (await ws.until(confirmedFor(second.receipt_uuid))) as Change[];
      for (const list of [all, wsAll]) {
        const ids = list.map((m) => m.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect([...ids].sort(compareStreamIds)).toEqual(ids);
        expect(forKey(list, first.receipt_uuid).map((m) => m.id)).toEqual(seen.slice(1).map((m) => m.id));
        expect(distinct(forKey(list, second.receipt_uuid).map((m) => m.status))).toEqual(['pending', 'partial', 'confirmed']);
      }
    } finally {
      sse.close();
      ws.close();
    }
  });

  it('answers 400 for a malformed Last-Event-ID or since', async () => {
    const res = await checkedFetch(`${s.http.url}/v1/events`, { headers: { 'Last-Event-ID': 'yesterday' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { field: string } }).error.field).toBe('Last-Event-ID');
    const refused = await wsRefusal(`${s.http.url.replace('http', 'ws')}/v1/ws?since=nope`);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { field: 'since' } });
  });
});

describe('WebSocket upgrades', () => {
  it('are refused with 404 on other paths, and with 401 when reads need the token and it is missing', async () => {
    const base = s.http.url.replace('http', 'ws');
    expect((await wsRefusal(`${base}/v1/nothing`)).status).toBe(404);
    const strict = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: true }), log: s.log });
    try {
      const wsUrl = strict.url.replace('http', 'ws');
      const refused = await wsRefusal(`${wsUrl}/v1/ws`);
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer /);
      const withHeader = await openWs(`${wsUrl}/v1/ws`, { Authorization: `Bearer ${TOKEN}` });
      withHeader.close();
      const withQuery = await openWs(`${wsUrl}/v1/ws?access_token=${TOKEN}`);
      withQuery.close();
      const sse = await openSse(`${strict.url}/v1/events?access_token=${TOKEN}`);
      expect(sse.status).toBe(200);
      sse.close();
    } finally {
      await strict.close();
    }
  });
});
