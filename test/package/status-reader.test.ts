/**
 * AnchorStatusReader (the package's read-only view of the daemon's state) on the shared
 * Redis with two shards: a subject's detail, its proof, list pages, counts and what a
 * producer checks are what the daemon's own stores give, each subject read from its shard.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '../../src/adapters/redis/connection.js';
import { ShardedStore } from '../../src/adapters/state/sharded-store.js';
import type { AcceptSubject } from '../../src/adapters/state/subjects.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { AnchorStatusReader } from '../../src/package/status-reader.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { SHARED_REDIS_URL, deletePrefix, uniquePrefix } from '../helpers/harness.js';

let redis: RedisClient;
let prefix: string;
let state: ShardedStore;
let reader: AnchorStatusReader;
const keys = Array.from({ length: 5 }, (_, i) => `reader-${i}-${randomBytes(3).toString('hex')}`);
const refused = `refused-${randomBytes(3).toString('hex')}`;

function subject(key: string): AcceptSubject {
  return { key, kind: 'receipt', envelopeCanonical: `{"k":${JSON.stringify(key)}}`, digest: randomBytes(32).toString('hex'), fingerprint: sha256Hex(`fp-${key}`) };
}

beforeAll(async () => {
  redis = connectRedis(SHARED_REDIS_URL);
  prefix = uniquePrefix('reader');
  state = ShardedStore.open(redis, prefix, 2);
  for (const key of keys) await state.of(key).subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: [] }, [subject(key)]);
  await state.of(refused).subjects.reject(refused, 'not a receipt');
  await state.of(keys[0]!).subjects.setWitness(keys[0]!, 'nostr', 'confirmed', 1, 'ws://relay: accepted');
  reader = new AnchorStatusReader(redis, { prefix, shards: 2 });
});

afterAll(async () => {
  for (const s of state.shards) await deletePrefix(redis, s.keys.base);
  await redis.quit();
});

describe('AnchorStatusReader', () => {
  it('get: a subject as the daemon views it (status, witnesses, history); null for an unknown key', async () => {
    const detail = await reader.get(keys[0]!);
    expect(detail).toMatchObject({ key: keys[0], status: 'partial', envelope: { k: keys[0] } });
    assert(detail !== null && !('retired' in detail), 'a subject in Redis: its full detail');
    expect(detail.witnesses.nostr?.status).toBe('confirmed');
    expect(detail.witnesses.ots?.status).toBe('pending');
    expect(detail.history.map((h) => h.event)).toEqual(['accepted', 'witness']);
    expect(await reader.get('no-such-key')).toBeNull();
    expect(await reader.get(refused)).toMatchObject({ status: 'rejected', reason: 'not a receipt' });
  });

  it('list: pages over both shards give every subject once, newest first; a status filter keeps its own', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await reader.list({ limit: 2, cursor });
      seen.push(...page.items.map((s) => s.key));
      if (page.next === null) break;
      cursor = page.next;
    }
    expect(seen.sort()).toEqual([...keys, refused].sort());
    expect((await reader.list({ status: 'rejected' })).items.map((s) => s.key)).toEqual([refused]);
    expect((await reader.list({ status: 'confirmed', witness: 'nostr' })).items.map((s) => s.key)).toEqual([keys[0]]);
    await expect(reader.list({ limit: 0 })).rejects.toThrow(/limit must be an integer from 1 to 1000, got 0/);
  });

  it('stats: the counts per status and per witness status, summed over the shards', async () => {
    const stats = await reader.stats();
    expect(stats.subjects).toEqual({ total: 6, byStatus: { pending: 4, partial: 1, confirmed: 0, failed: 0, rejected: 1 } });
    expect(stats.witnesses.nostr).toEqual({ pending: 4, partial: 0, confirmed: 1, failed: 0 });
    expect(stats.witnesses.ots).toEqual({ pending: 5, partial: 0, confirmed: 0, failed: 0 });
  });

  it('proof: the proof the daemon exports for the subject; null for a refused or unknown key', async () => {
    const proof = await reader.proof(keys[1]!);
    expect(proof).toEqual(await new ProofExporter(state.of(keys[1]!), { relays: [], calendars: [] }).export(keys[1]!));
    expect(proof).toMatchObject({ envelope: { k: keys[1] }, status: 'pending' });
    expect(await reader.proof(refused)).toBeNull();
    expect(await reader.proof('no-such-key')).toBeNull();
  });

  it('intakeStates: what a producer checks, each key from its own shard', async () => {
    const states = await reader.intakeStates([keys[2]!, 'no-such-key', keys[3]!]);
    expect(states[0]).toEqual((await state.of(keys[2]!).subjects.intakeStates([keys[2]!]))[0]);
    expect(states[0]).toMatchObject({ fingerprint: sha256Hex(`fp-${keys[2]}`), status: 'pending' });
    expect(states[1]).toEqual({ fingerprint: null, status: null, digest: null });
    expect(states[2]!.status).toBe('pending');
  });

  it('queuePrefix: the one shard\'s BullMQ prefix; with shards, one queue each, so none', () => {
    expect(new AnchorStatusReader(redis, { prefix }).queuePrefix).toBe(`{${prefix}}`);
    expect(() => reader.queuePrefix).toThrow(/2 shards have a queue each/);
  });
});
