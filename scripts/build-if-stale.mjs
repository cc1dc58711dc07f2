#!/usr/bin/env node
// Runs `tsc -p tsconfig.json` only when dist is older than the sources: some src/ or
// bench/ .ts file has no .js in dist or is newer than it, or tsconfig.json or
// package.json is newer than the oldest emitted file. `npm start` and `npm run bench`
// use it, so a start after `npm ci` (whose `prepare` builds) or after a build does not
// recompile. tsc rewrites every output on each build, so output mtimes are build times.
// Likewise the browser verifier's bundle (scripts/build-verify-bundle.mjs, served on /verify):
// rebuilt when it is missing or older than the sources it is made of.
import { spawnSync } from 'node:child_process';
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['src', 'bench'];
const CONFIG_FILES = ['tsconfig.json', 'package.json'];

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

function* sources(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* sources(path);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) yield path;
  }
}

/** Why `root`'s dist must be rebuilt, or null when it is current. */
export function staleReason(root = ROOT) {
  let oldestOutput = Infinity;
  let count = 0;
  for (const base of SOURCE_DIRS) {
    for (const source of sources(join(root, base))) {
      const rel = relative(root, source);
      const output = join(root, 'dist', rel.replace(/\.ts$/, '.js'));
      const built = mtimeOf(output);
      if (built === null) return `${rel} has no build output`;
      if ((mtimeOf(source) ?? 0) > built) return `${rel} changed since the last build`;
      oldestOutput = Math.min(oldestOutput, built);
      count++;
    }
  }
  if (count === 0) return 'no sources found';
  for (const file of CONFIG_FILES) {
    if ((mtimeOf(join(root, file)) ?? 0) > oldestOutput) return `${file} changed since the last build`;
  }
  return null;
}

const BUNDLE_SCRIPT = 'scripts/build-verify-bundle.mjs';
const BUNDLE = 'src/adapters/http/static/verify.bundle.js';
const BUNDLE_SOURCES = ['src/core', 'src/web', 'src/adapters/bitcoin'];

/** Why the /verify bundle must be rebuilt, or null when it is current (or this tree has no bundle script). */
export function bundleStaleReason(root = ROOT) {
  if (mtimeOf(join(root, BUNDLE_SCRIPT)) === null) return null;
  const built = mtimeOf(join(root, BUNDLE));
  if (built === null) return `${BUNDLE} is missing`;
  for (const base of BUNDLE_SOURCES) {
    for (const source of sources(join(root, base))) {
      if ((mtimeOf(source) ?? 0) > built) return `${relative(root, source)} changed since the bundle was built`;
    }
  }
  for (const file of ['package.json', BUNDLE_SCRIPT]) if ((mtimeOf(join(root, file)) ?? 0) > built) return `${file} changed since the bundle was built`;
  return null;
}

// run as a script (argv[1] through realpath: import.meta.url has symlinks resolved), not when imported
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const reason = staleReason();
  if (reason !== null) {
    process.stderr.write(`build: ${reason}; compiling (tsc -p tsconfig.json)\n`);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    // tsc's and the bundler's messages to stderr: `npm run bench -- --json` keeps stdout for JSON lines
    const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.json')], { stdio: ['ignore', 2, 2] });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  const bundle = bundleStaleReason();
  if (bundle !== null) {
    process.stderr.write(`build: ${bundle}; bundling the browser verifier (${BUNDLE_SCRIPT})\n`);
    const r = spawnSync(process.execPath, [join(ROOT, BUNDLE_SCRIPT)], { stdio: ['ignore', 2, 2] });
    process.exit(r.status ?? 1);
  }
}
