/**
 * Review (2c723c0..fae0987): with redis.shards K > 1 every shard has its own events stream and
 * stream ids, and the webhooks send each shard's events with X-Aer1-Event-Id = that id.
 * docs/http.md (Webhooks) tells receivers the id is unique and to deduplicate by it; the bodies
 * carry no shard. Two shards changing in the same millisecond give two different subjects'
 * events the same id, so a receiver that deduplicates as told drops one of them.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AnchorStore, type AcceptSubject, type AcceptTargets } from '../../src/adapters/state/anchor-store.js';
import { expandEntry, type RawEntry } from '../../src/adapters/state/stream-entries.js';
import { shardPrefix } from '../../src/core/shard/shard.js';
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

const TARGETS: AcceptTargets = { witnesses: ['nostr'], inboxes: ['nostr'] };
function subject(): AcceptSubject {
  const key = `k-${randomBytes(6).toString('hex')}`;
  return { key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: `fp-${key}` };
}

it('the event ids two shards hand to the webhooks name one subject event each', async () => {
  const base = `ids-${randomBytes(3).toString('hex')}`;
  const shards = [0, 1].map((i) => new AnchorStore(redis, shardPrefix(base, i, 2)));
  // both shards take subjects at once (two daemons' intake, or one daemon's K engines)
  for (let i = 0; i < 300; i++) await Promise.all(shards.map((s) => s.acceptMany(TARGETS, [subject()])));
  const owner = new Map<string, string>();
  const clashes: string[] = [];
  for (const s of shards) {
    for (const entry of (await redis.xrange(s.keys.events, '-', '+')) as RawEntry[]) {
      for (const { id, event } of expandEntry(entry)) {
        if (owner.has(id) && owner.get(id) !== event.key) clashes.push(id);
        owner.set(id, event.key);
      }
    }
  }
  expect(clashes).toEqual([]);
}, 60_000);
