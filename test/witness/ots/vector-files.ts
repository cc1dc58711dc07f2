/** Where the shared `.ots` vectors live (never copied into the repo) and how to read them. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const otsVectorsDir = path.resolve(repoRoot, '../shared/vectors/ots');
export const headersFile = path.resolve(repoRoot, '../shared/vectors/bitcoin-headers.json');
export const vectorsPresent = existsSync(otsVectorsDir) && existsSync(headersFile);
export const missingVectorsMessage = `the shared vectors are missing: expected ${otsVectorsDir} and ${headersFile} (the sibling checkout ../shared/vectors)`;

/**
 * Whether the tests that read the shared vectors can run. They are optional (a fresh clone
 * has no ../shared): when absent, one line says what is skipped and why. CI that must run
 * them sets AER1_REQUIRE_SHARED_VECTORS=1, and then their absence fails the file.
 */
export function sharedVectorsFor(what: string): boolean {
  if (vectorsPresent) return true;
  if (process.env['AER1_REQUIRE_SHARED_VECTORS'] === '1') throw new Error(`${missingVectorsMessage}; AER1_REQUIRE_SHARED_VECTORS=1`);
  console.log(`SKIPPED ${what}: ../shared/vectors is absent (looked for ${otsVectorsDir} and ${headersFile})`);
  return false;
}

export function readVector(name: string): Buffer {
  return readFileSync(path.join(otsVectorsDir, name));
}

/** The valid `.ots` vectors (top level) and the invalid ones (`invalid/`). */
export function listVectors(): { valid: string[]; invalid: string[] } {
  if (!vectorsPresent) return { valid: [], invalid: [] };
  const valid = readdirSync(otsVectorsDir).filter((f) => f.endsWith('.ots')).sort();
  const invalid = readdirSync(path.join(otsVectorsDir, 'invalid'))
    .filter((f) => f.endsWith('.ots'))
    .map((f) => `invalid/${f}`)
    .sort();
  return { valid, invalid };
}
