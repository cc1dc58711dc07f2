/**
 * `log verify`'s checks of one log, read through a LogSource: the checkpoint's signature
 * by a key the caller trusts; every entry bundle against its level-0 tile (and the entry
 * layout); every tile hash above level 0 against the tiles below; the root against the
 * checkpoint; and older checkpoints the caller holds for consistency with this one.
 * Checks are values: a report lists each, and every read is bounded.
 */
import { InputError, UsageError } from '../../core/errors/errors.js';
import { openCheckpoint, type Checkpoint } from '../../core/log/checkpoint.js';
import { decodeEntry } from '../../core/log/entry.js';
import { LogFormatError } from '../../core/log/errors.js';
import { MAX_NOTE_BYTES, type VerifierKey } from '../../core/log/note.js';
import { consistencyProof, treeHash, verifyConsistency } from '../../core/log/proof.js';
import { CompactRange, leafHash } from '../../core/log/rfc6962.js';
import { decodeBundle, FULL_TILE_BYTES, MAX_BUNDLE_BYTES, splitTile, TILE_HEIGHT, TILE_WIDTH, TileHashes, tileInTree, tilePath, type TileRef } from '../../core/log/tiles.js';
import type { LogSource } from './log-source.js';

export type CheckStatus = 'pass' | 'fail' | 'nothing';

export interface LogCheck {
  readonly name: 'checkpoint' | 'entries' | 'tiles' | 'root' | 'consistency';
  readonly status: CheckStatus;
  readonly detail: string;
}

export interface LogVerifyReport {
  readonly prefix: string;
  readonly checkpoint: { origin: string; size: number; root: string } | null;
  readonly checks: LogCheck[];
  readonly verdict: 'PASS' | 'FAIL' | 'NOTHING ESTABLISHED';
}

/** An older signed checkpoint to hold against the current one, and where it came from. */
export interface OlderCheckpoint {
  readonly name: string;
  readonly note: Buffer | string;
  /** Found among an author's checkpoint events, which may be other logs' (other shards): another origin is then no failure. */
  readonly published?: boolean;
}

/**
 * How an older checkpoint stands against the current one: a prefix of it (`consistent`);
 * signed, same log, not a prefix (`fork`); larger than the log (`ahead`: truncated or rolled
 * back); not signed by a trusted key (`untrusted`, nothing read from it); another origin;
 * malformed or with a signature by a trusted key that does not verify (`invalid`); or not
 * checked because the log's own tiles do not hold together (`unchecked`).
 */
export type OlderStatus = 'consistent' | 'fork' | 'ahead' | 'untrusted' | 'other-log' | 'invalid' | 'unchecked';

export interface OlderResult {
  readonly name: string;
  readonly status: OlderStatus;
  readonly detail: string;
  readonly checkpoint: { origin: string; size: number; root: string } | null;
  /** The note as given (text), so a fork can be shown with both notes. */
  readonly note: string;
  readonly published: boolean;
}

export interface LogVerifyOptions {
  readonly trusted: readonly VerifierKey[];
  /** Older signed checkpoints to hold against this one. */
  readonly older?: readonly OlderCheckpoint[];
  /** Largest tree read (entries); a bigger checkpoint is a usage error. */
  readonly maxEntries?: number;
  /** Problems listed one by one before the rest are only counted. */
  readonly maxProblems?: number;
  /** Sees every entry of the tree as it is read, in index order (before its checks are summed up). */
  readonly onEntry?: (index: number, entry: Buffer) => void;
}

/** A log read: the report, each older checkpoint's standing, and the current note as read. */
export interface LogInspection {
  readonly report: LogVerifyReport;
  readonly older: OlderResult[];
  /** The checkpoint note as served, null when there was none to read. */
  readonly note: string | null;
}

export const DEFAULT_MAX_ENTRIES = 10_000_000;

