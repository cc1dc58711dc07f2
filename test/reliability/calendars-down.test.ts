/**
 * Every calendar down (SPEC §4.2: `pending` means at least m calendars hold the batch):
 * the OTS witness is `partial`, and each calendar's failure is recorded and shown in the
 * subject's view (what `aer1-anchor status` and the status page print). Back up: `pending`,
 * then confirmed once mined.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { subjectDetail } from '../../src/adapters/state/subject-view.js';
import { Issuer, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

describe('every calendar down', () => {
  it('partial with each calendar\'s error shown; back up: pending, then confirmed', { timeout: 90_000 }, async () => {
    const headersFile = join(tempDir('headers'), 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    const [failing, hanging] = [calendars[0]!, calendars[1]!];
    failing.setMode('error500');
    hanging.setMode('hang');
    const config = testConfig({ calendars, headersFile, overrides: { ots: { minCalendars: 2, timeoutMs: 500, submitBackoffMs: 300, upgradeMaxMs: 600 } } });
    const daemon = await startDaemon(config);
    const issuer = new Issuer(config);
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      const view = await waitFor('partial with both failures recorded', async () => {
        const v = await subjectDetail(issuer.store, config, s.receipt_uuid);
        const ots = v?.witnesses.ots;
        return ots?.status === 'partial' && ots.calendars.every((c) => c.status === 'failed') ? v : null;
      }, 30_000);
      const byUrl = new Map(view.witnesses.ots!.calendars.map((c) => [c.url, c]));
      expect(byUrl.get(failing.url)!.message).toMatch(/^http_status: .*HTTP 500/);
      expect(byUrl.get(hanging.url)!.message).toMatch(/^timeout: /);
      expect(view.status).toBe('partial');
      const change = view.history.find((h) => h.witness === 'ots' && h.to === 'partial');
      expect(change?.detail).toContain(`${failing.url}: http_status`);
      expect(change?.detail).toContain(`${hanging.url}: timeout`);

      failing.setMode('ok');
      hanging.setMode('ok');
      await waitFor('pending once both hold the root', async () => (await issuer.store.getRecord(s.receipt_uuid))?.witnesses.ots?.status === 'pending', 30_000);
      await failing.mine();
      await waitFor('confirmed after mining', async () => (await issuer.store.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    } finally {
      await daemon.stop();
      await issuer.close();
      for (const c of calendars) c.setMode('ok');
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});
