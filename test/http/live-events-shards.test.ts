/**
 * The live feed with redis.shards 3 (docs/architecture.md "Shards"): /v1/events and /v1/ws
 * without ?shard= carry every shard's changes on one connection, each message's id the
 * position of every shard (shard 0's event id first, comma-separated); a client that
 * disconnects and resumes from its last id gets each shard's events exactly once, in order,
 * from inside a packed entry too, and within http.maxReplay in all; bad positions are 400;
 * ?shard=i is one shard's feed with its own ids, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { shardOf } from '../../src/core/shard/shard.js';
import { decodeEntry } from '../../src/adapters/feed/event-feed.js';
import { compareEventIds, parseEventId, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import { startHttpServer } from '../../src/adapters/http/server.js';
import { cutReason } from '../../src/adapters/http/ws.js';
import { checkedFetch } from '../helpers/openapi.js';
import { receiptFields } from '../helpers/harness.js';
import { openSse, openWs, wsRefusal, type SseEvent } from './clients.js';
import { startStack, withHttp, type Stack } from './fixture.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

const K = 3;
let s: Stack;

beforeAll(async () => {
  s = await startStack({ overrides: { redis: { shards: K } }, http: { readsRequireToken: false } });
});

afterAll(async () => {
  await s?.close();
});

type Change = { id: string; type: string; key: string; status: string };

const sseChanges = (events: SseEvent[]): Change[] => events.map((e) => {
  const change = JSON.parse(e.data) as Change;
  // the SSE id is the message's id
  expect(e.id).toBe(change.id);
  return change;
});

const stream = (shard: number): string => s.daemon.state.shards[shard]!.keys.events;
const tail = async (shard: number): Promise<string> => ((await s.daemon.redis.xrevrange(stream(shard), '+', '-', 'COUNT', 1)) as RawEntry[])[0]?.[0] ?? '0-0';
const tails = async (): Promise<string[]> => Promise.all(Array.from({ length: K }, (_, i) => tail(i)));

/** Shard i's subject events after its stream id `after` (exclusive), by their own ids. */
async function eventsAfter(shard: number, after: string): Promise<string[]> {
  const entries = (await s.daemon.redis.xrange(stream(shard), `(${after}`, '+')) as RawEntry[];
  return entries.flatMap((e) => decodeEntry(e).map((m) => m.id));
}

/** n keys that shardOf puts in `shard`. */
function keysIn(shard: number, n: number, tag: string): string[] {
  const keys: string[] = [];
  for (let i = 0; i < n * 50 && keys.length < n; i++) {
    const key = `${tag}-${randomBytes(4).toString('hex')}`;
    if (shardOf(key, K) === shard) keys.push(key);
  }
  expect(keys).toHaveLength(n);
  return keys;
}

/** Accepts keys in their shard in one call (a packed entry) and moves them in one batch transition. */
async function changeIn(shard: number, keys: string[]): Promise<void> {
  const store = s.daemon.engines[shard]!.store;
  // no inbox: the daemon's witnesses leave these subjects alone
  await store.subjects.acceptMany(
    { witnesses: ['ots'], inboxes: [] },
    keys.map((key) => ({ key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) })),
  );
  await store.subjects.setWitnessMany(keys, 'ots', 'partial', 1, 'submitted', `b-${keys[0]}`);
}

/**
 * Checks a connection's messages: each id has K parts, the message's own shard (its key's)
 * moves to the message's event id and no other part moves. Returns each shard's event ids.
 */
function perShard(changes: Change[], start: string[]): string[][] {
  const out: string[][] = Array.from({ length: K }, () => []);
  let before = start;
  for (const m of changes) {
    const parts = m.id.split(',');
    expect(parts).toHaveLength(K);
    const shard = shardOf(m.key, K);
    for (let i = 0; i < K; i++) if (i !== shard) expect(parts[i], `${m.id} after ${before.join(',')}`).toBe(before[i]);
    out[shard]!.push(parts[shard]!);
    before = parts;
  }
  return out;
}

