/**
 * Review (2c723c0..fae0987): a packed entry of n subjects is added with MAXLEN ~ floor(100000 / n)
 * entries. That cap counts entries, so one packed entry trims away every one-subject entry
 * before it beyond ~100000/n — the subject events a lagging webhook fan-out (or a crashed
 * daemon's pending entries) or a reconnecting feed client has not read yet — although the
 * stream holds far fewer than the 100,000 subject events it is meant to keep.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AnchorStore, type AcceptSubject, type AcceptTargets } from '../../src/adapters/state/anchor-store.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis } from '../helpers/harness.js';

let server: EmbeddedRedis;
let redis: Redis;

beforeAll(async () => {
  server = await privateRedis(false);
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
}, 30_000);

afterAll(async () => {
  await redis?.quit().catch(() => undefined);
  await server?.stop();
});

const TARGETS: AcceptTargets = { witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] };
function subject(): AcceptSubject {
  const key = `k-${randomBytes(6).toString('hex')}`;
  return { key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: `fp-${key}` };
}

it('a bulk accept after 1,000 lone accepts keeps every subject event for a consumer that has not read them yet', async () => {
  const store = new AnchorStore(redis, `trim-${randomBytes(3).toString('hex')}`);
  // a consumer group that has read nothing yet (the webhook fan-out lagging behind)
  await redis.xgroup('CREATE', store.keys.events, 'lagging', '0', 'MKSTREAM');
  const lone = Array.from({ length: 1000 }, () => subject());
  for (const s of lone) await store.acceptMany(TARGETS, [s]);
  expect(await redis.xlen(store.keys.events)).toBe(1000);
  // one bulk job of 250 subjects (one accept.lua call: ACCEPT_CHUNK)
  const bulk = Array.from({ length: 250 }, () => subject());
  await store.acceptMany(TARGETS, bulk);
  const seen: string[] = [];
  for (let i = 0; i < 100; i++) {
    const res = (await redis.xreadgroup('GROUP', 'lagging', 'c', 'COUNT', 500, 'STREAMS', store.keys.events, '>')) as Array<[string, RawEntry[]]> | null;
    const entries = res?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    for (const e of entries) for (const { event } of expandEntry(e)) seen.push(event.key);
  }
  // 1,250 subject events, far below the 100,000 the stream is meant to hold
  expect(seen.length).toBe(1250);
  expect(new Set(seen)).toEqual(new Set([...lone, ...bulk].map((s) => s.key)));
}, 60_000);