function verdictOf(checks: readonly LogCheck[]): LogVerifyReport['verdict'] {
  if (checks.some((c) => c.status === 'fail')) return 'FAIL';
  if (checks.some((c) => c.status === 'nothing')) return 'NOTHING ESTABLISHED';
  return 'PASS';
}

async function required(source: LogSource, tile: TileRef): Promise<Buffer> {
  const path = tilePath(tile);
  const bytes = await source.read(path, tile.level === 'entries' ? MAX_BUNDLE_BYTES : FULL_TILE_BYTES);
  if (bytes === null) throw new LogFormatError('log_bad_tile', 'missing: the checkpoint\'s size needs it', path);
  return bytes;
}

export async function verifyLog(source: LogSource, options: LogVerifyOptions): Promise<LogVerifyReport> {
  return (await inspectLog(source, options)).report;
}

const noteText = (note: Buffer | string): string => (typeof note === 'string' ? note : note.toString('utf8'));

export async function inspectLog(source: LogSource, options: LogVerifyOptions): Promise<LogInspection> {
  const checks: LogCheck[] = [];
  const older: OlderResult[] = [];
  let text: string | null = null;
  const done = (cp: Checkpoint | null): LogInspection => {
    checks.push(...older.filter((r) => !(r.published && r.status === 'other-log')).map(olderCheck));
    return {
      report: { prefix: source.prefix, checkpoint: cp === null ? null : { origin: cp.origin, size: cp.size, root: cp.root.toString('base64') }, checks, verdict: verdictOf(checks) },
      older,
      note: text,
    };
  };
  const unchecked = (why: string): void => {
    for (const old of options.older ?? []) older.push({ name: old.name, status: 'unchecked', detail: `${old.name}: not checked: ${why}`, checkpoint: null, note: noteText(old.note), published: old.published === true });
  };

  let opened;
  try {
    const note = await source.read('checkpoint', MAX_NOTE_BYTES);
    if (note === null) throw new UsageError(`no checkpoint at ${source.prefix}: is it the log's prefix?`, 'unreadable');
    text = note.toString('utf8');
    opened = openCheckpoint(note, options.trusted);
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    checks.push({ name: 'checkpoint', status: 'fail', detail: err.message });
    return done(null);
  }
  const cp = opened.checkpoint;
  if (!opened.ok) {
    // signed-note: the text of a note no trusted key signed is ignored, so nothing below is read
    checks.push({ name: 'checkpoint', status: opened.reason === 'no_trusted_signature' ? 'nothing' : 'fail', detail: opened.message });
    return done(cp);
  }
  checks.push({ name: 'checkpoint', status: 'pass', detail: `${cp.origin} at size ${cp.size}, signed by ${opened.signedBy.map((k) => `${k.name}+${k.keyId.toString(16).padStart(8, '0')}`).join(', ')}` });
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  if (cp.size > maxEntries) throw new UsageError(`checkpoint.size: ${cp.size} is over the ${maxEntries} entries this run reads (raise --max-entries)`, 'log_too_large');

  let tree: TreeResult;
  try {
    tree = await checkTree(source, cp, options.maxProblems ?? 20, options.onEntry);
  } catch (err) {
    // a tile or bundle that is missing or malformed stops the walk: the log does not hold together
    if (!(err instanceof InputError)) throw err;
    checks.push({ name: 'tiles', status: 'fail', detail: err.message });
    unchecked('the tiles do not hold together');
    return done(cp);
  }
  checks.push(...tree.checks);
  // altered entries leave the tree itself to check; broken tiles or root do not
  if (tree.checks.some((c) => c.status === 'fail' && c.name !== 'entries')) {
    unchecked('the tiles do not hold together');
    return done(cp);
  }
  for (const old of options.older ?? []) {
    const result = await withTiles(source, tree.tiles, (hashes) => checkOlder(old.name, noteText(old.note), cp, new TileHashes(cp.size, hashes), options.trusted));
    older.push({ ...result, published: old.published === true });
  }
  return done(cp);
}

