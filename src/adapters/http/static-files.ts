/**
 * The status page's files (`src/adapters/http/static/`), read once at start. They are not compiled,
 * so the folder is found from this module's location both when it runs from `src/adapters/http/`
 * (tests) and from `dist/src/adapters/http/` (the build, whose package ships `src/adapters/http/static`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

export interface StaticFile {
  type: string;
  body: Buffer;
  etag: string;
  /** A Content-Security-Policy of its own (HTML pages); the server's default otherwise. */
  csp?: string;
}

export interface StaticEntry {
  file: string;
  type: string;
  /** Built, not kept in git (the /verify bundle): when missing, a stand-in script that has the page say how to build it. */
  built?: boolean;
  csp?: string;
}

/**
 * /verify asks the network only for an Esplora URL the user types: its page may connect to any
 * http(s) origin (and to nothing else: no other script, style or frame source than the daemon).
 */
export const VERIFY_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self' https: http:; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** URL path → file name and content type. */
export const STATIC_FILES: Readonly<Record<string, StaticEntry>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/openapi.json': { file: 'openapi.json', type: 'application/json; charset=utf-8' },
  '/verify': { file: 'verify.html', type: 'text/html; charset=utf-8', csp: VERIFY_CSP },
  '/verify.js': { file: 'verify.js', type: 'text/javascript; charset=utf-8' },
  '/verify.bundle.js': { file: 'verify.bundle.js', type: 'text/javascript; charset=utf-8', built: true },
};

const CANDIDATES = [
  // running from src/adapters/http/
  new URL('./static/', import.meta.url),
  // running from dist/src/adapters/http/
  new URL('../../../../src/adapters/http/static/', import.meta.url),
];

/** The static folder; throws naming every place looked at when none holds index.html. */
export function staticDir(candidates: readonly URL[] = CANDIDATES): string {
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(`${dir}index.html`)) return dir;
  }
  throw new Error(`status page files not found; looked in ${candidates.map((u) => fileURLToPath(u)).join(', ')}`);
}

export function loadStaticFiles(dir: string = staticDir()): Map<string, StaticFile> {
  const out = new Map<string, StaticFile>();
  for (const [path, { file, type, built, csp }] of Object.entries(STATIC_FILES)) {
    const body = built && !existsSync(`${dir}${file}`) ? Buffer.from(notBuilt(file)) : readFileSync(`${dir}${file}`);
    out.set(path, { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, ...(csp ? { csp } : {}) });
  }
  return out;
}

/** Served in place of a built file that is missing: the page shows the message instead of verifying. */
function notBuilt(file: string): string {
  return `window.aer1VerifyMissing = ${JSON.stringify(`${file} was not built: run npm run build (it bundles the browser verifier)`)};\n`;
}
