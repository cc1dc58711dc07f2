/**
 * Relay upkeep (docs/evidence.md): a real @nostr-relay dev relay that held the daemon's
 * anchor events drops half of them from its storage; the next upkeep pass finds them
 * missing and hands them back to that relay's outbox, the drain publishes the same signed
 * events again, the relay holds them again byte for byte, and the metrics count them. A
 * relay that cannot be asked leaves its events unknown, never lost. Real daemon (runDaemon,
 * HTTP on), real relays on loopback, real Redis.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDaemon, type RunningDaemon } from '../../src/daemon/main.js';
import { createLogger } from '../../src/daemon/logger.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { RelayOutbox } from '../../src/adapters/nostr/relay-outbox.js';
import { UpkeepState } from '../../src/adapters/nostr/upkeep-state.js';
import { displayUrl } from '../../src/adapters/config/display-url.js';
import { serializeEvent, verifySignedEvent } from '../../src/core/nostr/events.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { Issuer, SHARED_REDIS_URL, deletePrefix, receiptFields, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const SUBJECTS = 40;
const INTERVAL_MS = 4000;

let relays: DevRelay[] = [];
let running: RunningDaemon;
let issuer: Issuer;
let prefix: string;

/** A counter or gauge of /metrics for one relay (0 when the series is absent). */
async function metric(name: string, relay: DevRelay): Promise<number> {
  const text = await (await fetch(`${running.httpUrl}/metrics`)).text();
  const url = displayUrl(relay.url).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return Number(new RegExp(`^${name}\\{url="${url}"\\} ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? 0);
}

/** The anchor event ids of the subjects, from the state. */
async function eventIds(keys: readonly string[]): Promise<string[]> {
  const records = await issuer.store.getRecords(keys);
  return records.map((r) => r!.nostrEventId!);
}

beforeAll(async () => {
  relays = await startRelays(2);
  const keyFile = join(tempDir('key'), 'nostr.key');
  writeKeyFile(keyFile);
  const config = testConfig({
    relays,
    overrides: {
      redis: { url: SHARED_REDIS_URL },
      nostr: { keyFile, mode: 'envelope', quorum: 2 },
      relayUpkeep: { intervalMs: INTERVAL_MS, perPass: 1000, idsPerRequest: 7, timeoutMs: 2000 },
      http: { enabled: true, port: 0 },
    },
  });
  prefix = config.redis.prefix;
  running = await runDaemon(config, createLogger(process.env.AER1_TEST_LOG ?? 'silent'));
  issuer = new Issuer(config);
});

afterAll(async () => {
  await running?.stop();
  await deletePrefix(issuer.redis, `{${prefix}}`);
  await issuer?.close();
  await Promise.all(relays.map((r) => r.close()));
});

describe('relay upkeep', () => {
  const subjects = Array.from({ length: SUBJECTS }, () => receiptFields());
  const keys = subjects.map((s) => s.receipt_uuid);

  it('re-publishes, within one upkeep period, the half of its events a relay dropped from storage: the same signed events, counted in the metrics', async () => {
    const [dropper, keeper] = relays as [DevRelay, DevRelay];
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor(`${SUBJECTS} confirmed`, async () => (await issuer.count('confirmed')) === SUBJECTS, 60_000);
    const ids = await eventIds(keys);
    await waitFor('both relays hold every event', () => ids.every((id) => dropper.events().some((e) => e.id === id) && keeper.events().some((e) => e.id === id)));
    // a pass checked them all while the relays held them: nothing missing
    await waitFor('a pass checked every event on both relays', async () => (await metric('aer1_relay_upkeep_checked_total', dropper)) >= SUBJECTS && (await metric('aer1_relay_upkeep_checked_total', keeper)) >= SUBJECTS, 30_000);
    expect(await metric('aer1_relay_upkeep_missing_total', dropper)).toBe(0);

    // the relay drops half of its stored events (from its storage, telling no one)
    const dropped = ids.filter((_, i) => i % 2 === 0);
    expect(dropper.loseEvents(dropped)).toBe(SUBJECTS / 2);
    expect(dropper.eventCount()).toBe(SUBJECTS / 2);

    await waitFor('the relay holds every event again', () => ids.every((id) => dropper.events().some((e) => e.id === id)), 30_000);
    // byte for byte the events the daemon signed and stored
    for (const id of dropped) {
      const held = dropper.events().find((e) => e.id === id)!;
      const stored = await issuer.store.eventJson(id);
      expect(serializeEvent(held)).toBe(stored);
      expect(verifySignedEvent(serializeEvent(held)).ok).toBe(true);
    }
    await waitFor('the re-publishes counted', async () => (await metric('aer1_relay_upkeep_republished_total', dropper)) === SUBJECTS / 2);
    // one pass found them missing (a second before they were back would have counted them again): within one period
    expect(await metric('aer1_relay_upkeep_missing_total', dropper)).toBe(SUBJECTS / 2);
    expect(await metric('aer1_relay_upkeep_missing_total', keeper)).toBe(0);
    expect(await metric('aer1_relay_upkeep_republished_total', keeper)).toBe(0);
    // the subjects never left confirmed, and the relay's acceptance stands
    expect(await issuer.count('confirmed')).toBe(SUBJECTS);
    const reports = await issuer.store.relayReports(dropped[0]!);
    expect(reports.find((r) => r.url === dropper.url)?.status).toBe('accepted');
    // nothing left waiting to be sent again
    expect((await new RelayOutbox(issuer.store, [dropper.url]).sizes()).get(dropper.url)).toBe(0);

    // how far back the relay holds events: on /metrics and in /v1/stats (the status page)
    const oldest = Math.min(...dropper.events().map((e) => e.created_at));
    await waitFor('oldest held reported', async () => (await metric('aer1_relay_upkeep_oldest_held_timestamp_seconds', dropper)) > 0);
    expect(await metric('aer1_relay_upkeep_oldest_held_timestamp_seconds', dropper)).toBeLessThanOrEqual(oldest + 1);
    const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
    const shown = stats.health.find((h) => h.kind === 'relay' && h.url === displayUrl(dropper.url))!;
    expect(shown.upkeep).not.toBeNull();
    expect(shown.upkeep!.oldestHeldAt).not.toBeNull();
    expect(Date.parse(shown.upkeep!.oldestHeldAt!) / 1000).toBeLessThanOrEqual(oldest + 1);
    expect(stats.health.filter((h) => h.kind === 'calendar').every((h) => h.upkeep === null)).toBe(true);
  }, 120_000);

  it('a relay that cannot be asked leaves its events unknown, never lost: nothing is sent to it again', async () => {
    const keeper = relays[1]!;
    const before = await metric('aer1_relay_upkeep_unknown_total', keeper);
    await keeper.stop();
    try {
      await waitFor('a pass could not ask the stopped relay', async () => (await metric('aer1_relay_upkeep_unknown_total', keeper)) >= before + SUBJECTS, 30_000);
      expect(await metric('aer1_relay_upkeep_missing_total', keeper)).toBe(0);
      expect((await new RelayOutbox(issuer.store, [keeper.url]).sizes()).get(keeper.url)).toBe(0);
      const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
      const shown = stats.health.find((h) => h.kind === 'relay' && h.url === displayUrl(keeper.url))!;
      expect(shown.upkeep!.error).toMatch(/./);
    } finally {
      await keeper.restart();
    }
    expect(await new UpkeepState(issuer.store).size()).toBe(SUBJECTS);
  }, 60_000);
});
