/**
 * Nostr witness under faults: a relay down, a relay rate-limiting, and the daemon
 * SIGKILLed mid-run. Real Redis, real dev relays, the real daemon binary for the kill.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { writeKeyFile } from '../../src/adapters/nostr/key-file.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, spawnDaemon, startDaemon, startRelays, stopChild, tempDir, testConfig, waitFor } from '../helpers/harness.js';

describe('a relay that is down', () => {
  let relays: DevRelay[] = [];
  beforeAll(async () => {
    relays = await startRelays(3);
  });
  afterAll(async () => {
    await Promise.all(relays.map((r) => r.close()));
  });

  it('leaves subjects partial with the failure recorded, then confirms them when it returns', async () => {
    // quorum 3 (all): with the default majority the two others would confirm them
    const config = testConfig({ relays, overrides: { nostr: { quorum: 3, maxAttempts: 1000, backoffMaxMs: 500 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      await relays[2]!.stop();
      const subjects = Array.from({ length: 20 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor('20 partial', async () => (await issuer.count('partial')) === 20);
      const record = await issuer.store.subjects.getRecord(subjects[0]!.receipt_uuid);
      const reports = await issuer.store.events.relayReports(record!.nostrEventId!);
      const down = await waitFor('the down relay reported', () => reports.find((r) => r.url === relays[2]!.url) ?? issuer.store.events.relayReports(record!.nostrEventId!).then((rs) => rs.find((r) => r.url === relays[2]!.url)));
      expect(['error', 'timeout']).toContain(down.status);
      expect(down.final).toBe(false);
      expect(down.message.length).toBeGreaterThan(0);
      expect(record!.witnesses.nostr?.status).toBe('partial');

      await relays[2]!.restart();
      await waitFor('20 confirmed after the relay returned', async () => (await issuer.count('confirmed')) === 20, 30_000);
      for (const s of subjects) {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        expect(relays[2]!.events().filter((e) => e.id === r!.nostrEventId)).toHaveLength(1);
      }
      const history = await issuer.store.subjects.history(subjects[0]!.receipt_uuid);
      expect(history.filter((h) => h.event !== "witness" || h.from !== h.to).map((h) => h.to ?? h.event)).toEqual(["accepted", "partial", "confirmed"]);
    } finally {
      await daemon.stop();
      await issuer.close();
    }
  });
});

describe('a relay answering rate-limited', () => {
  let relays: DevRelay[] = [];
  beforeAll(async () => {
    relays = await startRelays(3);
  });
  afterAll(async () => {
    await Promise.all(relays.map((r) => r.close()));
  });

  it('pauses the relay, retries until accepted without spending attempts; no subject dropped', async () => {
    let refusals = 0;
    relays[0]!.beforeEvent = () => {
      if (refusals >= 30) return undefined;
      refusals++;
      return { accept: false, message: 'rate-limited: slow down there' };
    };
    // quorum 3: confirmed means the rate-limiting relay accepted too
    const config = testConfig({ relays, overrides: { nostr: { quorum: 3 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 15 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      await waitFor('15 confirmed', async () => (await issuer.count('confirmed')) === 15, 40_000);
      expect(refusals).toBe(30);
      const attempts: number[] = [];
      for (const s of subjects) {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        const report = (await issuer.store.events.relayReports(r!.nostrEventId!)).find((x) => x.url === relays[0]!.url);
        expect(report?.status).toBe('accepted');
        attempts.push(report!.attempts ?? 0);
        expect(relays[0]!.events().filter((e) => e.id === r!.nostrEventId)).toHaveLength(1);
      }
      // Thirty refusals spread over fifteen events, and none of them spent an attempt.
      expect(attempts.every((a) => a === 1)).toBe(true);
    } finally {
      await daemon.stop();
      await issuer.close();
    }
  });
});

const bin = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');

describe('the daemon SIGKILLed in the middle of 500 subjects', () => {
  let relays: DevRelay[] = [];
  beforeAll(async () => {
    relays = await startRelays(3);
  });
  afterAll(async () => {
    await Promise.all(relays.map((r) => r.close()));
  });

  it('needs the built daemon (npm test builds it)', () => {
    expect(existsSync(bin), `${bin} is missing: run npm run build`).toBe(true);
  });

  it('resumes after a restart: all 500 confirmed, exactly one event per relay each', { timeout: 240_000 }, async () => {
    const config = testConfig({ relays, overrides: { queue: { stalledIntervalMs: 1000 } } });
    const keyFile = join(tempDir('key'), 'nostr.key');
    writeKeyFile(keyFile);
    const issuer = new Issuer(config);
    try {
      const subjects = Array.from({ length: 500 }, () => receiptFields());
      await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
      let child = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
      await waitFor('some subjects accepted', async () => (await issuer.store.indexes.subjectCount()) >= 50, 30_000, 20);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const confirmedAtKill = await issuer.count('confirmed');
      expect(confirmedAtKill).toBeLessThan(500);

      child = spawnDaemon(config, SHARED_REDIS_URL, keyFile);
      try {
        await waitFor('500 confirmed', async () => (await issuer.count('confirmed')) === 500, 120_000, 250);
      } finally {
        await stopChild(child);
      }
      for (const s of subjects) {
        const r = await issuer.store.subjects.getRecord(s.receipt_uuid);
        expect(r?.status).toBe('confirmed');
        for (const relay of relays) expect(relay.events().filter((e) => e.id === r!.nostrEventId)).toHaveLength(1);
      }
      const per = relays.map((relay) => relay.eventCount());
      expect(per).toEqual([500, 500, 500]);
    } finally {
      await issuer.close();
    }
  });
});
