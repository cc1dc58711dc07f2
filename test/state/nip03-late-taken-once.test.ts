/**
 * NIP-03: a late event id (its subject got its event after its own OTS batch fixed its list)
 * is committed by exactly one later batch. Two batches fixing their lists at once (two
 * daemons, or one daemon's OTS worker running two jobs) both read the waiting set before
 * either took from it, and each attestation was published twice (seen in the suite: 1,684
 * attestations of 1,620 events after a full Redis, and after daemon kills). The list is now
 * fixed and the late ids taken in one script call.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixBatchEventIds, noteLateEvents } from '../../src/adapters/ots/event-ids.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import type { EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { privateRedis } from '../helpers/harness.js';
import type { SignedEvent } from '../../src/core/nostr/events.js';

/** An event as the store keeps it (id, signature, signer): these tests never publish or rebuild it. */
const signedStub = (id: string): SignedEvent => ({ id, pubkey: '1'.repeat(64), created_at: 0, kind: 3099, tags: [], content: '', sig: '2'.repeat(128) });

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

const eventId = (): string => randomBytes(32).toString('hex');

it('batches fixing their lists at the same time commit each late event once, and the waiting set empties', async () => {
  const store = new AnchorStore(redis, 'late');
  const late = Array.from({ length: 50 }, eventId);
  await store.batches.addLateNip03Events(late);
  const lists = await Promise.all(['b1', 'b2', 'b3', 'b4'].map((b) => fixBatchEventIds(store, b)));
  const committed = lists.flat();
  expect(new Set(committed).size).toBe(committed.length);
  expect([...committed].sort()).toEqual([...late].sort());
  expect(await store.batches.lateNip03Events(100)).toEqual([]);
  // a retry of a batch gets its list in force, and takes nothing more
  await store.batches.addLateNip03Events([eventId()]);
  expect(await fixBatchEventIds(store, 'b1')).toEqual(lists[0]);
  expect(await store.batches.lateNip03Events(100)).toHaveLength(1);
});

it("a batch's own subjects linked to an event after its list was fixed wait for a later batch, whichever side sees the link", async () => {
  const store = new AnchorStore(redis, 'late-own');
  const keys = ['own-1', 'own-2', 'own-3', 'own-4'];
  await store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['ots'] }, keys.map((key, i) => ({ key, kind: 'receipt', envelopeCanonical: `{"k":"${key}"}`, digest: String(i).repeat(64), fingerprint: 'b'.repeat(64) })));
  const cut = (await store.batches.cutBatch('ots', 4))!;
  const link = async (key: string): Promise<string> => {
    const id = eventId();
    expect(await store.events.setSubjectEvents([{ key, event: signedStub(id) }])).toEqual([id]);
    return id;
  };
  const before = await link('own-1');
  // the OTS side fixes the list: the event linked before is in it, nothing waits
  expect(await fixBatchEventIds(store, cut.id)).toEqual([before]);
  expect(await store.batches.lateNip03Events(10)).toEqual([]);
  // linked after: the Nostr side reads the fixed list and notes the event
  const after = await link('own-2');
  await noteLateEvents(store, [{ key: 'own-2', eventId: after }]);
  expect(await store.batches.lateNip03Events(10)).toEqual([after]);
  // a retry of the OTS side (the list in force) reads every subject again: the late one is noted once, a new one too
  const later = await link('own-3');
  expect(await fixBatchEventIds(store, cut.id)).toEqual([before]);
  expect((await store.batches.lateNip03Events(10)).sort()).toEqual([after, later].sort());
});

it('a late event committed by a later batch is not noted again by a retry of either side, so no third batch commits it (two attestations)', async () => {
  const store = new AnchorStore(redis, 'late-retry');
  await store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['ots'] }, [{ key: 'r-1', kind: 'receipt', envelopeCanonical: '{"k":"r-1"}', digest: '1'.repeat(64), fingerprint: 'b'.repeat(64) }]);
  const cut = (await store.batches.cutBatch('ots', 1))!;
  // the OTS side fixes the list before the subject has its event
  expect(await fixBatchEventIds(store, cut.id)).toEqual([]);
  const id = eventId();
  expect(await store.events.setSubjectEvents([{ key: 'r-1', event: signedStub(id) }])).toEqual([id]);
  await noteLateEvents(store, [{ key: 'r-1', eventId: id }]);
  // the next batch commits it
  expect(await fixBatchEventIds(store, 'next')).toEqual([id]);
  expect(await store.batches.lateNip03Events(10)).toEqual([]);
  // a daemon SIGKILLed before its batch's events_root was written runs the OTS side again, and
  // a Nostr job killed after linking runs its side again: both find the event outside its own
  // batch's list, and neither may hand it back to the waiting set
  expect(await fixBatchEventIds(store, cut.id)).toEqual([]);
  await noteLateEvents(store, [{ key: 'r-1', eventId: id }]);
  expect(await store.batches.lateNip03Events(10)).toEqual([]);
  expect(await fixBatchEventIds(store, 'third')).toEqual([]);
});
