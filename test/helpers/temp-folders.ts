/**
 * Setup file (vitest.config.ts): each test file gets a temp folder of its own as TMPDIR
 * (os.tmpdir(), child processes and Python's tempfile all read it). After the file, the
 * folders `tempDir()` made for it are removed, and the file fails when anything else is
 * left there: a test removes what it creates. The folder itself is removed afterwards
 * either way, so a failing run still leaves nothing behind.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { removeOwnTempDirs } from './temp-registry.js';

const outer = tmpdir();
const mine = mkdtempSync(join(outer, 'aer1-test-'));
process.env.TMPDIR = mine;

afterAll(() => {
  let left: string[];
  try {
    removeOwnTempDirs();
    left = readdirSync(mine);
  } finally {
    process.env.TMPDIR = outer;
  }
  rmSync(mine, { recursive: true, force: true });
  expect(left, `this test file left these in its temp folder (${mine}); remove them in the test`).toEqual([]);
});
