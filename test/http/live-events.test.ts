/**
 * Live state changes: an SSE client and a WebSocket client both see a subject go from
 * pending to confirmed; both resume after a given stream id without gaps or repeats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { EventFeed, compareStreamIds } from '../../src/adapters/feed/event-feed.js';
import { LiveFeed } from '../../src/adapters/feed/live-feed.js';
import { createLogger } from '../../src/daemon/logger.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { checkedFetch } from '../helpers/openapi.js';
import { openSse, openWs, wsRefusal, type SseEvent } from './clients.js';
import { startHttpServer } from '../../src/adapters/http/server.js';
import { TOKEN, startStack, withHttp, type Stack } from './fixture.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

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

  it('a Last-Event-ID past the end of the stream (another shard\'s, or from a Redis since flushed) still gets the live events', async () => {
    const sse = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': `${Date.now() + 86_400_000}-0` });
    try {
      const subject = receiptFields();
      expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
      await s.confirm([subject.receipt_uuid]);
      const got = forKey(sseChanges(await sse.until((m) => confirmedFor(subject.receipt_uuid)(sseChanges(m)))), subject.receipt_uuid);
      expect(distinct(got.map((m) => m.status))).toEqual(['pending', 'partial', 'confirmed']);
    } finally {
      sse.close();
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

  it('answers 400 for a stream id whose numbers Redis cannot hold (over 2^64 - 1), not a broken stream', async () => {
    // a stream with entries: an id before its end is replayed from, not taken as past the end
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await s.confirm([subject.receipt_uuid]);
    for (const id of ['1-18446744073709551616', '1-99999999999999999999.3', '18446744073709551616-0']) {
      const res = await checkedFetch(`${s.http.url}/v1/events`, { headers: { 'Last-Event-ID': id } });
      expect(res.status, id).toBe(400);
      expect(((await res.json()) as { error: { code: string; field: string } }).error).toMatchObject({ code: 'bad_parameter', field: 'Last-Event-ID' });
      const refused = await wsRefusal(`${s.http.url.replace('http', 'ws')}/v1/ws?since=${id}`);
      expect(refused.status, id).toBe(400);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { field: 'since' } });
    }
    // the largest id Redis holds is one
    const max = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': '18446744073709551615-18446744073709551615' });
    expect(max.status).toBe(200);
    max.close();
  });
});

describe('a replay Redis refuses', () => {
  it('leaves no subscriber behind: the failed subscribe is undone, live events do not go to it', async () => {
    // a stream key of its own, made a string so that Redis refuses the replay's reads (WRONGTYPE)
    const key = `${s.daemon.state.shards[0]!.keys.events}:refused-${randomBytes(4).toString('hex')}`;
    const reader = new EventFeed(s.daemon.redis, key, createLogger('silent'), { blockMs: 50 });
    await reader.start();
    const feed = new LiveFeed([reader], createLogger('silent'));
    try {
      await s.daemon.redis.set(key, 'not a stream');
      let got = 0;
      await expect(feed.subscribe(() => (got += 1), '1-0')).rejects.toThrow(/WRONGTYPE/);
      expect(reader.size).toBe(0);
      await s.daemon.redis.del(key);
      // a listener added now sees the next entry: the refused one must not
      let live!: (n: number) => void;
      const seen = new Promise<number>((resolve) => (live = resolve));
      await feed.subscribe(() => live(got));
      await s.daemon.redis.xadd(key, '*', 'data', JSON.stringify({ type: 'accepted', key: 'k', status: 'pending', at: 'x', digest: '' }));
      expect(await seen).toBe(0);
      expect(reader.size).toBe(1);
    } finally {
      await reader.close();
      await s.daemon.redis.del(key);
    }
  });
});

describe('a WebSocket replay Redis refuses', () => {
  it('closes that socket with 1011; the failure is handled, not an unhandled rejection that would end the daemon', async () => {
    const events = s.daemon.state.shards[0]!.keys.events;
    const saved = `${events}:saved-${randomBytes(4).toString('hex')}`;
    const rejections: unknown[] = [];
    const onRejection = (err: unknown): void => void rejections.push(err);
    process.on('unhandledRejection', onRejection);
    const had = (await s.daemon.redis.exists(events)) === 1;
    if (had) await s.daemon.redis.rename(events, saved);
    try {
      // the stream's key holds a string for a moment: the replay's reads are refused (WRONGTYPE)
      await s.daemon.redis.set(events, 'not a stream');
      const ws = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws?since=1-0`);
      let code: number | null = null;
      ws.ws.on('close', (c) => (code = c));
      await waitFor('the socket closed or the failure unhandled', () => code !== null || rejections.length > 0, 10_000, 10);
      expect(rejections).toEqual([]);
      expect(code).toBe(1011);
    } finally {
      await s.daemon.redis.del(events);
      if (had) await s.daemon.redis.rename(saved, events);
      process.off('unhandledRejection', onRejection);
    }
  });
});

describe('packed entries (one stream entry per batch transition)', () => {
  /** N subjects accepted in one call and moved in one batch transition (chunks of 250: entries of 250 and N - 250). */
  async function batchTransition(n: number): Promise<{ keys: string[]; before: string; entries: string[] }> {
    const redis = s.daemon.redis;
    const stream = s.daemon.store.keys.events;
    const before = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    const keys = Array.from({ length: n }, (_, i) => `packed-${randomBytes(3).toString('hex')}-${i}`);
    // no inbox: the daemon's witnesses leave these subjects alone
    await s.daemon.store.subjects.acceptMany(
      { witnesses: ['ots'], inboxes: [] },
      keys.map((key) => ({ key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) })),
    );
    const mid = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0];
    await s.daemon.store.subjects.setWitnessMany(keys, 'ots', 'partial', 1, 'submitted', `b-${keys[0]}`);
    const entries = (await redis.xrange(stream, `(${mid}`, '+')).map((e) => e[0]);
    return { keys, before, entries };
  }
  const stateOf = (list: Change[], keys: string[]) => list.filter((m) => m.type === 'state' && keys.includes(m.key));

  it('an SSE client resuming from the middle of a packed entry gets the rest of it and what follows, nothing twice', async () => {
    const { keys, entries } = await batchTransition(300);
    expect(entries).toHaveLength(2);
    const resumeAt = `${entries[0]}.123`;
    const sse = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': resumeAt });
    try {
      const got = await sse.until((m) => stateOf(sseChanges(m), keys).length >= 300 - 124);
      const changes = sseChanges(got);
      const ids = changes.map((m) => m.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(stateOf(changes, keys).map((m) => m.key)).toEqual(keys.slice(124));
      expect(ids).toEqual([...Array.from({ length: 126 }, (_, i) => `${entries[0]}.${124 + i}`), ...Array.from({ length: 50 }, (_, i) => `${entries[1]}.${i}`)]);
      for (const m of stateOf(changes, keys)) expect(m).toMatchObject({ type: 'state', witness: 'ots', to: 'partial', status: 'partial' });
      // the last event of the entry given whole (a client of before): the next entry only
      const old = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': entries[0]! });
      try {
        const rest = sseChanges(await old.until((m) => m.length >= 50));
        expect(rest.map((m) => m.key)).toEqual(keys.slice(250));
      } finally {
        old.close();
      }
    } finally {
      sse.close();
    }
  });

  it('a retention pass (forget) of several subjects is one entry, seen as one retired event per subject', async () => {
    const { keys } = await batchTransition(3);
    await s.daemon.store.subjects.setWitnessMany(keys, 'ots', 'confirmed', 2, 'bitcoin block 7', `b-${keys[0]}`);
    const redis = s.daemon.redis;
    const stream = s.daemon.store.keys.events;
    const mid = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0];
    expect(await s.daemon.store.subjects.forget(keys)).toEqual(keys);
    const entries = (await redis.xrange(stream, `(${mid}`, '+')).map((e) => e[0]);
    expect(entries).toHaveLength(1);
    const sse = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': mid });
    try {
      const changes = sseChanges(await sse.until((m) => sseChanges(m).filter((c) => c.type === 'retired' && keys.includes(c.key)).length >= 3));
      const retired = changes.filter((c) => c.type === 'retired' && keys.includes(c.key));
      expect(retired.map((c) => [c.id, c.key, c.status])).toEqual(keys.map((key, i) => [`${entries[0]}.${i}`, key, 'confirmed']));
    } finally {
      sse.close();
    }
  });

  it('a replay cut at http.maxReplay inside a packed entry ends with an id that resumes without a gap or repeat', async () => {
    const { keys, before } = await batchTransition(300);
    const max = 120;
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxReplay: max }), log: s.log });
    try {
      const got: Change[] = [];
      let since = before;
      // 300 accepted + 300 state events: 4 rounds cut at 120, the fifth takes the last 120 and stays live
      for (let round = 0; round < 5; round++) {
        const c = await openSse(`${server.url}/v1/events`, { 'Last-Event-ID': since });
        const events = await c.until((m) => m.length >= max);
        if (round < 4) await expect(c.until(() => false, 10_000)).rejects.toThrow(/event stream ended/);
        c.close();
        expect(events).toHaveLength(max);
        got.push(...sseChanges(events));
        since = events.at(-1)!.id!;
      }
      expect(got.filter((m) => m.type === 'accepted').map((m) => m.key)).toEqual(keys);
      expect(got.filter((m) => m.type === 'state').map((m) => m.key)).toEqual(keys);
      expect(new Set(got.map((m) => m.id)).size).toBe(600);
      // WebSocket: the close reason names the id inside the entry
      const ws = await openWs(`${server.url.replace('http', 'ws')}/v1/ws?since=${before}`);
      const code = await new Promise<[number, string]>((resolve) => ws.ws.once('close', (c, r) => resolve([c, String(r)])));
      expect(ws.messages).toHaveLength(max);
      expect(code).toEqual([4000, expect.stringContaining(`since=${got[max - 1]!.id}`)]);
      expect(got[max - 1]!.id).toMatch(/^\d+-\d+\.119$/);
    } finally {
      await server.close();
    }
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
