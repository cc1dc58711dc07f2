/**
 * Calendars that answer, but not usefully (real Redis, dev calendars): garbage bytes, an
 * answer larger than we read, a redirect to another host. At submission each is recorded
 * failed with its reason and the batch carries on with the calendars that did answer; at
 * an upgrade poll the calendar keeps its place (still pending, the reason shown) and is
 * asked again, so a calendar that recovers still upgrades the proof.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { subjectDetail, type CalendarView } from '../../src/adapters/state/subject-view.js';
import type { DevCalendarMode } from '../../src/dev/calendar/index.js';
import { Issuer, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

describe('calendars that answer uselessly', () => {
  it('at submission: garbage, oversized and redirected answers are each recorded failed; the good calendar carries the batch to confirmed', { timeout: 60_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(4, headersFile);
    const [good, garbage, oversized, redirect] = calendars as [typeof calendars[0], typeof calendars[0], typeof calendars[0], typeof calendars[0]];
    garbage.setMode('garbage');
    oversized.setMode('oversized');
    redirect.setMode('redirect');
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 1 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      // (a subject waiting for its batch window is pending too, with batch.submitted false)
      const view = await waitFor('submitted and pending', async () => {
        const v = await subjectDetail(issuer.store, config, s.receipt_uuid);
        return v?.witnesses.ots?.batch?.submitted && v.witnesses.ots.status === 'pending' ? v : null;
      }, 30_000);
      const byUrl = new Map(view.witnesses.ots!.calendars.map((c) => [c.url, c]));
      expect(byUrl.get(good.url)!.status).toBe('pending');
      expect(byUrl.get(garbage.url)).toMatchObject({ status: 'failed', message: expect.stringMatching(/^unusable answer: /) });
      expect(byUrl.get(oversized.url)).toMatchObject({ status: 'failed', message: expect.stringMatching(/^too_large: .*exceeds 10000 bytes/) });
      expect(byUrl.get(redirect.url)).toMatchObject({ status: 'failed', message: expect.stringMatching(/^http_status: .*HTTP 307 .*redirect to another host \(calendar\.invalid\), not followed/) });
      await good.mine();
      await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    } finally {
      await daemon.stop();
      await issuer.close();
      await Promise.all(calendars.map((c) => c.close()));
    }
  });

  it('at upgrade polls: each useless answer keeps the calendar pending with the reason shown; once it recovers it upgrades the proof', { timeout: 90_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    const [good, flaky] = [calendars[0]!, calendars[1]!];
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2, upgradeInitialMs: 100, upgradeMaxMs: 200 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    const flakyState = async (): Promise<CalendarView | undefined> =>
      (await subjectDetail(issuer.store, config, s.receipt_uuid))?.witnesses.ots?.calendars.find((c) => c.url === flaky.url);
    const s = receiptFields();
    try {
      await issuer.enqueue(s, s.receipt_uuid);
      await waitFor('submitted to both', async () => {
        const ots = (await subjectDetail(issuer.store, config, s.receipt_uuid))?.witnesses.ots;
        return ots?.batch?.submitted && ots.status === 'pending' && ots.calendars.every((c) => c.status === 'pending');
      }, 30_000);
      const cases: Array<[DevCalendarMode, RegExp]> = [
        ['garbage', /\(at byte \d+\)$/],
        ['oversized', /^too_large: /],
        ['redirect', /^http_status: .*redirect to another host/],
        ['error500', /^http_status: .*HTTP 500/],
      ];
      for (const [mode, reason] of cases) {
        flaky.setMode(mode);
        const seen = await waitFor(`a poll of the ${mode} calendar`, async () => {
          const c = await flakyState();
          return c && reason.test(c.message) ? c : null;
        }, 20_000, 50);
        expect(seen.status, mode).toBe('pending');
      }
      flaky.setMode('ok');
      await good.mine();
      await flaky.mine();
      await waitFor('both calendars confirmed', async () => {
        const v = await subjectDetail(issuer.store, config, s.receipt_uuid);
        return v?.status === 'confirmed' && v.witnesses.ots!.calendars.every((c) => c.status === 'confirmed');
      }, 30_000);
    } finally {
      flaky.setMode('ok');
      await daemon.stop();
      await issuer.close();
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});
