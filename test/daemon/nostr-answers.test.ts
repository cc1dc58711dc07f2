/**
 * Relay answers as relays mean them (issue 14, items 4 and 5): `OK false "duplicate:"` is an
 * acceptance; `rate-limited:` pauses the relay's whole queue without spending an attempt; a
 * quorum the remaining relays can no longer reach ends the witness, with the reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function setup(n: number): Promise<{ relays: DevRelay[] }> {
  const relays = await startRelays(n);
  cleanups.push(() => Promise.all(relays.map((r) => r.close())));
  return { relays };
}

async function run(relays: DevRelay[], overrides: Record<string, unknown>): Promise<Issuer> {
  const config = testConfig({ relays, overrides });
  const daemon = await startDaemon(config);
  cleanups.push(() => daemon.stop());
  const issuer = new Issuer(config);
  cleanups.push(() => issuer.close());
  return issuer;
}

describe('OK false "duplicate:"', () => {
  it('counts as accepted: the subject confirms on a relay that answers every event with it', { timeout: 30_000 }, async () => {
    const { relays } = await setup(1);
    let seen = 0;
    relays[0]!.beforeEvent = () => {
      seen++;
      return { accept: false, message: 'duplicate: have it' };
    };
    const issuer = await run(relays, {});
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'confirmed', 20_000);
    const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
    const [report] = await issuer.store.events.relayReports(record!.nostrEventId!);
    expect(report).toMatchObject({ status: 'accepted', message: 'duplicate: have it', final: true, attempts: 1 });
    expect(seen).toBe(1);
  });
});

describe('rate-limited:', () => {
  it('pauses the whole relay queue for the backoff, spends no attempt, and every event is accepted after', { timeout: 60_000 }, async () => {
    const { relays } = await setup(1);
    const K = 3;
    const BACKOFF = 800;
    const attempts: Array<{ at: number; refused: boolean }> = [];
    relays[0]!.beforeEvent = () => {
      const refused = attempts.filter((a) => a.refused).length < K;
      attempts.push({ at: Date.now(), refused });
      return refused ? { accept: false, message: 'rate-limited: slow down' } : undefined;
    };
    // One attempt per event: a rate-limited answer that spent it would give the relay up.
    const issuer = await run(relays, { nostr: { maxAttempts: 1, concurrency: 1, rateLimitBackoffMs: BACKOFF, backoffMaxMs: 5000 } });
    const subjects = Array.from({ length: 6 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('6 confirmed', async () => (await issuer.count('confirmed')) === 6, 40_000);

    expect(attempts.filter((a) => a.refused)).toHaveLength(K);
    expect(attempts).toHaveLength(6 + K);
    // After each refusal the relay saw nothing from us, for any event, until the pause was over.
    for (let i = 0; i < attempts.length - 1; i++) {
      if (attempts[i]!.refused) expect(attempts[i + 1]!.at - attempts[i]!.at).toBeGreaterThanOrEqual(BACKOFF - 50);
    }
    for (const s of subjects) {
      const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
      const [report] = await issuer.store.events.relayReports(r!.nostrEventId!);
      expect(report).toMatchObject({ status: 'accepted', final: true, attempts: 1 });
      expect(relays[0]!.events().filter((e) => e.id === r!.nostrEventId)).toHaveLength(1);
    }
  });
});

describe('a quorum that can finish', () => {
  const blocked = { accept: false as const, message: 'blocked: not on the list' };

  it('majority quorum (the default): a relay answering blocked: to everything, the other two confirm', { timeout: 30_000 }, async () => {
    const { relays } = await setup(3);
    relays[1]!.beforeEvent = () => blocked;
    const issuer = await run(relays, {});
    const subjects = Array.from({ length: 5 }, () => receiptFields());
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('5 confirmed', async () => (await issuer.count('confirmed')) === 5, 20_000);
    for (const s of subjects) {
      const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
      await waitFor('the blocked relay reported', async () => (await issuer.store.events.relayReports(r!.nostrEventId!)).some((x) => x.url === relays[1]!.url && x.final));
      const reports = await issuer.store.events.relayReports(r!.nostrEventId!);
      expect(reports.find((x) => x.url === relays[1]!.url)).toMatchObject({ status: 'rejected', prefix: 'blocked', final: true });
      expect(reports.filter((x) => x.url !== relays[1]!.url).map((x) => x.status)).toEqual(['accepted', 'accepted']);
    }
  });

  it('quorum 3 with a relay answering blocked: the witness ends failed, the reason naming that relay, and stays so', { timeout: 30_000 }, async () => {
    const { relays } = await setup(3);
    let blockedSeen = 0;
    relays[1]!.beforeEvent = () => {
      blockedSeen++;
      return blocked;
    };
    const issuer = await run(relays, { nostr: { quorum: 3 }, reconcile: { intervalMs: 300, reopenAfterMs: 1000 } });
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('nostr witness failed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status === 'failed', 20_000);
    const history = await issuer.store.subjects.history(s.receipt_uuid);
    const last = history.filter((h) => h.event === 'witness' && h.to === 'failed').at(-1) as { detail?: string } | undefined;
    expect(last?.detail).toContain(relays[1]!.url);
    expect(last?.detail).toMatch(/quorum 3 unreachable/);
    expect(last?.detail).toContain('blocked: not on the list');
    // The other two still hold the event; the reconciler does not reopen a final refusal.
    const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
    await waitFor('the other two accepted', async () => (await issuer.store.events.relayReports(record!.nostrEventId!)).filter((x) => x.status === 'accepted').length === 2);
    await new Promise((r) => setTimeout(r, 2500));
    expect(blockedSeen).toBe(1);
    expect((await issuer.store.subjects.getRecord(s.receipt_uuid))?.witnesses.nostr?.status).toBe('failed');
  });
});
