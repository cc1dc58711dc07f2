/**
 * Every calendar down (SPEC §4.2: `pending` means at least m calendars hold the batch):
 * the OTS witness is `partial`, and each calendar's failure is recorded and shown where
 * people look: `GET /v1/anchors/{key}` (the JSON the status page's subject view reads) and
 * `aer1-anchor status KEY`. Back up: `pending`, then confirmed once mined.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/adapters/http/server.js';
import type { AnchorDetail } from '../../src/adapters/state/subject-view.js';
import { createLogger } from '../../src/daemon/logger.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, receiptFields, startCalendars, startDaemon, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const CLI = join(REPO_ROOT, 'dist/src/cli/aer1-anchor.js');

describe('every calendar down', () => {
  it('partial with each calendar\'s error in the HTTP API and the CLI; back up: pending, then confirmed', { timeout: 90_000 }, async () => {
    expect(existsSync(CLI), `${CLI} is missing: run npm run build`).toBe(true);
    const dir = tempDir('calendars-down');
    const headersFile = join(dir, 'headers.json');
    const calendars = await startCalendars(2, headersFile);
    const [failing, hanging] = [calendars[0]!, calendars[1]!];
    failing.setMode('error500');
    hanging.setMode('hang');
    const config = testConfig({
      calendars,
      headersFile,
      overrides: { ots: { minCalendars: 2, timeoutMs: 500, submitBackoffMs: 300, upgradeMaxMs: 600 }, http: { enabled: true, host: '127.0.0.1', port: 0 } },
    });
    const daemon = await startDaemon(config);
    const http = await startHttpServer({ daemon, log: createLogger('silent') });
    const issuer = new Issuer(config);
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify({ redis: { prefix: config.redis.prefix }, nostr: { enabled: false }, ots: { calendars: config.ots.calendars, minCalendars: 2 } }));
    const api = async (key: string): Promise<AnchorDetail> => {
      const res = await fetch(`${http.url}/v1/anchors/${encodeURIComponent(key)}`);
      expect(res.status).toBe(200);
      return (await res.json()) as AnchorDetail;
    };
    const status = (key: string) =>
      spawnSync(process.execPath, [CLI, 'status', key, '--config', configFile], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', REDIS_URL: SHARED_REDIS_URL }, timeout: 30_000 });
    try {
      const s = receiptFields();
      await issuer.enqueue(s, s.receipt_uuid);
      const view = await waitFor('partial with both failures recorded, as the API shows it', async () => {
        const v = await api(s.receipt_uuid);
        const ots = v.witnesses.ots;
        return ots?.status === 'partial' && ots.calendars.every((c) => c.status === 'failed') ? v : null;
      }, 30_000);
      const byUrl = new Map(view.witnesses.ots!.calendars.map((c) => [c.url, c]));
      expect(byUrl.get(failing.url)!.message).toMatch(/^http_status: .*HTTP 500/);
      expect(byUrl.get(hanging.url)!.message).toMatch(/^timeout: .*within 500 ms/);
      for (const c of byUrl.values()) expect(c.at).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(view.status).toBe('partial');
      const change = view.history.find((h) => h.witness === 'ots' && h.to === 'partial');
      expect(change?.detail).toContain(`${failing.url}: http_status`);
      expect(change?.detail).toContain(`${hanging.url}: timeout`);

      const out = status(s.receipt_uuid);
      expect(out.status, out.stderr).toBe(0);
      expect(out.stdout).toMatch(new RegExp(`^${s.receipt_uuid}: partial`));
      expect(out.stdout).toMatch(/ {2}ots: partial/);
      const lines = out.stdout.split('\n');
      const failingLine = lines.find((l) => l.trim().startsWith(`${failing.url}: failed`));
      const hangingLine = lines.find((l) => l.trim().startsWith(`${hanging.url}: failed`));
      expect(failingLine, out.stdout).toMatch(/\(http_status: .*HTTP 500/);
      expect(hangingLine, out.stdout).toMatch(/\(timeout: .*within 500 ms/);

      failing.setMode('ok');
      hanging.setMode('ok');
      await waitFor('pending once both hold the root', async () => (await api(s.receipt_uuid)).witnesses.ots?.status === 'pending', 30_000);
      const held = await api(s.receipt_uuid);
      expect(held.witnesses.ots!.calendars.map((c) => c.status)).toEqual(['pending', 'pending']);
      expect(status(s.receipt_uuid).stdout).toMatch(/ {2}ots: pending/);
      await failing.mine();
      await waitFor('confirmed after mining', async () => (await api(s.receipt_uuid)).status === 'confirmed', 30_000);
      const done = status(s.receipt_uuid);
      expect(done.stdout).toMatch(new RegExp(`^${s.receipt_uuid}: confirmed`));
      expect(done.stdout).toMatch(/ {2}ots: confirmed .*Bitcoin block \d+/);
    } finally {
      await http.close();
      await daemon.stop();
      await issuer.close();
      for (const c of calendars) c.setMode('ok');
      await Promise.all(calendars.map((c) => c.close()));
    }
  });
});