class NeedTile extends Error {
  constructor(readonly ref: TileRef) {
    super(`need ${tilePath(ref)}`);
  }
}

/**
 * Runs a synchronous proof computation over tiles read on demand: each tile it asks for
 * and is not held is fetched and the computation run again (a proof needs O(log n) tiles).
 */
async function withTiles<T>(source: LogSource, held: Map<string, Buffer>, compute: (read: (tile: TileRef) => Buffer) => T): Promise<T> {
  for (let attempt = 0; attempt < 256; attempt++) {
    try {
      return compute((tile) => {
        const bytes = held.get(tilePath(tile));
        if (bytes === undefined) throw new NeedTile(tile);
        return bytes;
      });
    } catch (err) {
      if (!(err instanceof NeedTile)) throw err;
      held.set(tilePath(err.ref), await required(source, err.ref));
    }
  }
  throw new RangeError('a proof needed more than 256 tiles');
}

interface TreeResult {
  checks: LogCheck[];
  /** The tiles above level 0 (bytes by path), kept for the consistency proofs. */
  tiles: Map<string, Buffer>;
}

/** Streams the level-0 tiles and bundles in order, checking every hash above them as it completes. */
async function checkTree(source: LogSource, cp: Checkpoint, maxProblems: number, onEntry?: (index: number, entry: Buffer) => void): Promise<TreeResult> {
  const tiles = new Map<string, Buffer>();
  let tilesRead = 0;
  const problems = { entries: [] as string[], entriesCount: 0, tiles: [] as string[], tilesCount: 0 };
  const note = (kind: 'entries' | 'tiles', text: string): void => {
    if (kind === 'entries') {
      if (problems.entriesCount++ < maxProblems) problems.entries.push(text);
    } else if (problems.tilesCount++ < maxProblems) problems.tiles.push(text);
  };
  const upper = new Map<number, { index: number; hashes: Buffer[] }>();
  const upperTile = async (level: number, index: number): Promise<Buffer[]> => {
    const have = upper.get(level);
    if (have?.index === index) return have.hashes;
    const ref = tileInTree(cp.size, level, index);
    const bytes = await required(source, ref);
    tiles.set(tilePath(ref), bytes);
    tilesRead++;
    const hashes = splitTile(bytes, ref);
    upper.set(level, { index, hashes });
    return hashes;
  };
  const completed: { level: number; index: number; hash: Buffer }[] = [];
  const range = new CompactRange((height, index, hash) => {
    if (height > 0 && height % TILE_HEIGHT === 0) completed.push({ level: height / TILE_HEIGHT, index, hash });
  });
  const level0 = Math.ceil(cp.size / TILE_WIDTH);
  for (let n = 0; n < level0; n++) {
    const ref = tileInTree(cp.size, 0, n);
    const tileBytes = await required(source, ref);
    tilesRead++;
    const leafHashes = splitTile(tileBytes, ref);
    const bundleRef: TileRef = { ...ref, level: 'entries' };
    const entries = decodeBundle(await required(source, bundleRef), bundleRef);
    entries.forEach((entry, i) => {
      const index = n * TILE_WIDTH + i;
      onEntry?.(index, entry);
      if (!leafHash(entry).equals(leafHashes[i]!)) note('entries', `entry ${index} does not hash to ${tilePath(ref)}[${i}]`);
      try {
        decodeEntry(entry, `entry ${index}`);
      } catch (err) {
        note('entries', (err as Error).message);
      }
    });
    for (const h of leafHashes) range.append(h);
    for (const c of completed.splice(0)) {
      const hashes = await upperTile(c.level, Math.floor(c.index / TILE_WIDTH));
      if (!hashes[c.index % TILE_WIDTH]!.equals(c.hash)) note('tiles', `${tilePath(tileInTree(cp.size, c.level, Math.floor(c.index / TILE_WIDTH)))}[${c.index % TILE_WIDTH}] is not the hash of the tile below`);
    }
  }
  const more = (count: number, listed: number): string => (count > listed ? `; and ${count - listed} more` : '');
  const checks: LogCheck[] = [];
  checks.push(
    problems.entriesCount === 0
      ? { name: 'entries', status: 'pass', detail: `${cp.size} entr${cp.size === 1 ? 'y' : 'ies'} read from ${level0} bundle${level0 === 1 ? '' : 's'}, each hashing to its level-0 tile and in the entry layout` }
      : { name: 'entries', status: 'fail', detail: `${problems.entriesCount} problem${problems.entriesCount === 1 ? '' : 's'}: ${problems.entries.join('; ')}${more(problems.entriesCount, problems.entries.length)}` },
  );
  checks.push(
    problems.tilesCount === 0
      ? { name: 'tiles', status: 'pass', detail: `${tilesRead} tile${tilesRead === 1 ? '' : 's'} read, every hash above level 0 the hash of the tile below` }
      : { name: 'tiles', status: 'fail', detail: `${problems.tilesCount} problem${problems.tilesCount === 1 ? '' : 's'}: ${problems.tiles.join('; ')}${more(problems.tilesCount, problems.tiles.length)}` },
  );
  const root = range.root();
  checks.push(root.equals(cp.root)
    ? { name: 'root', status: 'pass', detail: `the tiles hash to the checkpoint's root ${cp.root.toString('base64')}` }
    : { name: 'root', status: 'fail', detail: `the tiles hash to ${root.toString('base64')}, the checkpoint says ${cp.root.toString('base64')}` });
  return { checks, tiles };
}