/** The replay's order: by the entry's ms, then the shard. */
function expectMergedOrder(changes: Change[]): void {
  const keyOf = (m: Change): [bigint, number] => {
    const shard = shardOf(m.key, K);
    return [parseEventId(m.id.split(',')[shard]!)![0], shard];
  };
  for (let i = 1; i < changes.length; i++) {
    const [a, b] = [keyOf(changes[i - 1]!), keyOf(changes[i]!)];
    expect(a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1]), `${changes[i - 1]!.id} before ${changes[i]!.id}`).toBe(true);
  }
}

describe('one connection, every shard', () => {
  it('SSE and WebSocket without ?shard= carry the changes of all three shards, each shard in its order', async () => {
    const start = await tails();
    const sse = await openSse(`${s.http.url}/v1/events`);
    const ws = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws`);
    try {
      // two subjects of each shard, over the API
      const picked: Array<ReturnType<typeof receiptFields>> = [];
      for (let shard = 0; shard < K; shard++) {
        for (let i = 0; i < 200 && picked.filter((x) => shardOf(x.receipt_uuid, K) === shard).length < 2; i++) {
          const x = receiptFields();
          if (shardOf(x.receipt_uuid, K) === shard) picked.push(x);
        }
      }
      expect(picked).toHaveLength(2 * K);
      const keys = picked.map((x) => x.receipt_uuid);
      expect((await s.post('/v1/anchors', { subjects: picked }, { auth: true })).status).toBe(202);
      await s.confirm(keys);
      const expected = await Promise.all(start.map((at, i) => eventsAfter(i, at)));
      const total = expected.reduce((n, l) => n + l.length, 0);
      const viaSse = sseChanges(await sse.until((m) => m.length >= total));
      const viaWs = (await ws.until((m) => m.length >= total)) as Change[];
      for (const list of [viaSse, viaWs]) {
        expect(list).toHaveLength(total);
        expect(perShard(list, start)).toEqual(expected);
        for (const k of keys) expect(list.some((m) => m.key === k && m.status === 'confirmed'), k).toBe(true);
      }
      expect(viaWs).toEqual(viaSse);
      expect(new Set(viaSse.map((m) => shardOf(m.key, K))).size).toBe(K);
    } finally {
      sse.close();
      ws.close();
    }
  });
});

describe('resuming across shards', () => {
  it('a client that disconnects mid-way and resumes from its last id gets every shard\'s events once, in order; then live ones', async () => {
    const start = await tails();
    // packed entries in every shard: 300 subjects in shard 1 (entries of 250 and 50), 120 in shard 0, 40 in shard 2
    const sizes = [120, 300, 40];
    for (let shard = 0; shard < K; shard++) await changeIn(shard, keysIn(shard, sizes[shard]!, 'resume'));
    const expected = await Promise.all(start.map((at, i) => eventsAfter(i, at)));
    const total = expected.reduce((n, l) => n + l.length, 0);
    expect(total).toBe(2 * (120 + 300 + 40));

    // the first client (WebSocket) handles 400 events and goes away (what else reached its socket is lost with it)
    const first = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws?since=${start.join(',')}`);
    await first.until((m) => m.length >= 400);
    first.close();
    const got1 = first.messages.slice(0, 400) as Change[];
    expectMergedOrder(got1);
    const last = got1.at(-1)!.id;
    // it stopped inside a packed entry: its shard's next event is of the same entry
    const lastShard = shardOf(got1.at(-1)!.key, K);
    const own = last.split(',')[lastShard]!;
    const next = expected[lastShard]![expected[lastShard]!.indexOf(own) + 1]!;
    expect(next.split('.')[0]).toBe(own.split('.')[0]);
    // the SSE resumes from the last id it saw
    const second = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': last });
    try {
      const got2 = sseChanges(await second.until((m) => got1.length + m.length >= total));
      expectMergedOrder(got2);
      expect(perShard([...got1, ...got2], start)).toEqual(expected);

      // then live: a change in shards 0 and 2 arrives once
      const more = [...keysIn(0, 2, 'live'), ...keysIn(2, 3, 'live')];
      await changeIn(0, more.slice(0, 2));
      await changeIn(2, more.slice(2));
      const after = await Promise.all(start.map((at, i) => eventsAfter(i, at)));
      const all = sseChanges(await second.until((m) => got1.length + m.length >= total + 10));
      expect(perShard([...got1, ...all], start)).toEqual(after);
    } finally {
      second.close();
    }
  });

  it('resumes from inside a packed entry in each shard', async () => {
    const sizes = [30, 260, 12];
    const before = await tails();
    for (let shard = 0; shard < K; shard++) await changeIn(shard, keysIn(shard, sizes[shard]!, 'inside'));
    // each shard's first new entry (the accept), resumed at event 5, 123 and 7
    const entries = await Promise.all(before.map(async (at, i) => ((await s.daemon.redis.xrange(stream(i), `(${at}`, '+')) as RawEntry[]).map((e) => e[0])));
    const at = [`${entries[0]![0]}.5`, `${entries[1]![0]}.123`, `${entries[2]![0]}.7`];
    const expected = await Promise.all(at.map(async (id, i) => (await eventsAfter(i, before[i]!)).filter((e) => compareEventIds(e, id) > 0)));
    expect(expected.map((l) => l.length)).toEqual([2 * 30 - 6, 2 * 260 - 124, 2 * 12 - 8]);
    const total = expected.reduce((n, l) => n + l.length, 0);
    const sse = await openSse(`${s.http.url}/v1/events`, { 'Last-Event-ID': at.join(',') });
    try {
      const got = sseChanges(await sse.until((m) => m.length >= total));
      expect(got).toHaveLength(total);
      expect(perShard(got, at)).toEqual(expected);
      expectMergedOrder(got);
    } finally {
      sse.close();
    }
  });

  it('replays at most http.maxReplay events in all over the shards; each cut ends with an id that resumes without a gap or repeat', async () => {
    const max = 120;
    const start = await tails();
    for (let shard = 0; shard < K; shard++) await changeIn(shard, keysIn(shard, [50, 140, 20][shard]!, 'cut'));
    const expected = await Promise.all(start.map((at, i) => eventsAfter(i, at)));
    const total = expected.reduce((n, l) => n + l.length, 0);
    expect(total).toBe(420);
    const server = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: false, maxReplay: max }), log: s.log });
    try {
      const got: Change[] = [];
      let since = start.join(',');
      // 420 events: 3 rounds cut at 120, the fourth takes the last 60 and stays live
      for (let round = 0; round < 4; round++) {
        const c = await openSse(`${server.url}/v1/events`, { 'Last-Event-ID': since });
        const want = round < 3 ? max : total - 3 * max;
        const events = await c.until((m) => m.length >= want);
        if (round < 3) await expect(c.until(() => false, 10_000)).rejects.toThrow(/event stream ended/);
        c.close();
        expect(events).toHaveLength(want);
        got.push(...sseChanges(events));
        since = events.at(-1)!.id!;
      }
      expect(perShard(got, start)).toEqual(expected);
      // WebSocket: closed with 4000 after 120, the reason naming the position reached (the last message's id)
      const ws = await openWs(`${server.url.replace('http', 'ws')}/v1/ws?since=${start.join(',')}`);
      const code = await new Promise<[number, string]>((resolve) => ws.ws.once('close', (c, r) => resolve([c, String(r)])));
      expect(ws.messages).toHaveLength(max);
      expect(code).toEqual([4000, `replay limit reached; resume with ?since=${got[max - 1]!.id}`]);
      expect((ws.messages.at(-1) as Change).id).toBe(got[max - 1]!.id);
    } finally {
      await server.close();
    }
  });

  it('a position too long for a WebSocket close reason (123 bytes: many shards) is named as the last message\'s id', () => {
    const many = Array.from({ length: 8 }, (_, i) => `1700000000000-${i}.249`).join(',');
    expect(Buffer.byteLength(cutReason(many))).toBeLessThanOrEqual(123);
    expect(cutReason(many)).toBe("replay limit reached; resume with ?since=<the last message's id>");
    expect(cutReason('1-0,2-0,3-0')).toBe('replay limit reached; resume with ?since=1-0,2-0,3-0');
  });
});

