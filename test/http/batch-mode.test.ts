/**
 * `GET /v1/anchors/{key}` in Nostr batch mode: the event comes from the subject's batch,
 * with the batch link and every relay's report; the proof carries the inclusion path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptFields } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack({ relays: 2, overrides: { nostr: { mode: 'batch', batchWindowMs: 100 } } });
});

afterAll(async () => {
  await s?.close();
});

describe('batch mode', () => {
  it('shows the batch event, the batch link and each relay', async () => {
    const subjects = [receiptFields(), receiptFields(), receiptFields()];
    expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    const keys = subjects.map((x) => x.receipt_uuid);
    await s.confirm(keys);
    const eventIds = new Set<string>();
    for (const key of keys) {
      const a = (await (await s.get(`/v1/anchors/${key}`)).json()) as { witnesses: { nostr: Record<string, any> } };
      const n = a.witnesses.nostr;
      expect(n).toMatchObject({ status: 'confirmed', mode: 'batch', batch: { id: expect.any(String), index: expect.any(Number), size: expect.any(Number) } });
      expect(n.eventId).toMatch(/^[0-9a-f]{64}$/);
      eventIds.add(n.eventId);
      expect(n.relays.map((r: { url: string; status: string }) => [r.url, r.status])).toEqual(s.relays.map((r) => [r.url, 'accepted']));
      const proof = (await (await s.get(`/v1/anchors/${key}/proof`)).json()) as { nostr: { event: { id: string }; batch: { index: number } } };
      expect(proof.nostr.event.id).toBe(n.eventId);
      expect(proof.nostr.batch.index).toBe(n.batch.index);
    }
    // the relays hold exactly the batch events the API names
    const stored = new Set(s.relays[0]!.events().map((e) => e.id));
    for (const id of eventIds) expect(stored.has(id)).toBe(true);
  });
});
