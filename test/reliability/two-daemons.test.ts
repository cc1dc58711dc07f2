/**
 * Two daemon instances on one Redis (same prefix and queues, each with its own signing key,
 * so an event signed twice for one subject would show as two events with its `x` tag).
 * Every subject is enqueued twice by two issuers. Both daemons take work; every subject
 * confirms once, with one event per relay, in envelope mode, in batch mode, and in auto mode
 * (each cut decided once, whichever daemon takes it: one event per own-event subject plus one
 * per batch-event cut); and with redis.shards 3, both daemons running every shard.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { NIP03_KIND } from '../../src/core/nostr/nip03.js';
import { Issuer, receiptFields, startCalendars, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, confirmAll, report, tapRelay } from './audit.js';

async function counter(daemon: Daemon, name: string): Promise<number> {
  const metric = await daemon.metrics.registry.getSingleMetric(name)?.get();
  return (metric?.values ?? []).reduce((n, v) => n + v.value, 0);
}

async function twoDaemons(name: string, n: number, mode: 'envelope' | 'batch' | 'auto', nostr: Record<string, unknown> = {}, redis: Record<string, unknown> = {}): Promise<void> {
  const relays = await startRelays(2);
  const taps = relays.map(tapRelay);
  const headersFile = join(tempDir('headers'), 'headers.json');
  const calendars = await startCalendars(1, headersFile);
  const config = testConfig({ relays, calendars, headersFile, overrides: { redis, nostr: { mode, batchWindowMs: 200, batchMaxSize: 100, ...nostr }, ots: { batchWindowMs: 200, batchMaxSize: 100 } } });
  const daemons = await Promise.all([startDaemon(config), startDaemon(config)]);
  const issuers = [new Issuer(config), new Issuer(config)];
  try {
    const subjects = Array.from({ length: n }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    const items = subjects.map((s) => ({ data: s, key: s.receipt_uuid }));
    // two issuers enqueue every subject, the second in reverse order, at the same time
    await Promise.all([issuers[0]!.enqueueMany(items), issuers[1]!.enqueueMany([...items].reverse())]);
    await confirmAll(issuers[0]!, keys, calendars, 120_000);

    const result = await audit(name, issuers[0]!, keys, taps, {
      history: (_key, h) => {
        expect(h.filter((e) => e.event === 'accepted')).toHaveLength(1);
        expect(h.filter((e) => e.to === 'confirmed' && e.witness === 'nostr')).toHaveLength(1);
        expect(h.filter((e) => e.to === 'confirmed' && e.witness === 'ots')).toHaveLength(1);
      },
    });
    const intake = await Promise.all(daemons.map((d) => counter(d, 'aer1_intake_jobs_total')));
    const publishes = await Promise.all(daemons.map((d) => counter(d, 'aer1_relay_publish_total')));
    // both instances took part
    expect(intake[0]).toBeGreaterThan(0);
    expect(intake[1]).toBeGreaterThan(0);
    if (mode === 'envelope') {
      for (const relay of relays) {
        expect(relay.events().filter((e) => e.kind !== NIP03_KIND)).toHaveLength(n);
        // NIP-03 (on by default): one attestation per envelope event, whichever daemon signed it
        await waitFor(`${n} attestations on ${relay.url}`, () => relay.events().filter((e) => e.kind === NIP03_KIND).length >= n, 60_000, 200);
        const targets = relay.events().filter((e) => e.kind === NIP03_KIND).map((e) => e.tags.find((t) => t[0] === 'e')?.[1]);
        expect(targets).toHaveLength(n);
        expect(new Set(targets).size).toBe(n);
      }
    }
    // batch mode: as many events per relay as batches (each batch published once)
    const batches = new Set((await issuers[0]!.state.getRecords(keys)).map((r) => r!.batches.nostr?.id));
    if (mode === 'batch') for (const relay of relays) expect(relay.eventCount()).toBe(batches.size); // no NIP-03 in batch mode
    // auto mode: an event per subject that got its own, one per cut decided batch; nothing twice
    const records = await issuers[0]!.state.getRecords(keys);
    const own = records.filter((r) => r!.nostrEventId).length;
    const batchEvents = new Set(records.filter((r) => !r!.nostrEventId).map((r) => r!.batches.nostr?.id));
    if (mode === 'auto') {
      expect(own + batchEvents.size).toBeLessThan(n);
      // NIP-03 attestations (kind 1040) of the subjects with their own event are not anchors
      for (const relay of relays) expect(relay.events().filter((e) => e.kind !== NIP03_KIND)).toHaveLength(own + batchEvents.size);
    }
    report(result, { mode, intakeA: intake[0]!, intakeB: intake[1]!, publishesA: publishes[0]!, publishesB: publishes[1]!, eventsPerRelay: relays[0]!.eventCount() });
  } finally {
    await Promise.all(daemons.map((d) => d.stop()));
    await Promise.all(issuers.map((i) => i.close()));
    await Promise.all([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
  }
}

describe('two daemon instances on one Redis', () => {
  it('envelope mode: every subject accepted once, one event per relay, both instances working', { timeout: 180_000 }, async () => {
    await twoDaemons('two-daemons-envelope', 600, 'envelope');
  });

  it('batch mode: each batch cut once and published once per relay', { timeout: 180_000 }, async () => {
    await twoDaemons('two-daemons-batch', 600, 'batch');
  });

  it('auto mode over its budget: each cut decided once, each subject in exactly one event per relay', { timeout: 180_000 }, async () => {
    // budget 10 events per second: a 600-subject burst is mostly batch events
    await twoDaemons('two-daemons-auto', 600, 'auto', { ratePerMinute: 600, autoHorizonMs: 1000 });
  });

  it('redis.shards 3, batch mode: both daemons run every shard; each shard\'s batches cut and published once', { timeout: 180_000 }, async () => {
    await twoDaemons('two-daemons-3-shards', 600, 'batch', {}, { shards: 3 });
  });
});
