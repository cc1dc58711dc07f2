/**
 * Headless Chromium for the page tests (Debian's /usr/bin/chromium driven by playwright-core,
 * the same flags as test/http/status-page.test.ts), and where their screenshots go:
 * `AER1_SCREENSHOT_DIR` when set (kept), else a temp folder removed after the test file (its paths are printed).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT } from './harness.js';
import { ownTempDir } from './temp-registry.js';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Console errors and page errors seen so far. */
  problems: string[];
  close(): Promise<void>;
}

export async function openBrowser(viewport = { width: 1280, height: 1000 }): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the page tests`);
  const profile = mkdtempSync(join(tmpdir(), 'aer1-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return {
    context,
    page,
    problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

let shotDir: string | null = null;

/** Saves a screenshot named `name`.png (the whole page unless `fullPage: false`) and prints where it went (set AER1_SCREENSHOT_DIR to keep them). */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  if (shotDir === null) {
    const wanted = process.env.AER1_SCREENSHOT_DIR;
    // kept only in AER1_SCREENSHOT_DIR; otherwise removed with the test file's temp folders
    shotDir = wanted ? resolve(wanted) : ownTempDir(mkdtempSync(join(tmpdir(), 'aer1-screens-')));
    mkdirSync(shotDir, { recursive: true });
  }
  const path = join(shotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: opts.fullPage ?? true });
  console.log(`screenshot: ${path}`);
  return path;
}

/**
 * Runs the built CLI verifier (bin/aer1-verify-anchor.js) and returns its exit code and output.
 * Asynchronous, so servers in the test's own process (a fake Esplora) can answer it.
 */
export function cliVerify(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string; verdict: string | null }> {
  return new Promise((resolvePromise) => {
    execFile(process.execPath, [join(REPO_ROOT, 'bin/aer1-verify-anchor.js'), ...args], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolvePromise({ code, stdout, stderr, verdict: stdout.split('\n').find((l) => l.startsWith('VERDICT: ')) ?? null });
    });
  });
}

/** Runs the built `aer1-anchor demo --json --out DIR`: the demo's documents, proofs and headers file. */
export function runDemo(out: string): { signer: { pubkey: string; npub: string }; truncation: { reason: string } } {
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchor.js'), 'demo', '--json', '--out', out], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`demo exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout) as ReturnType<typeof runDemo>;
}
