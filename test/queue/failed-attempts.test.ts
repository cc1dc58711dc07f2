/**
 * A failed job attempt stores bounded error text (issue 18): BullMQ keeps each job's
 * `failedReason` and appends every attempt's stack to its `stacktrace`, so a job retried
 * for hours (a relay refusing, a calendar down, Redis full) grew the job hash without bound
 * and made a full Redis fuller (before: 22,024 characters of reason and 111,526 of stacks
 * after 5 attempts of a relay publish, when those were BullMQ jobs). Relay publishes keep
 * their reason in the event's relay report instead, bounded the same way. Real Redis, a real
 * dev relay; a calendar nobody listens on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { MAX_ERROR_TEXT } from '../../src/adapters/bullmq/failed-attempts.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';

const ATTEMPTS = 5;

describe('failed job attempts', () => {
  let relay: DevRelay;
  let daemon: Daemon;
  let issuer: Issuer;

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    // a retryable refusal with a reason far longer than anything worth keeping per attempt
    // error: is retryable and spends attempts (rate-limited: pauses the queue without spending one)
    relay.beforeEvent = () => ({ accept: false, message: `error: ${'slow down; '.repeat(2000)}` });
    const config = testConfig({
      relays: [relay],
      overrides: {
        nostr: { maxAttempts: 1000, backoffMs: 20, backoffMaxMs: 50 },
        ots: { enabled: true, calendars: ['http://127.0.0.1:1'], submitBackoffMs: 20, upgradeInitialMs: 50, upgradeMaxMs: 50, batchWindowMs: 50 },
      },
    });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await relay?.close();
  });

  /** failedReason and stacktrace of a job after at least ATTEMPTS failed attempts, as stored in its hash. */
  async function storedFailure(queueName: string, jobId: () => Promise<string | null>): Promise<{ reason: string; stacktrace: string; attempts: number }> {
    const queue = daemon.queues.find((q) => q.name === queueName)!;
    return waitFor(`${ATTEMPTS} failed attempts on ${queueName}`, async () => {
      const id = await jobId();
      if (id === null) return null;
      const [attempts, reason, stacktrace] = await issuer.redis.hmget(queue.toKey(id), 'atm', 'failedReason', 'stacktrace');
      return Number(attempts ?? 0) >= ATTEMPTS ? { reason: reason ?? '', stacktrace: stacktrace ?? '', attempts: Number(attempts) } : null;
    }, 60_000, 50);
  }

  it('a relay publish refused over and over keeps one report of at most MAX_ERROR_TEXT characters of reason, however many attempts', async () => {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const report = await waitFor(`${ATTEMPTS} failed attempts on the relay`, async () => {
      const id = (await issuer.store.subjects.getRecord(s.receipt_uuid))?.nostrEventId;
      const r = id ? (await issuer.store.events.relayReports(id)).find((x) => x.url === relay.url) : undefined;
      return r && (r.attempts ?? 0) >= ATTEMPTS ? { r, id: id! } : null;
    }, 60_000, 50);
    expect(report.r).toMatchObject({ status: 'rejected', final: false, prefix: 'error' });
    expect(report.r.message).toMatch(/^error: slow down;/);
    expect(report.r.message.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    // the attempts overwrite one report: the event hash holds one bounded reason, not one per attempt
    const [n] = await issuer.store.registry.relayNumbers([relay.url]);
    expect(await issuer.redis.hstrlen(issuer.store.keys.event(report.id), `r:${n}`)).toBeLessThanOrEqual(MAX_ERROR_TEXT + 300);
  });

  it('an OTS submission with no calendar answering keeps the same bound', async () => {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    const otsQueue = daemon.ots!.allQueues[0]!.name;
    const stored = await storedFailure(otsQueue, async () => {
      const batch = (await issuer.store.subjects.getRecord(s.receipt_uuid))?.batches.ots?.id;
      return batch === undefined ? null : `ots-submit-${batch}`;
    });
    expect(stored.reason.length).toBeGreaterThan(0);
    expect(stored.reason.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    expect(JSON.parse(stored.stacktrace)).toEqual([]);
  });
});
