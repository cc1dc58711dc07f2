/**
 * Crash windows: the state a SIGKILL can leave between two writes, made on purpose, and
 * the daemon's recovery from it. Each case was first seen in the SIGKILL run
 * (daemon-kill.test.ts) and is pinned here deterministically.
 */
import { describe, expect, it } from 'vitest';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

describe('killed between a relay report and the witness move', () => {
  it('the next run of the relay job moves the witness the report already says', { timeout: 60_000 }, async () => {
    const [relay] = await startRelays(1);
    relay!.faults.silent = true;
    const config = testConfig({ relays: [relay!], overrides: { nostr: { publishTimeoutMs: 1000, backoffMs: 500, backoffMaxMs: 500, maxAttempts: 1000 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      const record = await waitFor('accepted', () => issuer.store.getRecord(s.receipt_uuid));
      const eventId = record!.nostrEventId!;
      await waitFor('a first failed attempt', async () => (await issuer.store.relayReports(eventId)).length > 0, 30_000);
      // What a crash right after SET_RELAY leaves: the relay's final report, the witness not moved.
      await issuer.store.setRelayReport(eventId, { url: relay!.url, status: 'accepted', message: '', at: new Date().toISOString(), attempts: 1, final: true });
      expect((await issuer.store.getRecord(s.receipt_uuid))?.witnesses.nostr?.status).toBe('pending');
      await waitFor('the witness confirmed from the recorded report', async () => (await issuer.store.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'confirmed', 30_000);
      const history = await issuer.store.history(s.receipt_uuid);
      expect(history.at(-1)).toMatchObject({ witness: 'nostr', from: 'pending', to: 'confirmed', detail: `${relay!.url}: accepted` });
    } finally {
      await daemon.stop();
      await issuer.close();
      await relay!.close();
    }
  });
});