const STATUS_OF: Record<OlderStatus, CheckStatus> = { consistent: 'pass', untrusted: 'nothing', fork: 'fail', ahead: 'fail', 'other-log': 'fail', invalid: 'fail', unchecked: 'fail' };

function olderCheck(r: OlderResult): LogCheck {
  return { name: 'consistency', status: STATUS_OF[r.status], detail: r.detail };
}

function checkOlder(name: string, note: string, cp: Checkpoint, hashes: TileHashes, trusted: readonly VerifierKey[]): Omit<OlderResult, 'published'> {
  const result = (status: OlderStatus, detail: string, old: Checkpoint | null): Omit<OlderResult, 'published'> => (
    { name, status, detail, checkpoint: old === null ? null : { origin: old.origin, size: old.size, root: old.root.toString('base64') }, note }
  );
  let opened;
  try {
    opened = openCheckpoint(note, trusted, name);
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return result('invalid', err.message, null);
  }
  const old = opened.checkpoint;
  if (!opened.ok) return result(opened.reason === 'no_trusted_signature' ? 'untrusted' : 'invalid', `${name}: ${opened.message}`, old);
  if (old.origin !== cp.origin) return result('other-log', `${name}: origin ${JSON.stringify(old.origin)} is another log than ${JSON.stringify(cp.origin)}`, old);
  if (old.size > cp.size) return result('ahead', `${name}: signed at size ${old.size}, larger than the log's ${cp.size}: the log was truncated or rolled back`, old);
  const proof = consistencyProof(old.size, cp.size, hashes);
  if (!verifyConsistency(old.size, cp.size, old.root, cp.root, proof)) {
    const theirs = old.size === 0 ? '' : `; the tiles give ${Buffer.from(treeHash(old.size, hashes)).toString('base64')} at that size`;
    return result('fork', `${name}: size ${old.size} root ${old.root.toString('base64')} is not a prefix of this log (a fork: both checkpoints are signed)${theirs}`, old);
  }
  return result('consistent', `${name}: size ${old.size} is a prefix of size ${cp.size} (consistency proof of ${proof.length} hash${proof.length === 1 ? '' : 'es'})`, old);
}
