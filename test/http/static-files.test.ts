/**
 * The status page files are not compiled: they are found from src/adapters/http/ (tests) and from
 * dist/src/adapters/http/ (the build), both pointing at src/adapters/http/static/.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STATIC_FILES, loadStaticFiles, staticDir } from '../../src/adapters/http/static-files.js';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';

const SOURCE_DIR = join(REPO_ROOT, 'src/adapters/http/static/');
const BUILT = join(REPO_ROOT, 'dist/src/adapters/http/static-files.js');

describe('status page files', () => {
  it('are found next to the source module', () => {
    expect(staticDir()).toBe(SOURCE_DIR);
    const files = loadStaticFiles();
    expect([...files.keys()].sort()).toEqual(Object.keys(STATIC_FILES).sort());
    for (const f of files.values()) expect(f.body.length).toBeGreaterThan(100);
  });

  it('are found from the build folder by the relative path the built module uses', () => {
    const fromDist = new URL('../../../../src/adapters/http/static/', pathToFileURL(BUILT));
    expect(staticDir([new URL('./static/', pathToFileURL(BUILT)), fromDist])).toBe(SOURCE_DIR);
  });

  it('stand in for the /verify bundle when it was not built, with a message saying how to build it', () => {
    const dir = `${tempDir('aer1-static')}/`;
    try {
      cpSync(SOURCE_DIR, dir, { recursive: true });
      rmSync(join(dir, 'verify.bundle.js'), { force: true });
      const files = loadStaticFiles(dir);
      expect([...files.keys()].sort()).toEqual(Object.keys(STATIC_FILES).sort());
      expect(files.get('/verify.bundle.js')!.body.toString()).toBe('window.aer1VerifyMissing = "verify.bundle.js was not built: run npm run build (it bundles the browser verifier)";\n');
      expect(files.get('/verify')!.csp).toMatch(/connect-src 'self' https: http:/);
      expect(files.get('/')!.csp).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('say where they were looked for when missing', () => {
    expect(() => staticDir([new URL('file:///nonexistent/aer1/')])).toThrow('/nonexistent/aer1/');
  });

  it('are found by the built module itself (needs a build: npx tsc -p tsconfig.json, which npm test runs)', () => {
    if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: build first (npx tsc -p tsconfig.json)`);
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(pathToFileURL(BUILT).href)}); console.log(m.staticDir()); console.log(m.loadStaticFiles().size);`], { encoding: 'utf8' });
    expect(out.trim().split('\n')).toEqual([SOURCE_DIR, String(Object.keys(STATIC_FILES).length)]);
  });
});
