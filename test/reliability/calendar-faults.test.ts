/**
 * Calendar faults against real Redis and two dev calendars (m = 2): one answers 500 for a
 * while, or hangs for a while. The batches stay `partial` with the failure in their history,
 * are submitted again (only to the calendar that failed) until it answers, then confirm
 * once mined. Nothing is lost.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DevCalendarMode } from '../../src/dev/calendar/index.js';
import { Issuer, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';
import { audit, report, statusCounts } from './audit.js';

async function calendarFault(name: string, n: number, mode: DevCalendarMode, detail: RegExp): Promise<void> {
  const headersFile = join(tempDir('headers'), 'headers.json');
  // the healthy calendar answers as a real one may: gzip, a little late, Not found for a second after each round
  const calendars = await startCalendars(2, headersFile, 100, [{ gzip: true, delayMs: 200, notFoundMs: 1000 }]);
  const [good, bad] = [calendars[0]!, calendars[1]!];
  const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2, timeoutMs: 2000, submitBackoffMs: 200, upgradeMaxMs: 800 } } });
  const daemon = await startDaemon(config);
  const issuer = new Issuer(config);
  try {
    bad.setMode(mode);
    const subjects = Array.from({ length: n }, () => receiptFields());
    const keys = subjects.map((s) => s.receipt_uuid);
    await issuer.enqueueMany(subjects.map((s) => ({ data: s, key: s.receipt_uuid })));
    await waitFor(`${n} partial on ots`, async () => (await issuer.witnessCount('ots', 'partial')) === n, 60_000, 200);
    // let it retry a few times while the calendar is still failing
    await new Promise((r) => setTimeout(r, 1500));
    expect(await issuer.witnessCount('ots', 'partial')).toBe(n);

    bad.setMode('ok');
    await waitFor(`${n} pending (both calendars hold them)`, async () => (await issuer.witnessCount('ots', 'pending')) === n, 60_000, 200);
    await good.mine();
    await bad.mine();
    await waitFor(`${n} confirmed`, async () => (await issuer.count('confirmed')) === n, 60_000, 200).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; statuses ${JSON.stringify(await statusCounts(issuer, keys))}`);
    });

    const batches = new Set<string>();
    const result = await audit(name, issuer, keys, [], {
      history: (_key, h, record) => {
        const ots = h.filter((e) => e.witness === 'ots' && e.from !== e.to);
        expect(ots.map((e) => e.to)).toEqual(['partial', 'pending', 'confirmed']);
        expect(ots[0]!.detail).toMatch(detail);
        expect(ots[0]!.detail).toContain(bad.url);
        batches.add(record.batches.ots!.id);
      },
    });
    // both calendars hold every batch root (the healthy one is normally asked once per batch)
    expect(good.stats().digestsReceived).toBeGreaterThanOrEqual(batches.size);
    expect(bad.stats().digestsReceived).toBeGreaterThanOrEqual(batches.size);
    report(result, { calendars: 2, m: 2, batches: batches.size, submittedGood: good.stats().digestsReceived, submittedBad: bad.stats().digestsReceived });
  } finally {
    await daemon.stop();
    await issuer.close();
    bad.setMode('ok');
    await Promise.all(calendars.map((c) => c.close()));
  }
}

describe('calendar faults', () => {
  it('a calendar answering 500, then recovering: partial with the status in the history, then pending, then confirmed', { timeout: 180_000 }, async () => {
    await calendarFault('calendar-500-then-recovers', 300, 'error500', /http_status/);
  });

  it('a calendar that hangs, then recovers: requests time out, the batch stays partial, then confirms', { timeout: 180_000 }, async () => {
    await calendarFault('calendar-hangs-then-recovers', 300, 'hang', /timeout/);
  });
});
