#!/usr/bin/env node
// Bundles the verifier for the browser (`/verify`): src/web/verify.ts and what it imports
// (src/core/verify, @noble/hashes, nostr-tools' pure parts, the Buffer polyfill) into one
// IIFE, `src/adapters/http/static/verify.bundle.js` (global `aer1Verify`), with esbuild.
// Node built-ins the verify code touches are swapped for small shims (scripts/browser-shims).
// Run by `npm run build` and `prepare`; `scripts/build-if-stale.mjs` runs it when stale.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE = join(ROOT, 'src/adapters/http/static/verify.bundle.js');
const SHIMS = join(ROOT, 'scripts/browser-shims');

export async function buildVerifyBundle({ quiet = false } = {}) {
  const { build } = await import('esbuild');
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const result = await build({
    absWorkingDir: ROOT,
    stdin: {
      contents: `export { verifyDropped, guessRole, commandFor } from './src/web/verify.ts';\nexport const version = ${JSON.stringify(version)};\n`,
      resolveDir: ROOT,
      sourcefile: 'verify-entry.ts',
      loader: 'ts',
    },
    bundle: true,
    format: 'iife',
    globalName: 'aer1Verify',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    outfile: BUNDLE,
    inject: [join(SHIMS, 'buffer-global.mjs')],
    alias: {
      'node:crypto': join(SHIMS, 'crypto.mjs'),
      'node:util': join(SHIMS, 'util.mjs'),
      'node:fs/promises': join(SHIMS, 'fs-promises.mjs'),
    },
    banner: { js: `/* aer1-verify-anchor ${version} for the browser: built by scripts/build-verify-bundle.mjs from src/web/verify.ts; do not edit */` },
    logLevel: quiet ? 'error' : 'warning',
    metafile: true,
  });
  const bytes = Object.values(result.metafile.outputs)[0]?.bytes ?? 0;
  if (!quiet) process.stderr.write(`build: ${BUNDLE.slice(ROOT.length + 1)} (${(bytes / 1024).toFixed(0)} KiB)\n`);
  return bytes;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  buildVerifyBundle().catch((err) => {
    process.stderr.write(`build-verify-bundle: ${err.message}\n`);
    process.exit(1);
  });
}
