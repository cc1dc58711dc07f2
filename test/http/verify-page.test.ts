/**
 * `/verify` in headless Chromium: the demo's files (made by the built `aer1-anchor demo`),
 * dropped on the page, get the same verdict line as the built `aer1-verify-anchor` on the
 * same files — PASS for a confirmed workflow, FAIL naming the truncation for the cut one,
 * the CLI's words when no trust is given or when a document comes with a separate proof —
 * and verifying with a dropped headers file makes no network request at all, and works
 * with the browser offline.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHeadersJson } from '../../src/adapters/bitcoin/sources.js';
import { startEsplora } from '../witness/ots/bitcoin/fake-servers.js';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';
import { cliVerify, openBrowser, runDemo, screenshot, type Browser } from '../helpers/browser.js';
import { startStack, type Stack } from './fixture.js';

const BUNDLE = join(REPO_ROOT, 'src/adapters/http/static/verify.bundle.js');
const base = tempDir('aer1-verify-page');
const out = join(base, 'out');
let demo: ReturnType<typeof runDemo>;
let s: Stack;
let b: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run npm run build (it bundles the browser verifier)`);
  demo = runDemo(out);
  s = await startStack();
  b = await openBrowser();
  page = b.page;
}, 180_000);

afterAll(async () => {
  await b?.close();
  await s?.close();
  rmSync(base, { recursive: true, force: true });
});

const file = (name: string): string => join(out, name);

/** Opens /verify afresh, drops `files`, types the options, presses Verify; returns the page's verdict line and shown verdict. */
async function verifyOnPage(files: string[], opts: { pubkey?: string; network?: string } = {}): Promise<{ line: string; shown: string; reason: string }> {
  await page.goto(`${s.http.url}/verify`);
  await expect.poll(() => page.locator('body').getAttribute('data-ready'), { timeout: 15_000 }).toBe('true');
  await page.setInputFiles('#file-input', files);
  await expect.poll(() => page.locator('#files tbody tr').count(), { timeout: 15_000 }).toBe(files.length);
  if (opts.pubkey) await page.fill('#pubkeys', opts.pubkey);
  await page.selectOption('#network', opts.network ?? 'regtest');
  await page.click('#run');
  // the drop verifies at once; Verify again with the typed options, and wait for that result
  await expect.poll(async () => (await page.locator('#cli-text').textContent()) ?? '', { timeout: 15_000 }).toMatch(/\(exit \d\)$/);
  await expect.poll(() => page.locator('#run').isDisabled(), { timeout: 15_000 }).toBe(false);
  const text = (await page.locator('#cli-text').textContent()) ?? '';
  return {
    line: text.split('\n').find((l) => l.startsWith('VERDICT: ')) ?? text,
    shown: (await page.locator('#verdict .word').textContent()) ?? '',
    reason: (await page.locator('#verdict .reason').textContent()) ?? '',
  };
}

