/**
 * scripts/build-if-stale.mjs (what `npm start` and `npm run bench` run first) compiles only
 * when dist is older than the sources. Run on a copy of it in a small tree whose
 * node_modules/typescript/bin/tsc is a stand-in that records being called.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';

const root = tempDir('build-if-stale');
afterAll(() => rmSync(root, { recursive: true, force: true }));

const T0 = 1_700_000_000; // seconds
function put(rel: string, text: string, at: number): void {
  const file = join(root, rel);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  utimesSync(file, at, at);
}
const marker = join(root, 'tsc-ran');

function run(): { status: number | null; stderr: string; compiled: boolean } {
  rmSync(marker, { force: true });
  const r = spawnSync(process.execPath, [join(root, 'scripts/build-if-stale.mjs')], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr, compiled: existsSync(marker) };
}

describe('build-if-stale', () => {
  mkdirSync(join(root, 'scripts'), { recursive: true });
  copyFileSync(join(REPO_ROOT, 'scripts/build-if-stale.mjs'), join(root, 'scripts/build-if-stale.mjs'));
  put('node_modules/typescript/bin/tsc', `require('fs').writeFileSync(${JSON.stringify(marker)}, process.argv.slice(2).join(' '));\n`, T0);
  put('node_modules/typescript/package.json', '{}', T0); // the stand-in is CommonJS
  put('package.json', '{"type":"module"}', T0);
  put('tsconfig.json', '{}', T0);
  put('src/a.ts', 'export const a = 1;', T0);
  put('src/types.d.ts', 'declare const x: number;', T0 + 500); // declarations emit nothing: never stale
  put('bench/run.ts', 'export {};', T0);
  put('dist/src/a.js', 'export const a = 1;', T0 + 100);
  put('dist/bench/run.js', 'export {};', T0 + 100);

  it('does nothing when every output is newer than its source and the configs', () => {
    expect(run()).toEqual({ status: 0, stderr: '', compiled: false });
  });

  it('compiles when a source is newer than its output', () => {
    utimesSync(join(root, 'src/a.ts'), T0 + 200, T0 + 200);
    const r = run();
    expect(r).toMatchObject({ status: 0, compiled: true });
    expect(r.stderr).toBe('build: src/a.ts changed since the last build; compiling (tsc -p tsconfig.json)\n');
    utimesSync(join(root, 'src/a.ts'), T0, T0);
  });

  it('compiles when a source has no output (a new file, or no dist at all)', () => {
    put('bench/new.ts', 'export {};', T0);
    expect(run()).toMatchObject({ compiled: true, stderr: expect.stringContaining('bench/new.ts has no build output') });
    put('dist/bench/new.js', 'export {};', T0 + 100);
    expect(run().compiled).toBe(false);
  });

  it('compiles when tsconfig.json or package.json is newer than the oldest output', () => {
    utimesSync(join(root, 'tsconfig.json'), T0 + 150, T0 + 150);
    expect(run()).toMatchObject({ compiled: true, stderr: expect.stringContaining('tsconfig.json changed since the last build') });
    utimesSync(join(root, 'tsconfig.json'), T0, T0);
    utimesSync(join(root, 'package.json'), T0 + 150, T0 + 150);
    expect(run()).toMatchObject({ compiled: true, stderr: expect.stringContaining('package.json changed since the last build') });
    utimesSync(join(root, 'package.json'), T0, T0);
    expect(run().compiled).toBe(false);
  });

  it('bundles the /verify page when its bundle is missing or older than the verify sources, and only then', () => {
    const bundled = join(root, 'bundle-ran');
    put('scripts/build-verify-bundle.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(bundled)}, 'x');\n`, T0);
    put('src/core/v.ts', 'export const v = 1;', T0);
    put('dist/src/core/v.js', 'export const v = 1;', T0 + 100);
    const again = (): { stderr: string; bundled: boolean; compiled: boolean } => {
      rmSync(bundled, { force: true });
      const r = run();
      return { stderr: r.stderr, bundled: existsSync(bundled), compiled: r.compiled };
    };
    expect(again()).toEqual({ bundled: true, compiled: false, stderr: 'build: src/adapters/http/static/verify.bundle.js is missing; bundling the browser verifier (scripts/build-verify-bundle.mjs)\n' });
    put('src/adapters/http/static/verify.bundle.js', '// built', T0 + 100);
    expect(again()).toEqual({ bundled: false, compiled: false, stderr: '' });
    utimesSync(join(root, 'src/core/v.ts'), T0 + 200, T0 + 200);
    put('dist/src/core/v.js', 'export const v = 1;', T0 + 300);
    expect(again()).toMatchObject({ bundled: true, compiled: false, stderr: expect.stringContaining('src/core/v.ts changed since the bundle was built') });
  });
});
