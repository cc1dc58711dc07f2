import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The package's root folder and version, found once by looking for this package's
 * package.json one level up (running from src/) or two (running from dist/src/).
 */
function findPackage(): { root: string; version: string } {
  for (const rel of ['../', '../../']) {
    const dir = new URL(rel, import.meta.url);
    try {
      const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'aer1-anchor' && pkg.version) return { root: fileURLToPath(dir), version: pkg.version };
    } catch {
      // try the next candidate
    }
  }
  return { root: fileURLToPath(new URL('../../', import.meta.url)), version: '0.0.0' };
}

const found = findPackage();

export const VERSION = found.version;
/** Absolute path of the package root, with a trailing separator. */
export const PACKAGE_ROOT = found.root;