describe('/verify in the browser', () => {
  it('passes a demo workflow with its proof, as the CLI does, with no network request once loaded', async () => {
    const requests: string[] = [];
    const onRequest = (r: Request): void => {
      requests.push(r.url());
    };
    await page.goto(`${s.http.url}/verify`);
    await expect.poll(() => page.locator('body').getAttribute('data-ready'), { timeout: 15_000 }).toBe('true');
    page.on('request', onRequest);
    try {
      await page.setInputFiles('#file-input', [file('workflow.json'), file('headers.json')]);
      await page.fill('#pubkeys', demo.signer.npub);
      await page.selectOption('#network', 'regtest');
      await page.click('#run');
      await expect.poll(() => page.locator('#verdict').getAttribute('data-verdict'), { timeout: 15_000 }).toBe('PASS');
      await expect.poll(() => page.locator('#cli-text').textContent(), { timeout: 15_000 }).toContain('expected signer');
    } finally {
      page.off('request', onRequest);
    }
    expect(requests).toEqual([]);
    const cli = await cliVerify([file('workflow.json'), '--headers', file('headers.json'), '--network', 'regtest', '--expected-pubkey', demo.signer.npub]);
    expect(cli.code).toBe(0);
    const text = (await page.locator('#cli-text').textContent()) ?? '';
    expect(text.split('\n').find((l) => l.startsWith('VERDICT: '))).toBe(cli.verdict);
    // every check line as the CLI prints it (the headers file is named by its path there, by its name here)
    const checks = (t: string): string[] => t.split('\n').filter((l) => /^ {2}(PASS|FAIL|SKIP) /.test(l)).map((l) => l.replaceAll(`${out}/`, ''));
    expect(checks(text)).toEqual(checks(cli.stdout));
    expect(await page.locator('#checks tr[data-check="signer"]').getAttribute('data-status')).toBe('PASS');
    expect(await page.locator('#checks tr[data-check="bitcoin"]').getAttribute('data-status')).toBe('PASS');
    await screenshot(page, 'verify-pass');
    expect(b.problems).toEqual([]);
  });

  it('fails the cut workflow naming the truncation, the same verdict line as the CLI', async () => {
    const r = await verifyOnPage([file('workflow-truncated.json'), file('headers.json')], { pubkey: demo.signer.pubkey });
    const cli = await cliVerify([file('workflow-truncated.json'), '--headers', file('headers.json'), '--network', 'regtest', '--expected-pubkey', demo.signer.pubkey]);
    expect(cli.code).toBe(1);
    expect(r.line).toBe(cli.verdict);
    expect(r.shown).toBe('FAIL');
    expect(r.reason).toMatch(/^envelope: truncated: anchored \d+ steps, receipt has \d+$/);
    expect(await page.locator('#checks tr[data-check="envelope"]').getAttribute('data-status')).toBe('FAIL');
    await screenshot(page, 'verify-truncated-fail');
  });

  it('says what the CLI says with no trust given: the signer is not trusted', async () => {
    const r = await verifyOnPage([file('receipt.json'), file('headers.json')]);
    const cli = await cliVerify([file('receipt.json'), '--headers', file('headers.json'), '--network', 'regtest']);
    expect(r.line).toBe(cli.verdict);
    expect(r.line).toContain('signer not trusted');
    expect(await page.locator('[data-witness="nostr"] .badge').first().textContent()).toBe('untrusted');
  });

  it('takes a document and a separate proof file (--proof) and a trust file, as the CLI does', async () => {
    const withProof = JSON.parse(readFileSync(file('timeline.json'), 'utf8')) as Record<string, unknown>;
    const { anchor_proof: proof, ...doc } = withProof;
    writeFileSync(join(base, 'timeline-doc.json'), JSON.stringify(doc));
    writeFileSync(join(base, 'timeline-proof.json'), JSON.stringify(proof));
    writeFileSync(join(base, 'trusted.txt'), `# the demo's signer\n${demo.signer.npub}\n`);
    const files = [join(base, 'timeline-proof.json'), join(base, 'timeline-doc.json'), file('headers.json'), join(base, 'trusted.txt')];
    const r = await verifyOnPage(files);
    expect(await page.locator('#files tr[data-file="timeline-proof.json"]').getAttribute('data-role')).toBe('proof');
    expect(await page.locator('#files tr[data-file="trusted.txt"]').getAttribute('data-role')).toBe('trust');
    const cli = await cliVerify([join(base, 'timeline-doc.json'), '--proof', join(base, 'timeline-proof.json'), '--headers', file('headers.json'), '--network', 'regtest', '--trust-file', join(base, 'trusted.txt')]);
    expect(cli.code).toBe(0);
    expect(r.line).toBe(cli.verdict);
    expect(r.shown).toBe('PASS');
  });

  it('verifies with the browser offline once the page is loaded', async () => {
    await page.goto(`${s.http.url}/verify`);
    await expect.poll(() => page.locator('body').getAttribute('data-ready'), { timeout: 15_000 }).toBe('true');
    await b.context.setOffline(true);
    try {
      await page.setInputFiles('#file-input', [file('workflow.json'), file('headers.json')]);
      await page.fill('#pubkeys', demo.signer.pubkey);
      await page.selectOption('#network', 'regtest');
      await page.click('#run');
      await expect.poll(() => page.locator('#verdict').getAttribute('data-verdict'), { timeout: 15_000 }).toBe('PASS');
    } finally {
      await b.context.setOffline(false);
    }
  });

  it('fetches headers from an Esplora URL the user types, and only from it; the same verdict as the CLI --esplora', async () => {
    const headers = parseHeadersJson(JSON.parse(readFileSync(file('headers.json'), 'utf8')), 'headers.json');
    const esplora = await startEsplora(headers, '/api', { cors: true });
    try {
      await page.goto(`${s.http.url}/verify`);
      await expect.poll(() => page.locator('body').getAttribute('data-ready'), { timeout: 15_000 }).toBe('true');
      const requests: string[] = [];
      const onRequest = (r: Request): void => {
        requests.push(r.url());
      };
      page.on('request', onRequest);
      try {
        await page.fill('#esplora', esplora.url);
        expect(await page.locator('#network-note').textContent()).toBe(`Verifying will fetch block headers from ${esplora.url}.`);
        await page.fill('#pubkeys', demo.signer.pubkey);
        await page.selectOption('#network', 'regtest');
        await page.setInputFiles('#file-input', [file('receipt.json')]);
        await expect.poll(() => page.locator('#verdict').getAttribute('data-verdict'), { timeout: 15_000 }).toBe('PASS');
      } finally {
        page.off('request', onRequest);
      }
      expect(requests.length).toBeGreaterThan(0);
      for (const u of requests) expect(u.startsWith(`${esplora.url}/`), u).toBe(true);
      expect(esplora.requests.some((r) => r.includes('/block-height/'))).toBe(true);
      const cli = await cliVerify([file('receipt.json'), '--esplora', esplora.url, '--network', 'regtest', '--expected-pubkey', demo.signer.pubkey]);
      expect(cli.code).toBe(0);
      const text = (await page.locator('#cli-text').textContent()) ?? '';
      expect(text.split('\n').find((l) => l.startsWith('VERDICT: '))).toBe(cli.verdict);
      expect(await page.locator('#checks tr[data-check="bitcoin"]').getAttribute('data-status')).toBe('PASS');
    } finally {
      await esplora.close();
    }
  });

  it('names the bad input the way the CLI does (exit 2), without a verdict', async () => {
    writeFileSync(join(base, 'broken.json'), '{"id": ');
    await page.goto(`${s.http.url}/verify`);
    await expect.poll(() => page.locator('body').getAttribute('data-ready'), { timeout: 15_000 }).toBe('true');
    await page.setInputFiles('#file-input', [join(base, 'broken.json')]);
    await expect.poll(() => page.locator('#verdict').getAttribute('data-verdict'), { timeout: 15_000 }).toBe('ERROR');
    const cli = await cliVerify([join(base, 'broken.json')]);
    expect(cli.code).toBe(2);
    const shown = (await page.locator('#cli-text').textContent()) ?? '';
    expect(shown).toContain('(exit 2)');
    expect(cli.stderr.trim().replaceAll(`${base}/`, '')).toBe(shown.split('\n')[0]);
  });
});
