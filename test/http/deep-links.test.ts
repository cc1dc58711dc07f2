/**
 * Links into the pages, in headless Chromium: the status page's list tab and filters are in
 * its address (`?status=&witness=&limit=`), so a copied address opens the same list; and
 * "verify it in the browser" from a subject opens /verify with that subject's proof and the
 * daemon's signer already in place, showing the verdict the CLI gives on the same proof —
 * nothing to download or paste.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiptFields, tempDir } from '../helpers/harness.js';
import { cliVerify, openBrowser, type Browser } from '../helpers/browser.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;
let b: Browser;
let page: Page;
let pendingKey: string;
let confirmedKeys: string[];

beforeAll(async () => {
  s = await startStack();
  b = await openBrowser();
  page = b.page;
  const confirmed = [receiptFields(), receiptFields()];
  const pending = receiptFields();
  expect((await s.post('/v1/anchors', { subjects: confirmed }, { auth: true })).status).toBe(202);
  confirmedKeys = confirmed.map((x) => x.receipt_uuid);
  await s.confirm(confirmedKeys);
  // not mined for: it stays short of confirmed
  pendingKey = pending.receipt_uuid;
  expect((await s.post('/v1/anchors', pending, { auth: true })).status).toBe(202);
}, 120_000);

afterAll(async () => {
  await b?.close();
  await s?.close();
});

const listKeys = async (p: Page): Promise<string[]> => (await p.locator('#list tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key') ?? ''))).sort();
const selectedTab = (p: Page) => p.locator('#status-tabs [aria-selected="true"]').getAttribute('data-status');

describe('deep links', () => {
  it('the list tab and filters are in the address, and a copied address opens the same list', async () => {
    await page.goto(`${s.http.url}/`);
    await expect.poll(() => page.locator('[data-count="total"]').textContent(), { timeout: 15_000 }).toBe('3');
    await page.click('#status-tabs [data-status="confirmed"]');
    await page.selectOption('#list-witness', 'ots');
    await page.selectOption('#list-limit', '50');
    await expect.poll(() => listKeys(page), { timeout: 15_000 }).toEqual([...confirmedKeys].sort());
    const address = new URL(page.url());
    expect(Object.fromEntries(address.searchParams)).toEqual({ status: 'confirmed', witness: 'ots', limit: '50' });

    const other = await b.context.newPage();
    try {
      await other.goto(address.href);
      await expect.poll(() => listKeys(other), { timeout: 15_000 }).toEqual([...confirmedKeys].sort());
      expect(await selectedTab(other)).toBe('confirmed');
      expect(await other.locator('#list-witness').inputValue()).toBe('ots');
      expect(await other.locator('#list-limit').inputValue()).toBe('50');
      // with a subject open as well: both kept
      await other.goto(`${s.http.url}/?status=all#/subject/${encodeURIComponent(pendingKey)}`);
      await expect.poll(() => other.locator(`#lookup-result [data-key="${pendingKey}"]`).count(), { timeout: 15_000 }).toBe(1);
      await expect.poll(() => selectedTab(other), { timeout: 15_000 }).toBe('');
      await expect.poll(() => listKeys(other), { timeout: 15_000 }).toEqual([...confirmedKeys, pendingKey].sort());
      // an address naming no tab or filter the page offers opens the default list and drops them from the address
      await other.goto(`${s.http.url}/?status=bogus&witness=%3Cb%3E&limit=999999`);
      await expect.poll(() => selectedTab(other), { timeout: 15_000 }).toMatch(/^(pending|partial)$/);
      expect(await other.locator('#list-witness').inputValue()).toBe('');
      expect(await other.locator('#list-limit').inputValue()).toBe('20');
      expect(new URL(other.url()).search).toBe('');
    } finally {
      await other.close();
    }
    expect(b.problems).toEqual([]);
  });

  it('"verify it in the browser" opens /verify with the proof and signer in place, and the verdict is the CLI\'s', async () => {
    const key = confirmedKeys[0]!;
    const info = (await (await s.get('/v1/info')).json()) as { nostr: { pubkey: string }; ots: { network: string } };
    await page.goto(`${s.http.url}/#/subject/${encodeURIComponent(key)}`);
    const link = page.locator('#lookup-result a', { hasText: 'verify it in the browser' });
    await expect.poll(() => link.count(), { timeout: 15_000 }).toBe(1);
    await link.click();
    await page.waitForURL(/\/verify\?/, { timeout: 15_000 });
    await expect.poll(() => page.locator('#verdict').getAttribute('data-verdict'), { timeout: 15_000 }).toMatch(/^(PASS|FAIL)$/);
    expect(await page.locator('#pubkeys').inputValue()).toBe(info.nostr.pubkey);
    expect(await page.locator('#network').inputValue()).toBe(info.ots.network);
    expect(await page.locator('#files tbody tr').count()).toBe(1);
    expect(await page.locator('#files tbody tr').getAttribute('data-file')).toBe(`${key}.proof.json`);

    const dir = tempDir('aer1-deep-link');
    const proofFile = join(dir, `${key}.proof.json`);
    writeFileSync(proofFile, await (await s.get(`/v1/anchors/${encodeURIComponent(key)}/proof`)).text());
    const cli = await cliVerify([proofFile, '--expected-pubkey', info.nostr.pubkey, '--network', info.ots.network]);
    const text = (await page.locator('#cli-text').textContent()) ?? '';
    expect(text.split('\n').find((l) => l.startsWith('VERDICT: '))).toBe(cli.verdict);
    expect(await page.locator('#checks tr[data-check="signer"]').getAttribute('data-status')).toBe('PASS');
    expect(b.problems).toEqual([]);
  });

  it('/verify?key= for a subject with no proof says so, and leaves the page usable', async () => {
    await page.goto(`${s.http.url}/verify?key=no-such-subject`);
    await expect.poll(() => page.locator('#load-error').textContent(), { timeout: 15_000 }).toContain('no-such-subject');
    expect(await page.locator('#run').isDisabled()).toBe(false);
    expect(await page.locator('#files tbody tr').count()).toBe(0);
  });
});
