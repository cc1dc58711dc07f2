/**
 * `GET /v1/anchors/{key}` and its proof in Nostr auto mode (the default): each subject shows
 * the kind of event it got. A lone subject gets its own event (mode envelope, no batch); a
 * burst beyond the relay's budget (ratePerMinute 12 over a 10 s horizon: 2 events) gets a
 * batch event (mode batch, with its batch link and inclusion path).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptFields } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  s = await startStack({ relays: 1, overrides: { nostr: { ratePerMinute: 12, autoHorizonMs: 10_000, batchWindowMs: 500 } } });
});

afterAll(async () => {
  await s?.close();
});

interface Detail { witnesses: { nostr: { mode: string | null; eventId: string | null; batch: { id: string } | null } } }
interface Proof { nostr: { mode?: string; event: { id: string } | null; batch?: { index: number } } }

async function modeOf(key: string): Promise<{ view: Detail['witnesses']['nostr']; proof: Proof['nostr'] }> {
  const view = ((await (await s.get(`/v1/anchors/${key}`)).json()) as Detail).witnesses.nostr;
  const proof = ((await (await s.get(`/v1/anchors/${key}/proof`)).json()) as Proof).nostr;
  return { view, proof };
}

describe('auto mode over HTTP', () => {
  it('a lone subject: its own event, mode envelope in the view and the proof', async () => {
    expect(s.config.nostr.mode).toBe('auto');
    const one = receiptFields();
    expect((await s.post('/v1/anchors', { subjects: [one] }, { auth: true })).status).toBe(202);
    await s.confirm([one.receipt_uuid]);
    const { view, proof } = await modeOf(one.receipt_uuid);
    expect(view).toMatchObject({ mode: 'envelope', batch: null });
    expect(proof).toMatchObject({ mode: 'envelope', event: { id: view.eventId } });
    expect(proof.batch).toBeUndefined();
  });

  it('a burst beyond the budget: one batch event, mode batch in the view and the proof', async () => {
    const subjects = Array.from({ length: 20 }, () => receiptFields());
    expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    const keys = subjects.map((x) => x.receipt_uuid);
    await s.confirm(keys);
    let batched = 0;
    for (const key of keys) {
      const { view, proof } = await modeOf(key);
      // a window tick may split the burst: a first cut within the budget gets its own events
      if (view.mode === 'envelope') {
        expect(proof).toMatchObject({ mode: 'envelope', event: { id: view.eventId } });
        continue;
      }
      batched++;
      expect(view).toMatchObject({ mode: 'batch', batch: { id: expect.any(String) } });
      expect(proof).toMatchObject({ mode: 'batch', event: { id: view.eventId }, batch: { index: expect.any(Number) } });
    }
    expect(batched).toBeGreaterThanOrEqual(keys.length - 2);
  });
});
