/**
 * The log directory's files: tiles and entry bundles written once under their tlog-tiles
 * path (a second write must bring the same bytes), the checkpoint replaced atomically.
 * The writer's own writes are asynchronous (fs.promises: the fsyncs run off the event
 * loop, in the same durable order); the synchronous ones are for the readers' small files.
 */
import { closeSync, constants, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { LogFormatError } from '../../core/log/errors.js';

export const CHECKPOINT_FILE = 'checkpoint';

/** Tile files written at once by writeTiles (bounds the open descriptors). */
const TILE_WRITES_AT_ONCE = 16;

function writeFd(path: string, flags: string, bytes: Uint8Array): void {
  const fd = openSync(path, flags, 0o644);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
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

/** A tile or an entry bundle the writer puts under `rel`. */
export interface FileWrite {
  readonly rel: string;
  readonly bytes: Uint8Array;
  /** Inside a signed checkpoint: other bytes already there are refused (writeTile). */
  readonly committed: boolean;
}

/**
 * writeTile of each of `files`, a few at a time, off the event loop; then an fsync of every
 * folder a file was renamed into, so all of them survive a crash before the caller goes on
 * (a checkpoint naming them).
 */
export async function writeTiles(dir: string, files: readonly FileWrite[]): Promise<void> {
  const folders = new Set<string>();
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < files.length && !failed) {
      const f = files[next++]!;
      const folder = await writeTile(dir, f.rel, f.bytes, f.committed).catch((err: unknown) => {
        failed = true;
        throw err;
      });
      if (folder !== null) folders.add(folder);
    }
  };
  // a failed write stops its worker; the others finish theirs before the error is thrown
  await allDone(Array.from({ length: Math.min(TILE_WRITES_AT_ONCE, files.length) }, worker));
  await allDone([...folders].map(syncFolderAsync));
}

/**
 * Writes `bytes` at `rel` unless the file is there with the same bytes. Other bytes are
 * refused when the tile is `committed` (inside a signed checkpoint: immutable), and
 * replaced when not (left by a run that stopped before its checkpoint). Written aside and
 * renamed in, so a reader never sees half a tile. The folder it was renamed into, which the
 * caller fsyncs before the checkpoint names the tile; null when the file was already there.
 */
export async function writeTile(dir: string, rel: string, bytes: Uint8Array, committed: boolean): Promise<string | null> {
  const path = join(dir, rel);
  const have = await readOptionalAsync(path);
  if (have !== null) {
    if (Buffer.compare(have, bytes) === 0) return null;
    if (committed) {
      throw new LogFormatError('log_bad_tile', `${path} already holds other bytes: a checkpointed tile is immutable (is another writer using this folder?)`, rel);
    }
  }
  await mkdir(dirname(path), { recursive: true });
  const tmp = await writeAside(path, bytes);
  await rename(tmp, path).catch(async (err: unknown) => {
    await unlink(tmp).catch(() => undefined);
    throw err;
  });
  return dirname(path);
}

/**
 * Replaces `rel` atomically, like writeReplacing, with the write and the fsyncs off the event
 * loop: the new bytes are written aside and fsynced while `after` settles, and renamed in
 * only once it has (nothing is renamed when it fails). The rename itself is synchronous: a
 * synchronous read-compare-replace of the same file elsewhere in the process (the live
 * checkpoint's cosignatures, checkpoint-witnesses.ts) never has this rename land in its middle.
 */
export async function replaceAsync(dir: string, rel: string, bytes: Uint8Array, after: Promise<unknown> = Promise.resolve()): Promise<void> {
  const path = join(dir, rel);
  const [aside, ready] = await Promise.allSettled([writeAside(path, bytes), after]);
  if (aside.status === 'rejected') throw aside.reason;
  try {
    if (ready.status === 'rejected') throw ready.reason;
    renameSync(aside.value, path);
  } catch (err) {
    await unlink(aside.value).catch(() => undefined);
    throw err;
  }
  await syncFolderAsync(dirname(path));
}

/** Waits for all of `work` to settle (none left running), then throws the first error, if any. */
export async function allDone(work: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Writes `bytes` to a new file beside `path` and fsyncs it; its name. */
async function writeAside(path: string, bytes: Uint8Array): Promise<string> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fh = await open(tmp, 'wx', 0o644);
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
  return tmp;
}

/** Positioned write of `bytes` at `offset` of `rel` (made when missing), fsynced. */
export async function writeAtAsync(dir: string, rel: string, offset: number, bytes: Uint8Array): Promise<void> {
  // no O_APPEND, no truncation: a slot cut short by a crash is overwritten in place
  const fh = await open(join(dir, rel), constants.O_WRONLY | constants.O_CREAT, 0o644);
  try {
    await fh.write(bytes, 0, bytes.length, offset);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function syncFolderAsync(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function readOptionalAsync(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
