/**
 * The status page as an operator works from it, in headless Chromium, on a real daemon with
 * two dev relays (quorum 2) and a dev calendar, one relay stopped: the page names the relay
 * failing with its last error, error rate and the events waiting on it; shows the daemon's
 * identity and the last hour as charts; lists partial subjects a page at a time and the
 * rejected one with its reason; and a deep link #/subject/KEY opens one subject, with a proof
 * link only where a proof exists. Screenshots of each view are saved (paths printed).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { receiptFields, waitFor } from '../helpers/harness.js';
import { openBrowser, screenshot, type Browser } from '../helpers/browser.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;
let b: Browser;
let page: Page;
const confirmed = [receiptFields(), receiptFields(), receiptFields()];
const waiting = Array.from({ length: 25 }, () => receiptFields());
const rejectedKey = `bad-${Date.now()}`;
let downUrl: string;

beforeAll(async () => {
  // envelope mode, no NIP-03: one event per subject, so the stopped relay has exactly 25 waiting
  // (auto mode would decide per cut from the budget and the load, one event or 25)
  // relay upkeep every second: the page shows how far back the relay that is up holds events
  s = await startStack({ relays: 2, overrides: { nostr: { mode: 'envelope', nip03: false }, relayUpkeep: { intervalMs: 1000 } } });
  expect((await s.post('/v1/anchors', { subjects: confirmed }, { auth: true })).status).toBe(202);
  await s.confirm(confirmed.map((x) => x.receipt_uuid));
  // a job the intake worker refuses (no output_sha256): status rejected, with its reason
  await s.daemon.intakeQueue.add(ANCHOR_JOB, { subject: 'receipt', receipt_uuid: rejectedKey }, { jobId: rejectedKey, removeOnFail: true });
  await waitFor('the bad job rejected', async () => (await s.daemon.store.subjects.getRecord(rejectedKey))?.status === 'rejected', 15_000, 100);

  const down = s.relays[1]!;
  downUrl = `${down.url}/`;
  await down.stop();
  expect((await s.post('/v1/anchors', { subjects: waiting }, { auth: true })).status).toBe(202);
  await waitFor('the stopped relay failing with 25 events waiting', async () => {
    const stats = (await (await s.get('/v1/stats')).json()) as Stats;
    const h = stats.health.find((x) => x.url === downUrl);
    return h?.state === 'failing' && h.waiting === 25 && stats.subjects.byStatus.partial === 25;
  }, 30_000, 200);
  b = await openBrowser({ width: 1400, height: 1000 });
  page = b.page;
}, 120_000);

afterAll(async () => {
  await b?.close();
  await s?.close();
});

const ready = async (): Promise<void> => {
  await expect.poll(() => page.locator('[data-count="total"]').textContent(), { timeout: 15_000 }).toBe('29');
  await expect.poll(() => page.locator('#live').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
};

describe('the status page with a relay down', () => {
  it('names the failing relay with its last error, error rate and what waits on it; identity and charts', async () => {
    await page.goto(`${s.http.url}/`);
    await ready();
    const row = page.locator(`#endpoints tr[data-endpoint="${downUrl}"]`);
    expect(await row.getAttribute('data-state')).toBe('failing');
    expect(await row.locator('.badge').first().textContent()).toBe('failing');
    expect(await row.locator('[data-waiting]').textContent()).toBe('25');
    expect(await row.locator('.error-cell').textContent()).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    expect(await row.locator('.rate').textContent()).toMatch(/^\d+% \(\d+ of \d+\)$/);
    const upRow = page.locator(`#endpoints tr[data-endpoint="${s.relays[0]!.url}/"]`);
    expect(await upRow.getAttribute('data-state')).toBe('ok');
    expect(await upRow.locator('[data-waiting]').textContent()).toBe('0');
    // relay upkeep asked the relay that is up again for the events it accepted: it holds them since the first
    await expect.poll(() => upRow.locator('[data-upkeep]').getAttribute('data-upkeep'), { timeout: 15_000 }).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await upRow.locator('[data-upkeep]').textContent()).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC.*\d+ checked, 0 lost and sent again/);
    expect(await page.locator('#failing').isVisible()).toBe(true);
    expect(await page.locator('#failing').textContent()).toContain(`relay ${downUrl} is failing`);

    // identity: version, signer, mode, network
    const identity = (await page.locator('#identity').textContent()) ?? '';
    expect(identity).toMatch(/^v\d+\.\d+\.\d+/);
    // auto is the default (docs/nostr.md)
    expect(identity).toContain('nostr envelope mode, quorum 2 of 2');
    expect(identity).toContain('ots regtest');
    expect(await page.locator('#identity [data-npub]').getAttribute('data-npub')).toMatch(/^npub1/);

    // the last hour: 29 received (the rejected one too), 3 confirmed, 1 rejected; time to confirm drawn
    await expect.poll(() => page.locator('#throughput-sum').textContent(), { timeout: 15_000 }).toBe('· last hour: 29 received, 3 confirmed, 1 rejected');
    expect(await page.locator('#chart-throughput svg rect.b-confirmed').count()).toBeGreaterThan(0);
    expect(await page.locator('#chart-ttc svg circle.l-mean').count()).toBeGreaterThan(0);
    expect(await page.locator('#ttc-sum').textContent()).toMatch(/^· 3 confirmations: mean .+, longest .+$/);

    // every time shown says its zone
    const times = await page.locator('time').allTextContents();
    expect(times.length).toBeGreaterThan(0);
    for (const t of times) expect(t).toMatch(/ UTC$/);
    await screenshot(page, 'status-relay-down');
    expect(b.problems).toEqual([]);
  });

  it('lists the partial subjects a page at a time, and the rejected one with its reason and no proof', async () => {
    await page.goto(`${s.http.url}/`);
    await ready();
    await page.click('#status-tabs [data-status="partial"]');
    await page.selectOption('#list-limit', '20');
    const rows = page.locator('#list tbody tr');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(20);
    const first = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key')));
    for (const st of await page.locator('#list tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-status')))) expect(st).toBe('partial');
    await page.click('#list-next');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(5);
    const second = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key')));
    expect(await page.locator('#list-next').isDisabled()).toBe(true);
    expect(new Set([...first, ...second])).toEqual(new Set(waiting.map((x) => x.receipt_uuid)));
    await page.click('#list-prev');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(20);
    expect(await page.locator('#list-page').textContent()).toBe('page 1');

    // by witness: nostr partial are the same 25; a witness has no "rejected"
    await page.selectOption('#list-witness', 'nostr');
    await expect.poll(() => page.locator('#status-tabs [data-status="rejected"]').isDisabled(), { timeout: 15_000 }).toBe(true);
    expect(await rows.count()).toBe(20);
    for (const tr of await rows.evaluateAll((trs) => trs.map((x) => x.querySelector('[data-witness="nostr"] .badge')?.textContent))) expect(tr).toBe('partial');
    await page.selectOption('#list-witness', '');
    await expect.poll(() => page.locator('#status-tabs [data-status="rejected"]').isDisabled(), { timeout: 15_000 }).toBe(false);

    await page.click('#status-tabs [data-status="rejected"]');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(1);
    expect(await rows.first().getAttribute('data-key')).toBe(rejectedKey);
    expect(await rows.first().locator('.badge').first().textContent()).toBe('rejected');
    expect(await rows.first().locator('.reason').textContent()).toContain('output_sha256');

    await rows.first().locator(`a[data-key="${rejectedKey}"]`).click();
    await expect.poll(() => page.locator('#lookup-result h3 .badge').textContent(), { timeout: 15_000 }).toBe('rejected');
    // the subject in the fragment, the list it was picked from kept in the query
    expect(page.url()).toBe(`${s.http.url}/?status=rejected#/subject/${rejectedKey}`);
    expect(await page.locator('#lookup-result .proof-link').count()).toBe(0);
    expect(await page.locator('#lookup-result .no-proof').textContent()).toBe('Rejected: no proof exists for this subject.');
  });

  it('opens a subject from its deep link: witnesses, relays (one not answering), calendars, proof link', async () => {
    const key = waiting[0]!.receipt_uuid;
    await page.goto(`${s.http.url}/#/subject/${encodeURIComponent(key)}`);
    const result = page.locator('#lookup-result');
    await expect.poll(() => result.locator(`h3 [data-key="${key}"]`).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.locator('#subject').isVisible()).toBe(true);
    expect(await result.locator('h3 .badge').textContent()).toBe('partial');
    expect(await result.locator('h4[data-witness="nostr"] .badge').textContent()).toBe('partial');
    expect(await result.locator(`tr[data-relay="${s.relays[0]!.url}"] .badge`).textContent()).toBe('accepted');
    expect(await result.locator(`tr[data-relay="${s.relays[1]!.url}"] .badge`).textContent()).not.toBe('accepted');
    expect(await result.locator('h4[data-witness="ots"] .badge').textContent()).toBe('pending');
    expect(await result.locator('.proof-link').textContent()).toBe('proof (aer1-anchor-proof-v1, partial so far)');
    // the proof link answers the proof
    const href = await result.locator('.proof-link').getAttribute('href');
    const proof = (await (await s.get(`/${href}`)).json()) as { version: string };
    expect(proof.version).toBe('aer1-anchor-proof-v1');
    for (const t of await result.locator('time').allTextContents()) expect(t).toMatch(/ UTC$/);
    await screenshot(page, 'status-subject-deep-link', { fullPage: false });

    // Per-calendar error details are being added to GET /v1/anchors/{key} by another change; their
    // member names are not settled, so the page shows any member beyond the usual ones. Mocked here
    // (page.route adds an `errors` list to the real response), as the daemon in this branch has none.
    await page.route(`**/v1/anchors/${key}`, async (route) => {
      const res = await route.fetch();
      const body = (await res.json()) as { witnesses: { ots: { calendars: Array<Record<string, unknown>> } } };
      body.witnesses.ots.calendars[0]!.errors = [{ at: '2026-01-02T03:04:05Z', code: 'http_status', message: 'calendar answered 500 to the upgrade' }];
      await route.fulfill({ response: res, json: body });
    });
    await page.click('#lookup-form button');
    const detail = result.locator(`tr[data-calendar="${s.calendars[0]!.url}"] [data-detail="errors"]`);
    await expect.poll(() => detail.count(), { timeout: 15_000 }).toBe(1);
    expect(await detail.textContent()).toBe('errors: 2026-01-02 03:04:05 UTC http_status: calendar answered 500 to the upgrade');
    await page.unroute(`**/v1/anchors/${key}`);

    // back to the overview
    await page.click('#subject .close');
    await expect.poll(() => page.locator('#subject').isVisible(), { timeout: 15_000 }).toBe(false);
    expect(b.problems).toEqual([]);
  });
});
