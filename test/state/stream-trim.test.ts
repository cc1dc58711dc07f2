/**
 * The state-change stream keeps about its length in *subject events* (stream-lib.lua's
 * add_events), whatever each entry holds. Found in review: packed entries were added with
 * MAXLEN ~ floor(100000 / n) entries, so one packed entry trimmed away the one-subject entries
 * before it that a lagging webhook fan-out, a crashed daemon's fan-out behind its cursor or a
 * feed client resuming had not read yet, although the stream held far fewer than 100,000 subject events.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { AcceptSubject, AcceptTargets } from '../../src/adapters/state/subjects.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis } from '../helpers/harness.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';

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
  return { key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) };
}

it('a bulk accept after 1,000 lone accepts keeps every subject event for a consumer that has not read them yet', async () => {
  const store = new AnchorStore(redis, `trim-${randomBytes(3).toString('hex')}`);
  // a consumer group that has read nothing yet (a reader lagging behind, as the webhook fan-out's cursor may)
  await redis.xgroup('CREATE', store.keys.events, 'lagging', '0', 'MKSTREAM');
  const lone = Array.from({ length: 1000 }, () => subject());
  for (const s of lone) await store.subjects.acceptMany(TARGETS, [s]);
  expect(await redis.xlen(store.keys.events)).toBe(1000);
  // one bulk job of 250 subjects (one accept.lua call: ACCEPT_CHUNK)
  const bulk = Array.from({ length: 250 }, () => subject());
  await store.subjects.acceptMany(TARGETS, bulk);
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

it('retention: the proofs it offers the webhooks stay on the stream while its forget of 100 subjects writes one retired entry', async () => {
  const { WebhookHandover } = await import('../../src/adapters/retention/handover.js');
  const store = new AnchorStore(redis, `trim-${randomBytes(3).toString('hex')}`);
  // a reader where the webhook fan-out's cursor would be: past last pass's changes
  await redis.xgroup('CREATE', store.keys.events, 'fan-out', '$', 'MKSTREAM');
  // last pass's 100 subjects, acknowledged by every hook: confirmed, ready to be forgotten
  const ready = Array.from({ length: 100 }, () => subject());
  await store.subjects.acceptMany({ witnesses: ['nostr'], inboxes: ['nostr'] }, ready);
  await store.subjects.setWitnessMany(ready.map((s) => s.key), 'nostr', 'confirmed', 1e12, '1 of 1 relays');
  const lastId = (await redis.xrevrange(store.keys.events, '+', '-', 'COUNT', 1))[0]![0];
  await redis.xgroup('SETID', store.keys.events, 'fan-out', lastId);
  // this pass (retention.limit 5,000): 5,000 proofs offered (one entry each), then the forget
  const handover = new WebhookHandover(redis, store.keys.base, ['hook']);
  const offered = Array.from({ length: 5000 }, (_, i) => `offered-${i}`);
  for (const key of offered) await handover.offer(store.keys.events, store.keys.eventTally, key, { status: 'confirmed', digest: 'd'.repeat(64) } as never, 1_700_000_000_000);
  expect(await store.subjects.forget(ready.map((s) => s.key))).toHaveLength(100);
  // the fan-out then reads what it has not read yet
  const proofs: string[] = [];
  for (let i = 0; i < 100; i++) {
    const res = (await redis.xreadgroup('GROUP', 'fan-out', 'c', 'COUNT', 1000, 'STREAMS', store.keys.events, '>')) as Array<[string, RawEntry[]]> | null;
    const entries = res?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    for (const e of entries) for (const { event } of expandEntry(e)) if (event.type === 'proof') proofs.push(event.key);
  }
  expect(proofs.length).toBe(5000);
}, 60_000);

it('keeps the stream near its length in subject events, whatever the entries hold, and never trims the last maxlen events', async () => {
  const { STREAM_LIB } = await import('../../src/adapters/state/scripts.js');
  const stream = `trim-lib-${randomBytes(3).toString('hex')}:events`;
  const tally = `${stream}:n`;
  const maxlen = 1000;
  // small macro nodes, so that XTRIM MINID ~ can trim close to the mark
  const before = ((await redis.config('GET', 'stream-node-max-entries')) as string[])[1]!;
  await redis.config('SET', 'stream-node-max-entries', '10');
  const add = `${STREAM_LIB}\nreturn add_events(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3])`;
  try {
    // entries of 1 to 250 events, as one-subject calls and packed calls write them
    let total = 0;
    const sizes: number[] = [];
    let seed = 7;
    for (let i = 0; i < 400; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const n = i % 3 === 0 ? 1 + (seed % 250) : 1;
      await redis.eval(add, 2, stream, tally, maxlen, n, JSON.stringify({ n }));
      total += n;
      sizes.push(n);
      const kept = (await redis.xrange(stream, '-', '+')).reduce((sum, [, fields]) => sum + (JSON.parse(fields[1]!) as { n: number }).n, 0);
      // nothing among the last maxlen events is ever gone
      expect(kept).toBeGreaterThanOrEqual(Math.min(total, maxlen));
      // bounded: maxlen, one step of marks (maxlen / 100), the entry that crossed it, one macro node
      expect(kept).toBeLessThanOrEqual(maxlen + maxlen / 100 + 250 + 10 * 250);
    }
    expect(total).toBeGreaterThan(10 * maxlen);
    // the tally holds the total and a bounded number of marks
    expect(Number(await redis.zscore(tally, '~total'))).toBe(total);
    expect(await redis.zcard(tally)).toBeLessThanOrEqual(2 + (maxlen + 250) / (maxlen / 100) + 1);
  } finally {
    await redis.config('SET', 'stream-node-max-entries', before);
    await redis.del(stream, tally);
  }
}, 60_000);
