/**
 * The relay outboxes (src/adapters/nostr/relay-outbox.ts: outbox-add, outbox-take and
 * set-relays.lua) against a real, private redis-server: what a drain is handed, the rate
 * window shared by every taker, the lease that hands a dead taker's group back, the pause,
 * and that every command a script ran touched only keys its call declared (Redis Cluster).
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis, waitFor } from '../helpers/harness.js';
import { startMonitor, type RedisMonitor } from '../helpers/redis-monitor.js';
import { encodeReport } from '../../src/adapters/state/relay-reports.js';
import type { RelayReportRecord } from '../../src/adapters/state/events.js';

let server: EmbeddedRedis;
let redis: Redis;
let monitor: RedisMonitor;
const seen: Array<{ args: string[]; source: string }> = [];

beforeAll(async () => {
  server = await privateRedis(false);
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  monitor = await startMonitor(server.url, (args, source) => seen.push({ args, source }));
}, 30_000);

afterAll(async () => {
  monitor?.stop();
  await redis?.quit().catch(() => undefined);
  await server?.stop();
});

/** Every command run from a script since the last check touched a key its call declared; returns how many ran. */
async function expectKeysDeclared(): Promise<number> {
  const mark = `mark-${randomBytes(4).toString('hex')}`;
  await redis.echo(mark);
  await waitFor('MONITOR caught up', () => seen.some((s) => s.args[0]?.toLowerCase() === 'echo' && s.args[1] === mark), 5000, 10);
  let declared: Set<string> | null = null;
  let checked = 0;
  for (const { args, source } of seen.splice(0)) {
    const cmd = args[0]!.toLowerCase();
    if (cmd === 'evalsha' || cmd === 'eval') {
      declared = new Set(args.slice(3, 3 + Number(args[2])));
      continue;
    }
    if (source !== 'lua') continue;
    expect([...(declared ?? [])], `${args.slice(0, 2).join(' ')}: key not in KEYS`).toContain(args[1]);
    checked++;
  }
  return checked;
}

const A = 'ws://127.0.0.1:1/a';
const B = 'ws://127.0.0.1:1/b';
let store: AnchorStore;
let outbox: RelayOutbox;
const T = 1_700_000_000_000;

beforeEach(async () => {
  store = new AnchorStore(redis, `ob-${randomBytes(3).toString('hex')}`);
  outbox = new RelayOutbox(store.events, [A, B]);
  seen.splice(0);
});

/** An event hash as the store keeps it, with relays' reports already recorded. */
async function event(id: string, reports: RelayReportRecord[] = []): Promise<void> {
  const numbers = await store.registry.relayNumbers(reports.map((r) => r.url));
  await redis.hset(store.keys.event(id), { json: `{"id":"${id}"}`, subject: `s-${id}`, ...Object.fromEntries(reports.map((r, i) => [`r:${numbers[i]}`, encodeReport(r)])) });
}

/** The relays recorded on an event (its `to`), as URLs. */
async function handedTo(id: string): Promise<string[]> {
  return (await store.events.eventRelays(id)).relays;
}

