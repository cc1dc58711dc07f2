/**
 * The Nostr event ids an OTS batch commits to alongside its subjects (NIP-03, see
 * `src/core/ots/event-tree.ts` and docs/ots.md): fixed once, at the batch's first
 * submission, as the envelope event id of each of its subjects that has one (batch order),
 * then the late event ids waiting for a batch (oldest first). A subject whose event is
 * linked after its batch's list was fixed (auto mode decides its Nostr cut later) is
 * noted late, by whichever of the two sides sees it second (once in its life: a side run again
 * never hands back an event a later batch took, note-late.lua), and a later batch commits it:
 *
 * - the OTS side fixes the list, then reads its subjects' events again and notes any missing;
 * - the Nostr side links the event, then reads the subject's OTS batch list and notes the event
 *   when the list is fixed without it (`noteLateEvents`).
 *
 * Either the second read of the OTS side comes after the link (it sees the event), or the
 * Nostr side's read comes after the list was fixed (it sees the list): no event is missed.
 */
import type { AnchorStore } from '../state/anchor-store.js';

/** Most late event ids one batch takes (the rest wait for the next). */
export const MAX_LATE_PER_BATCH = 10_000;

/** Each subject's envelope event id, null for one without (yet): one read of each subject hash, no envelope. */
async function eventIdsOf(store: AnchorStore, keys: readonly string[]): Promise<Array<string | null>> {
  return (await store.subjects.getRecords(keys, { envelopes: false })).map((r) => r?.nostrEventId ?? null);
}

/**
 * The event ids the batch commits to, fixing them on the first call (idempotent: a retry or a
 * second daemon gets the list in force). The late ids it took leave the waiting set in the same
 * script call, so no two batches commit one; its own subjects' events linked after the list was
 * fixed join the set. That second read is of the subjects that had no event at the first (an
 * event once linked stays: the ones read are in the list), all of them when the list in force
 * is not the one this call proposed (another daemon's, or one fixed before).
 */
export async function fixBatchEventIds(store: AnchorStore, batchId: string): Promise<string[]> {
  const keys = await store.batches.batchKeys('ots', batchId);
  let ids = await store.batches.otsEventIds(batchId);
  let again: readonly string[] = keys;
  if (ids === null) {
    const first = await eventIdsOf(store, keys);
    const own = first.filter((e): e is string => e !== null);
    // one script call fixes the list and takes the late ids it commits out of the waiting set
    ids = await store.batches.fixOtsEventIds(batchId, own, MAX_LATE_PER_BATCH);
    if (own.every((e, i) => ids![i] === e)) again = keys.filter((_k, i) => first[i] === null);
  }
  const committed = new Set(ids);
  const linked = await eventIdsOf(store, again);
  await store.batches.addLateNip03Events(linked.filter((e): e is string => e !== null && !committed.has(e)));
  return ids;
}

/** The Nostr side, after linking events to subjects: each one whose OTS batch fixed its list without it waits for a later batch. */
export async function noteLateEvents(store: AnchorStore, linked: ReadonlyArray<{ key: string; eventId: string }>): Promise<void> {
  if (linked.length === 0) return;
  const records = await store.subjects.getRecords(linked.map((l) => l.key), { envelopes: false });
  const lists = new Map<string, Set<string> | null>();
  const late: string[] = [];
  for (let i = 0; i < linked.length; i++) {
    const batch = records[i]?.batches.ots?.id;
    if (!batch) continue;
    if (!lists.has(batch)) {
      const ids = await store.batches.otsEventIds(batch);
      lists.set(batch, ids ? new Set(ids) : null);
    }
    const list = lists.get(batch);
    if (list && !list.has(linked[i]!.eventId)) late.push(linked[i]!.eventId);
  }
  await store.batches.addLateNip03Events(late);
}
