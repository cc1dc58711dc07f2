/**
 * The Nostr event ids an OTS batch commits to alongside its subjects (NIP-03, see
 * `src/core/ots/event-tree.ts`): the envelope event id of each subject that has one, in
 * batch order. Deterministic: a subject's event id is fixed when it is accepted.
 */
import type { AnchorStore } from '../state/anchor-store.js';

export async function batchEventIds(store: AnchorStore, batchId: string): Promise<{ keys: string[]; eventIds: string[] }> {
  const keys = await store.batchKeys('ots', batchId);
  const records = await store.getRecords(keys);
  const out: { keys: string[]; eventIds: string[] } = { keys: [], eventIds: [] };
  records.forEach((r, i) => {
    if (r?.nostrEventId) {
      out.keys.push(keys[i]!);
      out.eventIds.push(r.nostrEventId);
    }
  });
  return out;
}