describe('relay outboxes', () => {
  it('add queues each event on every relay that has not answered it for good, once, and records the relays on the event', async () => {
    await event('e1');
    await event('e2', [{ url: A, status: 'accepted', message: '', at: '', final: true }]);
    expect(await outbox.add(['e1', 'e2'], T)).toBe(3);
    expect(await outbox.add(['e1'], T + 5)).toBe(2);
    expect(await redis.zrange(outbox.key(A), 0, -1, 'WITHSCORES')).toEqual(['e1', String(T)]);
    expect(await redis.zrange(outbox.key(B), 0, -1)).toEqual(['e1', 'e2']);
    expect(await handedTo('e1')).toEqual([A, B]);
    // e2 went to B only; A reported on it before (a report with no hand-over recorded comes after)
    expect(await handedTo('e2')).toEqual([B, A]);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('take hands out due events only, leases them, and gives them back when the lease ends', async () => {
    for (const id of ['e1', 'e2', 'e3']) await event(id);
    await outbox.add(['e1', 'e2'], T);
    await outbox.add(['e3'], T + 10_000);
    expect(await outbox.take(A, T + 1, 10, 5000, 1000)).toEqual({ ids: ['e1', 'e2'] });
    // leased: not due again until T + 1 + 5000; e3 is due at T + 10,000
    expect(await outbox.take(A, T + 2, 10, 5000, 1000)).toEqual({ waitMs: 4999 });
    await outbox.renew(A, ['e1'], T + 20_000);
    expect(await outbox.take(A, T + 5001, 10, 5000, 1000)).toEqual({ ids: ['e2'] });
    await outbox.done(A, ['e2']);
    expect(await outbox.take(A, T + 10_000, 10, 5000, 1000)).toEqual({ ids: ['e3'] });
    await outbox.done(A, ['e1', 'e3']);
    expect(await outbox.take(A, T + 30_000, 10, 5000, 1000)).toEqual({ waitMs: null });
    expect(await redis.exists(outbox.key(A))).toBe(0);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('the rate window is shared by every taker, and a pause stops every taker until it ends', async () => {
    const ids = Array.from({ length: 5 }, (_, i) => `e${i}`);
    for (const id of ids) await event(id);
    await outbox.add(ids, T);
    const other = new RelayOutbox(store.events, [A, B]);
    const first = await outbox.take(A, T, 10, 60_000, 3);
    expect(first).toEqual({ ids: ['e0', 'e1', 'e2'] });
    const second = await other.take(A, T, 10, 60_000, 3);
    expect('waitMs' in second && second.waitMs! > 59_000).toBe(true);
    await redis.del(`${store.keys.base}:nostr:rate:${outbox.key(A).split(':').at(-1)}`);
    await outbox.pause(A, 60_000);
    const paused = await other.take(A, T, 10, 60_000, 3);
    expect('waitMs' in paused && paused.waitMs! > 59_000).toBe(true);
    // the other relay is neither rate-limited nor paused
    expect(await other.take(B, T, 10, 60_000, 3)).toEqual({ ids: ['e0', 'e1', 'e2'] });
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });

  it('record writes one relay\'s reports on many events, never downgrading an acceptance, and returns owners and reports', async () => {
    await event('e1', [{ url: B, status: 'accepted', message: '', at: '', final: true }]);
    await event('e2', [{ url: A, status: 'accepted', message: 'first', at: '', final: true }]);
    const out = await outbox.record(A, [
      { id: 'e1', report: { url: A, status: 'accepted', message: '', at: 'x', attempts: 1, final: true } },
      { id: 'e2', report: { url: A, status: 'failed', message: 'late', at: 'x', attempts: 3, final: true } },
      { id: 'gone', report: { url: A, status: 'accepted', message: '', at: 'x', attempts: 1, final: true } },
    ]);
    expect(out[0]).toMatchObject({ subject: 's-e1', batch: null, previous: undefined, gone: false });
    expect(out[0]!.reports.map((r) => r.url).sort()).toEqual([A, B].sort());
    expect(out[1]).toMatchObject({ subject: 's-e2', previous: { status: 'accepted', message: 'first' }, gone: false });
    expect(out[1]!.reports).toEqual([{ url: A, status: 'accepted', message: 'first', at: '', final: true }]);
    // the first kept as recorded, at and all: an unusual at ('x') reads back as it was written
    expect((await store.events.relayReports('e1')).find((r) => r.url === A)).toEqual({ url: A, status: 'accepted', message: '', at: 'x', attempts: 1, final: true });
    expect(out[2]).toMatchObject({ gone: true, reports: [] });
    expect(await redis.exists(store.keys.event('gone'))).toBe(0);
    expect(await expectKeysDeclared()).toBeGreaterThan(0);
  });
});
