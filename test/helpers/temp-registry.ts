/**
 * The temp folders `tempDir()` made for the running test file: they live as long as the
 * file, and temp-folders.ts removes them after it (before it checks that nothing else was
 * left in the file's TMPDIR).
 */
import { rmSync } from 'node:fs';

const made = new Set<string>();

export function ownTempDir(dir: string): string {
  made.add(dir);
  return dir;
}

export function removeOwnTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
