/**
 * The status page in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core): it loads, shows the counts /v1/stats gives, and a subject that becomes
 * confirmed shows up on the page without a reload; the look-up box shows its witnesses.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stats } from '../../src/adapters/http/stats.js';
import { receiptFields } from '../helpers/harness.js';
import { startHttpServer } from '../../src/adapters/http/server.js';
import { TOKEN, startStack, withHttp, type Stack } from './fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Set AER1_SCREENSHOT=/path.png to keep a picture of the page. */
const SCREENSHOT = process.env.AER1_SCREENSHOT;

let s: Stack;
let context: BrowserContext;
let page: Page;
let profile: string;
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the status page test`);
  s = await startStack();
  profile = mkdtempSync(join(tmpdir(), 'aer1-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 1000 } });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
});

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await s?.close();
});

async function stats(): Promise<Stats> {
  return (await (await s.get('/v1/stats')).json()) as Stats;
}

const count = (status: string) => page.locator(`[data-count="${status}"]`);

describe('the status page', () => {
  it('loads and shows the counts, then follows a subject to confirmed without a reload', async () => {
    // something to count before the page opens
    const early = [receiptFields(), receiptFields()];
    expect((await s.post('/v1/anchors', { subjects: early }, { auth: true })).status).toBe(202);
    await s.confirm(early.map((x) => x.receipt_uuid));

    await page.goto(`${s.http.url}/`);
    await expect.poll(() => count('total').textContent(), { timeout: 15_000 }).toBe('2');
    const before = await stats();
    for (const [status, n] of Object.entries(before.subjects.byStatus)) expect(await count(status).textContent(), status).toBe(String(n));
    await expect.poll(() => page.locator('#live').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    expect(await page.locator('#witnesses tbody tr').count()).toBe(2);
    expect(await page.locator('#latest tbody tr').count()).toBe(2);

    // a marker that a reload would wipe
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));

    const subject = receiptFields();
    const key = subject.receipt_uuid;
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await expect.poll(() => page.locator(`#events li[data-key="${key}"]`).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await s.confirm([key]);

    await expect.poll(() => page.locator(`#latest tbody tr[data-key="${key}"]`).count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => count('confirmed').textContent(), { timeout: 15_000 }).toBe('3');
    expect(await count('total').textContent()).toBe('3');
    expect(await page.locator(`#events li[data-key="${key}"] .badge`).first().textContent()).toBe('confirmed');
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42);

    // the look-up box shows the subject's witnesses, relays and calendars
    await page.fill('#lookup-key', key);
    await page.click('#lookup-form button');
    const result = page.locator('#lookup-result');
    await expect.poll(() => result.locator(`[data-key="${key}"]`).count(), { timeout: 15_000 }).toBe(1);
    expect(await result.locator('h3 .badge').textContent()).toBe('confirmed');
    expect(await result.locator('h4[data-witness="nostr"] .badge').textContent()).toBe('confirmed');
    expect(await result.locator('h4[data-witness="ots"] .badge').textContent()).toBe('confirmed');
    expect(await result.locator(`tr[data-relay="${s.relays[0]!.url}"] .badge`).textContent()).toBe('accepted');
    expect(await result.locator(`tr[data-calendar="${s.calendars[0]!.url}"] .badge`).textContent()).toBe('confirmed');

    expect(problems).toEqual([]);

    // (the browser logs the 404 of this look-up as a failed resource)
    await page.fill('#lookup-key', 'no-such-subject');
    await page.click('#lookup-form button');
    await expect.poll(() => result.locator('.notfound').textContent(), { timeout: 15_000 }).toContain('No subject with key no-such-subject');

    // show the found subject again for the picture
    await page.fill('#lookup-key', key);
    await page.click('#lookup-form button');
    await expect.poll(() => result.locator(`[data-key="${key}"]`).count(), { timeout: 15_000 }).toBe(1);
    if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(problems.filter((p) => !p.includes('404'))).toEqual([]);
  });

  it('works when reads need the token: from the URL fragment, or typed into the form', async () => {
    const strict = await startHttpServer({ daemon: withHttp(s.daemon, { readsRequireToken: true }), log: s.log });
    const other = await context.newPage();
    try {
      const total = String((await stats()).subjects.total);
      await other.goto(`${strict.url}/#token=${TOKEN}`);
      await expect.poll(() => other.locator('[data-count="total"]').textContent(), { timeout: 15_000 }).toBe(total);
      await expect.poll(() => other.locator('#live').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
      // the token left the address bar at once
      expect(other.url()).toBe(`${strict.url}/`);

      await other.evaluate('sessionStorage.clear()');
      await other.reload();
      await expect.poll(() => other.locator('#auth').isVisible(), { timeout: 15_000 }).toBe(true);
      expect(await other.locator('[data-count="total"]').textContent()).toBe('–');
      await other.fill('#auth-token', TOKEN);
      await other.click('#auth-form button');
      await expect.poll(() => other.locator('[data-count="total"]').textContent(), { timeout: 15_000 }).toBe(total);
      await expect.poll(() => other.locator('#live').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
      expect(await other.locator('#auth').isVisible()).toBe(false);
    } finally {
      await other.close();
      await strict.close();
    }
  });
});
