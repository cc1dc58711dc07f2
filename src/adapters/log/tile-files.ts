/**
 * The log directory's files: tiles and entry bundles written once under their tlog-tiles
 * path (a second write must bring the same bytes), the checkpoint replaced atomically.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { LogFormatError } from '../../core/log/errors.js';

export const CHECKPOINT_FILE = 'checkpoint';

function writeFd(path: string, flags: string, bytes: Uint8Array): void {
  const fd = openSync(path, flags, 0o644);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `bytes` at `rel` unless the file is there with the same bytes. Other bytes are
 * refused when the tile is `committed` (inside a signed checkpoint: immutable), and
 * replaced when not (left by a run that stopped before its checkpoint). The folder a file
 * was renamed into, which the caller fsyncs before the checkpoint names the tile; null when
 * the file was already there.
 */
export function writeTile(dir: string, rel: string, bytes: Uint8Array, committed: boolean): string | null {
  const path = join(dir, rel);
  const have = readOptional(dir, rel);
  if (have !== null) {
    if (Buffer.compare(have, bytes) === 0) return null;
    if (committed) {
      throw new LogFormatError('log_bad_tile', `${path} already holds other bytes: a checkpointed tile is immutable (is another writer using this folder?)`, rel);
    }
  }
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    // written aside and renamed in, so a reader never sees half a tile
    writeFd(tmp, 'wx', bytes);
    renameSync(tmp, path);
    return dirname(path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never made
    }
    throw err;
  }
}

/** Replaces `rel` atomically (write aside, fsync, rename, fsync the folder). */
export function writeReplacing(dir: string, rel: string, bytes: Uint8Array): void {
  const path = join(dir, rel);
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFd(tmp, 'wx', bytes);
  renameSync(tmp, path);
  syncFolder(dirname(path));
}

/** fsync of a folder: the renames into it survive a crash. */
export function syncFolder(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The bytes at `rel`, or null when there is no such file. */
export function readOptional(dir: string, rel: string): Buffer | null {
  try {
    return readFileSync(join(dir, rel));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
