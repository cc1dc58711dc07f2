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
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { Issuer, SHARED_REDIS_URL, deletePrefix, receiptFields, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const SUBJECTS = 40;
/** One upkeep period: short, so a test sees passes; long beside the drain's re-publish of 20 events on loopback. */
const INTERVAL_MS = 4000;

let relays: DevRelay[] = [];
let running: RunningDaemon;
let issuer: Issuer;
const cleanup: Array<() => Promise<unknown>> = [];

/** The daemon on `on` (envelope mode, HTTP on, upkeep every INTERVAL_MS), and an issuer on its state. */
async function startUpkeepDaemon(on: DevRelay[], nostr: Record<string, unknown> = {}): Promise<{ running: RunningDaemon; issuer: Issuer }> {
  const keyFile = join(tempDir('key'), 'nostr.key');
  writeKeyFile(keyFile);
  const config = testConfig({
    relays: on,
    overrides: {
      redis: { url: SHARED_REDIS_URL },
      nostr: { keyFile, mode: 'envelope', quorum: on.length, ...nostr },
      relayUpkeep: { intervalMs: INTERVAL_MS, perPass: 1000, idsPerRequest: 7, timeoutMs: 2000 },
      http: { enabled: true, port: 0 },
    },
  });
  const daemon = await runDaemon(config, createLogger(process.env.AER1_TEST_LOG ?? 'silent'));
  const reader = new Issuer(config);
  cleanup.push(() => daemon.stop(), () => deletePrefix(reader.redis, `{${config.redis.prefix}}`), () => reader.close());
  return { running: daemon, issuer: reader };
}

/** A counter or gauge of /metrics for one relay (0 when the series is absent). */
async function metric(name: string, relay: DevRelay, on: RunningDaemon = running): Promise<number> {
  const text = await (await fetch(`${on.httpUrl}/metrics`)).text();
  const url = displayUrl(relay.url).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return Number(new RegExp(`^${name}\\{url="${url}"\\} ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? 0);
}

/** The anchor event ids of the subjects, from the state. */
async function eventIds(keys: readonly string[], from: Issuer = issuer): Promise<string[]> {
  const records = await from.store.subjects.getRecords(keys);
  return records.map((r) => r!.nostrEventId!);
}

beforeAll(async () => {
  relays = await startRelays(2);
  cleanup.push(() => Promise.all(relays.map((r) => r.close())));
  ({ running, issuer } = await startUpkeepDaemon(relays));
});

afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => undefined);
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
      const stored = await issuer.store.events.eventJson(id);
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
    const reports = await issuer.store.events.relayReports(dropped[0]!);
    expect(reports.find((r) => r.url === dropper.url)?.status).toBe('accepted');
    // nothing left waiting to be sent again
    expect((await new RelayOutbox(issuer.store.events, [dropper.url]).sizes()).get(dropper.url)).toBe(0);

    // how far back the relay holds events: on /metrics and in /v1/stats (the status page)
    const oldest = Math.min(...dropper.events().map((e) => e.created_at));
    await waitFor('oldest held reported', async () => (await metric('aer1_relay_upkeep_oldest_held_timestamp_seconds', dropper)) > 0);
    expect(await metric('aer1_relay_upkeep_oldest_held_timestamp_seconds', dropper)).toBeLessThanOrEqual(oldest + 1);
    const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
    const shown = stats.health.find((h) => h.kind === 'relay' && h.url === displayUrl(dropper.url))!;
    expect(shown.upkeep).not.toBeNull();
    expect(shown.upkeep!.oldestHeldAt).not.toBeNull();
    expect(shown.upkeep!.republished).toBe(SUBJECTS / 2);
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
      expect((await new RelayOutbox(issuer.store.events, [keeper.url]).sizes()).get(keeper.url)).toBe(0);
      const stats = (await (await fetch(`${running.httpUrl}/v1/stats`)).json()) as Stats;
      const shown = stats.health.find((h) => h.kind === 'relay' && h.url === displayUrl(keeper.url))!;
      expect(shown.upkeep!.error).toMatch(/./);
    } finally {
      await keeper.restart();
    }
    expect(await new UpkeepState(issuer.store).size()).toBe(SUBJECTS);
  }, 60_000);
});

describe('relay upkeep on a relay that asks for proof of work', () => {
  it('sends the relay the same mined copy it was sent before, not a new one', async () => {
    const pow = await startDevRelay({ profile: 'pow', profileOptions: { powDifficulty: 8 } });
    cleanup.push(() => pow.close());
    const own = await startUpkeepDaemon([pow]);
    const subjects = Array.from({ length: 6 }, () => receiptFields());
    await own.issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor('6 confirmed', async () => (await own.issuer.count('confirmed')) === 6, 60_000);
    const ids = await eventIds(subjects.map((s) => s.receipt_uuid), own.issuer);
    const copies = await Promise.all(ids.map(async (id) => (await own.issuer.store.events.relayCopy(id, pow.url))!));
    const copyIds = copies.map((c) => (JSON.parse(c) as { id: string }).id);
    expect(copyIds.every((c, i) => c !== ids[i])).toBe(true);
    await waitFor('a pass checked the copies', async () => (await metric('aer1_relay_upkeep_checked_total', pow, own.running)) >= 6, 30_000);
    expect(await metric('aer1_relay_upkeep_missing_total', pow, own.running)).toBe(0);

    // the relay drops half of its stored events (the mined copies it was sent)
    expect(pow.loseEvents(copyIds.slice(0, 3))).toBe(3);
    await waitFor('the relay holds every copy again', () => copyIds.every((id) => pow.events().some((e) => e.id === id)), 30_000);
    for (const [i, id] of copyIds.slice(0, 3).entries()) expect(serializeEvent(pow.events().find((e) => e.id === id)!)).toBe(copies[i]);
    await waitFor('the re-publishes counted', async () => (await metric('aer1_relay_upkeep_republished_total', pow, own.running)) === 3);
    expect(await metric('aer1_relay_upkeep_missing_total', pow, own.running)).toBe(3);
    // no new copy was mined or stored
    expect(await Promise.all(ids.map((id) => own.issuer.store.events.relayCopy(id, pow.url)))).toEqual(copies);
  }, 120_000);
});
