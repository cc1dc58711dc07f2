/**
 * Retention with webhooks as the place proofs go (no archive): each confirmed subject's
 * proof is sent to every hook as a `proof` change, and the subject leaves Redis only once
 * every hook answered 2xx for it. A hook that keeps failing keeps the subjects in Redis;
 * when it comes back they are removed. Real Redis, dev relay, dev calendar, loopback receivers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhooks } from '../../src/adapters/webhooks/webhooks.js';
import type { WebhookDeliverer } from '../../src/adapters/webhooks/deliverer.js';
import { hookId } from '../../src/adapters/webhooks/delivery-log.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { createLogger } from '../../src/daemon/logger.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { DevCalendar } from '../../src/dev/calendar/index.js';
import { cliVerify } from '../helpers/browser.js';
import { Issuer, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { startReceiver, type Receiver } from './receiver.js';

const N = 4;
const SECRET = 'retention-hook-secret-0123456789';

describe('retention hands proofs to every webhook before removing subjects', () => {
  let relays: DevRelay[] = [];
  let calendars: DevCalendar[] = [];
  let headersFile = '';
  let a: Receiver;
  let b: Receiver;
  let daemon: Daemon;
  let hooks: WebhookDeliverer;
  let issuer: Issuer;
  const key = generateSecretKey();

  beforeAll(async () => {
    headersFile = join(tempDir('headers'), 'headers.json');
    relays = await startRelays(1);
    calendars = await startCalendars(1, headersFile, 50);
    a = await startReceiver();
    // b refuses everything until the test lets it through
    b = await startReceiver(() => 500);
    const config = testConfig({
      relays,
      calendars,
      headersFile,
      overrides: { retention: { confirmedAfterMs: 1, intervalMs: 200 }, webhooks: [{ url: a.url, secret: SECRET }, { url: b.url, secret: SECRET }] },
    });
    daemon = await startDaemon(config, undefined, key);
    hooks = await startWebhooks({ daemon, log: createLogger('silent'), tuning: { backoffMs: 50, backoffMaxMs: 200, blockMs: 200 } });
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await hooks?.stop();
    await daemon?.stop();
    await issuer?.close();
    await Promise.all([a?.close(), b?.close(), ...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  });

  it('keeps subjects while one hook has not acknowledged their proofs, removes them once it has; the proofs verify', { timeout: 120_000 }, async () => {
    const subjects = Array.from({ length: N }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor(`${N} subjects confirmed`, async () => {
      for (const cal of calendars) if (cal.pendingCount() > 0) await cal.mine();
      const records = await issuer.store.subjects.getRecords(keys);
      return records.every((r) => r?.status === 'confirmed');
    }, 60_000, 100);
    const exporter = new ProofExporter(issuer.store, { relays: daemon.config.nostr.relays, calendars: daemon.config.ots.calendars });
    const expected = new Map<string, string>();
    for (const k of keys) expected.set(k, JSON.stringify(await exporter.export(k)));

    const proofsAt = (r: Receiver) => r.delivered().map((q) => JSON.parse(q.body) as { type: string; key: string; digest: string; proof: unknown }).filter((e) => e.type === 'proof');
    await waitFor('hook a got every proof', () => keys.every((k) => proofsAt(a).some((e) => e.key === k)), 30_000, 100);
    // b has acknowledged nothing: every subject is still in Redis, several passes later
    const passesBefore = b.requests.length;
    await waitFor('b refused several more attempts meanwhile', () => b.requests.length > passesBefore + 2, 30_000, 50);
    expect(await issuer.count('confirmed')).toBe(N);
    expect((await issuer.store.subjects.getRecords(keys)).every((r) => r?.status === 'confirmed')).toBe(true);
    for (const e of proofsAt(a)) if (expected.has(e.key)) expect(JSON.stringify(e.proof)).toBe(expected.get(e.key));

    b.policy = () => 204;
    await waitFor('every subject removed', async () => (await issuer.store.subjects.getRecords(keys)).every((r) => r === null), 60_000, 100);
    expect(await issuer.count('confirmed')).toBe(0);
    for (const r of [a, b]) for (const k of keys) expect(proofsAt(r).some((e) => e.key === k), `${k} at ${r.url}`).toBe(true);
    // the notes of the handover are cleared with the subjects (right after them: forget, then clear)
    const base = daemon.store.keys.base;
    const notes = async (): Promise<number[]> => Promise.all([`${base}:ret:offered`, ...[a, b].map((h) => `${base}:ret:ack:${hookId(h.url)}`)].map((k) => issuer.redis.hlen(k)));
    await waitFor('the handover notes cleared', async () => (await notes()).every((n) => n === 0), 10_000, 20);
    expect(await notes()).toEqual([0, 0, 0]);
    // what b received verifies offline on its own
    const dir = tempDir('proofs');
    for (const e of proofsAt(b).filter((x) => keys.includes(x.key)).slice(0, 2)) {
      const file = join(dir, `${e.key}.json`);
      writeFileSync(file, JSON.stringify(e.proof));
      const cli = await cliVerify([file, '--headers', headersFile, '--network', 'regtest', '--expected-pubkey', key.publicKey, '--require-confirmed']);
      expect(cli.verdict, cli.stdout + cli.stderr).toMatch(/^VERDICT: PASS/);
    }
  });
});
