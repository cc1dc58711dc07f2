/**
 * Found in review: batches now leave Redis with their last subject (forget.lua counts
 * `gone` against `size`). Subjects retention removed before the upgrade (layout 3's forget.lua,
 * test/fixtures/state-layout3/forget.lua, never counted `gone`) are missing from that count,
 * and opening layout 5 does not make it up; AnchorStore.forget counts them once (the batch has
 * no `gone` field yet), so the batch still leaves with its last subject instead of staying for
 * good (hash with its digests, key list, transitions, batch event, attestations).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AnchorStore, type AcceptSubject, type AcceptTargets } from '../../src/adapters/state/anchor-store.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis, REPO_ROOT } from '../helpers/harness.js';

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

const BOTH: AcceptTargets = { witnesses: ['nostr', 'ots'], inboxes: ['nostr', 'ots'] };
function subject(): AcceptSubject {
  const key = `k-${randomBytes(6).toString('hex')}`;
  return { key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: randomBytes(32).toString('hex'), fingerprint: randomBytes(32).toString('hex') };
}

it('a batch one of whose subjects was retired before the upgrade leaves with its last subject after it', async () => {
  const store = new AnchorStore(redis, `gone-${randomBytes(3).toString('hex')}`);
  const k = store.keys;
  const subs = [subject(), subject(), subject()];
  const keys = subs.map((s) => s.key);
  await store.acceptMany(BOTH, subs);
  const nostr = (await store.cutBatch('nostr', 10))!.id;
  const ots = (await store.cutBatch('ots', 10))!.id;
  await store.setWitnessMany(keys, 'nostr', 'confirmed', 1e12, '1 of 1 relays', nostr);
  await store.setWitnessMany(keys, 'ots', 'confirmed', 1e12, 'Bitcoin block 7', ots);
  // retention before the upgrade: layout 3's forget.lua removes the first subject, as its AnchorStore called it
  const oldForget = readFileSync(join(REPO_ROOT, 'test/fixtures/state-layout3/forget.lua'), 'utf8');
  const fixed = [k.counts, ...(['pending', 'partial', 'confirmed', 'failed', 'rejected'] as const).map((s) => k.byStatus(s)), k.meta, k.events, k.nostrRecent];
  const s0 = keys[0]!;
  expect(await redis.eval(oldForget, fixed.length + 4, ...fixed, k.subject(s0), k.envelope(s0), k.history(s0), k.subject(s0), '2023-11-14T22:13:20Z', '100000', s0, '')).toEqual([1]);
  // the release retires the other two
  expect(await store.forget(keys.slice(1))).toEqual(keys.slice(1));
  await store.dropEmptiedBatches();
  // none of the batches' subjects is left: the batches should be gone with them
  expect(await redis.exists(k.batch('nostr', nostr), k.batch('ots', ots), k.batchKeys('nostr', nostr), k.batchKeys('ots', ots))).toBe(0);
}, 30_000);
