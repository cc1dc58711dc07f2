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
}

/** URL path → file name and content type. */
export const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/openapi.json': { file: 'openapi.json', type: 'application/json; charset=utf-8' },
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
  for (const [path, { file, type }] of Object.entries(STATIC_FILES)) {
    const body = readFileSync(`${dir}${file}`);
    out.set(path, { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return out;
}
