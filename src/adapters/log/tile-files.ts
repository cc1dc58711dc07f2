/**
 * The log directory's files: tiles and entry bundles written once under their tlog-tiles
 * path (a second write must bring the same bytes), the checkpoint replaced atomically.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
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
 * replaced when not (left by a run that stopped before its checkpoint).
 */
export function writeTile(dir: string, rel: string, bytes: Uint8Array, committed: boolean): void {
  const path = join(dir, rel);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    // written aside and linked in, so a reader never sees half a tile
    writeFd(tmp, 'wx', bytes);
    if (!exists(path)) {
      renameSync(tmp, path);
      return;
    }
    const have = readFileSync(path);
    if (Buffer.compare(have, bytes) === 0) return;
    if (committed) {
      throw new LogFormatError('log_bad_tile', `${path} already holds other bytes: a checkpointed tile is immutable (is another writer using this folder?)`, rel);
    }
    renameSync(tmp, path);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // renamed into place
    }
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Replaces `rel` atomically (write aside, fsync, rename, fsync the folder). */
export function writeReplacing(dir: string, rel: string, bytes: Uint8Array): void {
  const path = join(dir, rel);
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFd(tmp, 'wx', bytes);
  renameSync(tmp, path);
  const fd = openSync(dirname(path), 'r');
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