describe('positions the merged feed refuses', () => {
  const bad: Array<[string, RegExp]> = [
    ['yesterday', /it has 1 part, not 3/],
    ['1700000000000-0', /it has 1 part, not 3/],
    ['1-0,2-0', /it has 2 parts, not 3/],
    ['1-0,2-0,3-0,4-0', /more than 3 parts/],
    ['1-0,x,3-0', /shard 1's part "x" is not an event id/],
    ['1-0,2-0,3-0.', /shard 2's part/],
    [`1-0,2-0,${'9'.repeat(4000)}`, /shard 2's part "9{64}" is not an event id/],
    [','.repeat(4000), /more than 3 parts/],
    // numbers Redis cannot hold in a stream id (2^64 and more)
    ['1-0,1-18446744073709551616,3-0', /shard 1's part "1-18446744073709551616" is not an event id/],
    ['18446744073709551616-0,2-0,3-0', /shard 0's part/],
  ];
  it('answers 400 bad_parameter naming Last-Event-ID or since, in a bounded message without a stack', async () => {
    for (const [id, why] of bad) {
      const res = await checkedFetch(`${s.http.url}/v1/events`, { headers: { 'Last-Event-ID': id } });
      expect(res.status, id.slice(0, 40)).toBe(400);
      const body = (await res.json()) as { error: { code: string; field: string; message: string } };
      expect(body.error).toMatchObject({ code: 'bad_parameter', field: 'Last-Event-ID' });
      expect(body.error.message).toMatch(why);
      expect(body.error.message).toMatch(/^not a position in the feed of 3 shards/);
      expect(body.error.message.length).toBeLessThan(400);
      expect(body.error.message).not.toMatch(/\n\s+at /);
      const refused = await wsRefusal(`${s.http.url.replace('http', 'ws')}/v1/ws?since=${encodeURIComponent(id)}`);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'bad_parameter', field: 'since' } });
    }
    // one shard's feed takes one stream id, not a position
    const one = await checkedFetch(`${s.http.url}/v1/events?shard=1`, { headers: { 'Last-Event-ID': '1-0,2-0,3-0' } });
    expect(one.status).toBe(400);
    expect(((await one.json()) as { error: { field: string; message: string } }).error).toMatchObject({ field: 'Last-Event-ID', message: expect.stringMatching(/^not a stream id/) });
  });
});

describe('?shard=i', () => {
  it('is one shard\'s feed with its own stream ids, resumed by them, as before', async () => {
    const start = await tail(1);
    await changeIn(1, keysIn(1, 5, 'one'));
    await changeIn(0, keysIn(0, 5, 'other'));
    const expected = await eventsAfter(1, start);
    expect(expected).toHaveLength(10);
    const sse = await openSse(`${s.http.url}/v1/events?shard=1`, { 'Last-Event-ID': start });
    const ws = await openWs(`${s.http.url.replace('http', 'ws')}/v1/ws?shard=1&since=${expected[4]}`);
    try {
      const got = sseChanges(await sse.until((m) => m.length >= 10));
      expect(got.map((m) => m.id)).toEqual(expected);
      expect(got.every((m) => shardOf(m.key, K) === 1)).toBe(true);
      const rest = (await ws.until((m) => m.length >= 5)) as Change[];
      expect(rest.map((m) => m.id)).toEqual(expected.slice(5));
    } finally {
      sse.close();
      ws.close();
    }
  });
});
