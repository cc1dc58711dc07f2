/**
 * The status page with redis.shards 3, in headless Chromium: it follows the live stream of
 * every shard merged (/v1/events without ?shard=), so a subject of each shard shows up
 * confirmed on the page without a reload, and the counts are the shards' sum.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/core/shard/shard.js';
import { receiptFields } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const K = 3;

let s: Stack;
let context: BrowserContext;
let page: Page;
let profile: string;
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the status page test`);
  s = await startStack({ overrides: { redis: { shards: K } }, http: { readsRequireToken: false } });
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

const count = (status: string) => page.locator(`[data-count="${status}"]`);

describe('the status page over 3 shards', () => {
  it('shows a subject of every shard confirmed without a reload; the counts are the sum', { timeout: 60_000 }, async () => {
    await page.goto(`${s.http.url}/`);
    await expect.poll(() => page.locator('#live').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    // one subject in each shard
    const picked = new Map<number, ReturnType<typeof receiptFields>>();
    for (let i = 0; i < 200 && picked.size < K; i++) {
      const x = receiptFields();
      if (!picked.has(shardOf(x.receipt_uuid, K))) picked.set(shardOf(x.receipt_uuid, K), x);
    }
    const subjects = [...picked.values()];
    expect(subjects).toHaveLength(K);
    expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    await s.confirm(subjects.map((x) => x.receipt_uuid));
    for (const x of subjects) {
      await expect.poll(() => page.locator(`#events li[data-key="${x.receipt_uuid}"] .badge`).first().textContent(), { timeout: 15_000 }).toBe('confirmed');
    }
    await expect.poll(() => count('confirmed').textContent(), { timeout: 15_000 }).toBe(String(K));
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(42);
    expect(problems).toEqual([]);
  });
});
