/**
 * A host crash under `appendfsync everysec`: Redis loses its last writes while the daemon
 * keeps running. Simulated with a private redis-server: SIGKILL it, cut its append-only file
 * back to an earlier size, start it again on the same port. Batch ids must not go back with
 * it: a submission still in flight for a lost batch must never lend its calendar answers to a
 * new batch. And a batch whose stored answers commit to another root is a recorded error that
 * sends the batch back to the calendars, never a poll loop.
 */
import { statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { startDevCalendar, type DevCalendar } from '../../src/dev/calendar/index.js';
import { incrFile } from '../helpers/redis-aof.js';
import { Issuer, privateRedis, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function otsStatus(issuer: Issuer, key: string): Promise<string | undefined> {
  return (await issuer.store.subjects.getRecord(key))?.witnesses.ots?.status;
}

/** The id of the subject's OTS batch once that batch has been submitted (m calendars hold it). */
async function submittedBatch(issuer: Issuer, key: string): Promise<string> {
  return waitFor(`${key}'s batch submitted`, async () => {
    const id = (await issuer.store.subjects.getRecord(key))?.batches.ots?.id;
    return id && (await issuer.store.batches.batchField('ots', id, 'submitted')) === '1' && (await otsStatus(issuer, key)) === 'pending' ? id : null;
  }, 30_000, 50);
}

describe('a host crash that cuts the last writes off the append-only file', () => {
  it('a batch cut after the restart gets a new id: the lost batch\'s late calendar answers never land on it', { timeout: 120_000 }, async () => {
    let redis: EmbeddedRedis = await privateRedis(true);
    cleanups.push(() => redis.stop());
    const headersFile = join(tempDir('headers'), 'headers.json');
    // Slow rounds: a submission stays in flight long enough to crash Redis under it.
    const calendar: DevCalendar = await startDevCalendar({ headersOut: headersFile, aggregationMs: 3000, roundsFrom: 'first-digest' });
    cleanups.push(() => calendar.close());
    const config = testConfig({ calendars: [calendar], headersFile, overrides: { ots: { timeoutMs: 20_000, upgradeInitialMs: 300, upgradeMaxMs: 600 } } });
    const daemon: Daemon = await startDaemon(config, redis.url);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config, redis.url);
    cleanups.push(() => issuer.close());

    const a = receiptFields();
    await issuer.enqueue(a, a.receipt_uuid);
    const firstBatch = await submittedBatch(issuer, a.receipt_uuid);
    const aof = incrFile(redis.dir);
    const keptBytes = statSync(aof).size;

    // Writes that the crash will lose: b accepted, its batch cut, its submission in flight.
    const b = receiptFields();
    const before = calendar.stats().digestsReceived;
    await issuer.enqueue(b, b.receipt_uuid);
    const lostBatch = await waitFor('b in a batch', async () => (await issuer.store.subjects.getRecord(b.receipt_uuid))?.batches.ots?.id, 30_000, 20);
    expect(lostBatch).not.toBe(firstBatch);
    await waitFor('the lost batch submitted to the calendar', () => calendar.stats().digestsReceived > before, 10_000, 20);

    const { port, dir } = redis;
    redis.child.kill('SIGKILL');
    await new Promise((r) => redis.child.once('exit', r));
    truncateSync(aof, keptBytes);
    redis = await startEmbeddedRedis({ dir, port });
    expect(await issuer.store.subjects.getRecord(b.receipt_uuid)).toBeNull();

    // The in-flight submission answers after the restart and writes under the lost batch's id.
    await waitFor('the late answer written under the lost batch id', async () => (await issuer.store.batches.batchField('ots', lostBatch, 'submitted')) === '1', 30_000, 50);

    // The issuer sends b again, with a newcomer: a new batch.
    const c = receiptFields();
    await issuer.enqueueMany([b, c].map((s) => ({ data: s, key: s.receipt_uuid })));
    const newBatch = await submittedBatch(issuer, b.receipt_uuid);
    await submittedBatch(issuer, c.receipt_uuid);
    expect(newBatch).not.toBe(lostBatch);
    expect(newBatch).not.toBe(firstBatch);

    await calendar.mine();
    await waitFor('a, b and c confirmed', async () => {
      const st = await Promise.all([a, b, c].map((s) => otsStatus(issuer, s.receipt_uuid)));
      return st.every((s) => s === 'confirmed');
    }, 30_000, 100).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; new batch calendar: ${await issuer.store.batches.batchField('ots', newBatch, `cal:${calendar.url}`)}`);
    });
  });

  it('stored answers that commit to another root: the calendar is marked failed with that reason and the batch is submitted again', { timeout: 90_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const [calendar] = await startCalendars(1, headersFile);
    cleanups.push(() => calendar!.close());
    const config = testConfig({ calendars: [calendar!], headersFile, overrides: { ots: { upgradeInitialMs: 200, upgradeMaxMs: 400 } } });
    const daemon = await startDaemon(config);
    cleanups.push(() => daemon.stop());
    const issuer = new Issuer(config);
    cleanups.push(() => issuer.close());

    const [a, b] = [receiptFields(), receiptFields()];
    await issuer.enqueue(a, a.receipt_uuid);
    const batchA = await submittedBatch(issuer, a.receipt_uuid);
    await issuer.enqueue(b, b.receipt_uuid);
    const batchB = await submittedBatch(issuer, b.receipt_uuid);
    expect(batchB).not.toBe(batchA);
    // b's batch now holds a's calendar answers: what a reused id did.
    const calField = `cal:${calendar!.url}`;
    const fromA = await issuer.store.batches.batchFields('ots', batchA, ['ts', calField]);
    await issuer.store.batches.setBatchFields('ots', batchB, fromA);

    await calendar!.mine();
    await waitFor('a confirmed', async () => (await otsStatus(issuer, a.receipt_uuid)) === 'confirmed', 30_000);
    const failure = await waitFor('the mismatch recorded on b', async () => (await issuer.store.subjects.history(b.receipt_uuid)).find((h) => h.witness === 'ots' && /another root/.test(h.detail ?? '')), 30_000);
    expect(failure.to).toBe('partial');
    await submittedBatch(issuer, b.receipt_uuid);
    await calendar!.mine();
    await waitFor('b confirmed', async () => (await otsStatus(issuer, b.receipt_uuid)) === 'confirmed', 30_000);
    const cal = JSON.parse((await issuer.store.batches.batchField('ots', batchB, calField))!) as { status: string };
    expect(cal.status).toBe('confirmed');
  });
});
