/**
 * A file replaced so that a crash leaves the old bytes or the new ones, never a mix: written
 * aside in the same folder (`.tmp-<hex>`, removed when the write fails), fsynced, renamed over, then the folder fsynced so the rename lasts.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export async function replaceFile(path: string, bytes: Uint8Array, mode: number): Promise<void> {
  const folder = dirname(path);
  const tmp = join(folder, `.tmp-${randomBytes(8).toString('hex')}`);
  try {
    const fh = await open(tmp, 'wx', mode);
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  const dir = await open(folder, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
