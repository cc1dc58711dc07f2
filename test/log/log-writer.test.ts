/**
 * The log writer: static tlog-tiles files under a folder (the spec's example tree of
 * 70,000), a reopened log that continues where it stopped and refuses tiles that do not
 * hash to its checkpoint, tiles that are immutable once checkpointed, proofs from the
 * files, and the key file's permissions.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { openCheckpoint, signCheckpoint } from '../../src/core/log/checkpoint.js';
import { encodeEntry, type LogEntry } from '../../src/core/log/entry.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { verifyConsistency, verifyInclusion } from '../../src/core/log/proof.js';
import { CompactRange, leafHash } from '../../src/core/log/rfc6962.js';
import { loadLogKeyFile, writeLogKeyFile } from '../../src/adapters/log/key-file.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { writeTile } from '../../src/adapters/log/tile-files.js';

const root = mkdtempSync(join(tmpdir(), 'aer1-log-writer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const newDir = (): string => join(root, `log${dirs++}`);

const ORIGIN = 'example.test/aer1';
const signer = generateSignerKey(ORIGIN).signer;
const vkey = parseVerifierKey(signer.verifierKey);

function entry(i: number): LogEntry {
  return { digest: createHash('sha256').update(`subject ${i}`).digest(), kind: (['receipt', 'workflow_close', 'job_timeline'] as const)[i % 3]!, key: `key:${i}` };
}

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

/** The root by the compact range alone, no files. */
function rootOf(entries: LogEntry[]): Buffer {
  const range = new CompactRange();
  for (const e of entries) range.append(leafHash(encodeEntry(e)));
  return range.root();
}

describe('LogWriter', () => {
  it('writes the spec\'s tree of 70,000 as 273 full level-0 tiles, 273.p/112, tile/1/000, tile/1/001.p/17, tile/2/000.p/1 and bundles', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 70_000; i++) w.append(entry(i));
    const note = await w.checkpoint();
    const all = files(dir);
    const tiles0 = all.filter((f) => f.startsWith('tile/0/'));
    expect(tiles0).toHaveLength(274);
    expect(tiles0).toContain('tile/0/273.p/112');
    expect(all.filter((f) => /^tile\/[12]\//.test(f))).toEqual(['tile/1/000', 'tile/1/001.p/17', 'tile/2/000.p/1']);
    expect(all.filter((f) => f.startsWith('tile/entries/'))).toHaveLength(274);
    expect(all.filter((f) => !f.startsWith('tile/'))).toEqual(['checkpoint', 'checkpoints/0', 'checkpoints/70000', 'checkpoints/sizes', 'checkpoints/times']);
    expect(statSync(join(dir, 'tile/0/000')).size).toBe(8192);
    expect(readFileSync(join(dir, 'checkpoint'), 'utf8')).toBe(note);
    const opened = openCheckpoint(note, [vkey]);
    expect(opened).toMatchObject({ ok: true, checkpoint: { origin: ORIGIN, size: 70_000 } });
    // the bundle's third entry is entry(514) in the pinned layout
    const bundle = readFileSync(join(dir, 'tile/entries/002'));
    const e = encodeEntry(entry(514));
    let at = 0;
    for (let i = 0; i < 2; i++) at += 2 + bundle.readUInt16BE(at);
    expect(bundle.subarray(at + 2, at + 2 + e.length)).toEqual(e);
    // every level-0 tile hash is the RFC 6962 leaf hash of its entry
    expect(readFileSync(join(dir, 'tile/0/002')).subarray(2 * 32, 3 * 32)).toEqual(leafHash(e));
    // reopened past level 2, it continues to the root of one run
    const again = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 70_000; i < 70_010; i++) again.append(entry(i));
    await again.checkpoint();
    expect(again.checkpointed.checkpoint.root).toEqual(rootOf(Array.from({ length: 70_010 }, (_, k) => entry(k))));
  });

  it('starts an empty log with a signed checkpoint of size 0 and the empty tree\'s root', async () => {
    const dir = newDir();
    await LogWriter.open({ dir, origin: ORIGIN, signer });
    const opened = openCheckpoint(readFileSync(join(dir, 'checkpoint')), [vkey]);
    expect(opened).toMatchObject({ ok: true, checkpoint: { size: 0 } });
    expect(opened.checkpoint.root.toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(files(dir)).toEqual(['checkpoint', 'checkpoints/0', 'checkpoints/sizes', 'checkpoints/times']);
  });

  it('reopens a log and continues: the same root as one written in a single run, partial tiles of earlier checkpoints kept', async () => {
    const dir = newDir();
    const sizes = [1, 255, 256, 257, 700, 1000];
    let i = 0;
    for (const size of sizes) {
      const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
      expect(w.size).toBe(i);
      for (; i < size; i++) w.append(entry(i));
      await w.checkpoint();
    }
    const last = (await LogWriter.open({ dir, origin: ORIGIN, signer })).checkpointed.checkpoint;
    expect(last.size).toBe(1000);
    expect(last.root).toEqual(rootOf(Array.from({ length: 1000 }, (_, k) => entry(k))));
    expect(existsSync(join(dir, 'tile/0/002.p/188'))).toBe(true);
    expect(existsSync(join(dir, 'tile/entries/000.p/1'))).toBe(true);
  });

  it('refuses to reopen a folder whose frontier tiles do not hash to the checkpoint, or another origin, or a checkpoint by another key', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 300; i++) w.append(entry(i));
    await w.checkpoint();
    await expect(LogWriter.open({ dir, origin: 'other.test/log', signer })).rejects.toThrow(/origin "example\.test\/aer1", not "other\.test\/log"/);
    await expect(LogWriter.open({ dir, origin: ORIGIN, signer: generateSignerKey(ORIGIN).signer })).rejects.toThrow(/not signed by this log's key/);
    const headless = newDir();
    cpSync(join(dir, 'tile'), join(headless, 'tile'), { recursive: true });
    await expect(LogWriter.open({ dir: headless, origin: ORIGIN, signer })).rejects.toThrow(/holds tiles but no checkpoint: not starting a new log over them/);
    const tile = join(dir, 'tile/0/001.p/44');
    const bytes = readFileSync(tile);
    bytes[40]! ^= 1;
    writeFileSync(tile, bytes);
    await expect(LogWriter.open({ dir, origin: ORIGIN, signer })).rejects.toThrow(/entry 257 does not hash to its level-0 tile hash/);
  });

  it('replaces a tile a stopped run left past its checkpoint, and refuses other bytes for a checkpointed tile', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 300; i++) w.append(entry(i));
    await w.checkpoint();
    writeFileSync(join(dir, 'tile/0/001'), Buffer.alloc(8192, 9));
    for (let i = 300; i < 600; i++) w.append(entry(i));
    await w.checkpoint();
    expect((await LogWriter.open({ dir, origin: ORIGIN, signer })).checkpointed.checkpoint.root).toEqual(rootOf(Array.from({ length: 600 }, (_, k) => entry(k))));
    await expect(writeTile(dir, 'tile/0/000', Buffer.alloc(8192, 1), true)).rejects.toThrow(/a checkpointed tile is immutable/);
    await expect(writeTile(dir, 'tile/0/000', readFileSync(join(dir, 'tile/0/000')), true)).resolves.toBeNull();
    expect(files(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('reopens from a checkpoint kept before a crash left the live file one behind: the kept size stands, no index is reused, no entry lost', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 242; i++) w.append(entry(i));
    await w.checkpoint();
    const live242 = readFileSync(join(dir, 'checkpoint'));
    for (let i = 242; i < 287; i++) w.append(entry(i));
    const kept = await w.checkpoint();
    // what a crash after keeping checkpoints/287 and before renaming the live file leaves
    writeFileSync(join(dir, 'checkpoint'), live242);
    const again = await LogWriter.open({ dir, origin: ORIGIN, signer });
    expect(again.checkpointed).toMatchObject({ note: kept, checkpoint: { size: 287 } });
    expect(readFileSync(join(dir, 'checkpoint'), 'utf8')).toBe(kept);
    expect(again.append(entry(287))).toBe(287);
    await again.checkpoint();
    const all = Array.from({ length: 288 }, (_, k) => entry(k));
    expect(again.entries(0, 288)).toEqual(all.map(encodeEntry));
    expect(again.checkpointed.checkpoint.root).toEqual(rootOf(all));
    expect(again.history.sizesAfter(-1, 10)).toEqual([0, 242, 287, 288]);
  });

  it('refuses to reopen from a kept checkpoint the tiles do not hash to', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 10; i++) w.append(entry(i));
    await w.checkpoint();
    const live10 = readFileSync(join(dir, 'checkpoint'));
    for (let i = 10; i < 20; i++) w.append(entry(i));
    await w.checkpoint();
    writeFileSync(join(dir, 'checkpoint'), live10);
    // a note of this log's key over another tree of 20
    writeFileSync(join(dir, 'checkpoints/20'), signCheckpoint({ origin: ORIGIN, size: 20, root: Buffer.alloc(32, 7), extensions: [] }, signer));
    await expect(LogWriter.open({ dir, origin: ORIGIN, signer })).rejects.toThrow(/checkpoints\/20\.root: the tiles under .* do not hash to the checkpoint's root/);
    expect(readFileSync(join(dir, 'checkpoint'))).toEqual(live10);
  });

  it('a checkpoint whose tiles cannot be written lists no size and leaves the live checkpoint; reopened, the writer checkpoints the same entries', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 300; i++) w.append(entry(i));
    const at300 = await w.checkpoint();
    for (let i = 300; i < 344; i++) w.append(entry(i));
    // a folder where the new size's bundle goes: its write fails
    mkdirSync(join(dir, 'tile/entries/001.p/88'), { recursive: true });
    await expect(w.checkpoint()).rejects.toThrow(/EISDIR/);
    expect(w.history.sizesAfter(-1, 10)).toEqual([0, 300]);
    expect(readFileSync(join(dir, 'checkpoint'), 'utf8')).toBe(at300);
    expect(files(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    rmSync(join(dir, 'tile/entries/001.p/88'), { recursive: true });
    const again = await LogWriter.open({ dir, origin: ORIGIN, signer });
    expect(again.checkpointed.checkpoint.size).toBe(300);
    for (let i = 300; i < 344; i++) again.append(entry(i));
    await again.checkpoint();
    expect(again.history.sizesAfter(-1, 10)).toEqual([0, 300, 344]);
    expect(again.checkpointed.checkpoint.root).toEqual(rootOf(Array.from({ length: 344 }, (_, k) => entry(k))));
  });

  it('gives inclusion and consistency proofs from the files that check against its checkpoints', async () => {
    const dir = newDir();
    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 0; i < 1000; i++) w.append(entry(i));
    await w.checkpoint();
    const old = w.checkpointed.checkpoint;
    for (let i = 1000; i < 70_123; i++) w.append(entry(i));
    await w.checkpoint();
    const cp = w.checkpointed.checkpoint;
    for (const index of [0, 1, 255, 256, 999, 65_535, 65_536, 70_122]) {
      expect(verifyInclusion(leafHash(encodeEntry(entry(index))), index, cp.size, w.inclusionProof(index), cp.root), `entry ${index}`).toBe(true);
    }
    expect(verifyInclusion(leafHash(encodeEntry(entry(5))), 5, old.size, w.inclusionProof(5, old.size), old.root)).toBe(true);
    expect(verifyConsistency(old.size, cp.size, old.root, cp.root, w.consistencyProof(old.size))).toBe(true);
    expect(w.rootAt(old.size)).toEqual(old.root);
    w.append(entry(1));
    expect(() => w.inclusionProof(70_123, 70_124)).toThrow(/past the last checkpoint/);
  });
});

describe('log key file', () => {
  it('is written 0600 in Go\'s signer-key format, loads back to the same verifier key, and is refused when others can read it', async () => {
    const file = join(root, 'keys/log.key');
    const written = writeLogKeyFile(file, ORIGIN);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^PRIVATE\+KEY\+example\.test\/aer1\+[0-9a-f]{8}\+A[A-Za-z0-9+/]{43}\n$/);
    expect(loadLogKeyFile(file).verifierKey).toBe(written.verifierKey);
    expect(() => writeLogKeyFile(file, ORIGIN)).toThrow(/exists; refusing to overwrite a signing key/);
    chmodSync(file, 0o644);
    expect(() => loadLogKeyFile(file)).toThrow(/^log key file .*log\.key is readable by group or others \(mode 0644\); run: chmod 600/);
    chmodSync(file, 0o600);
    writeFileSync(file, 'PRIVATE+KEY+x+00000000+AAAA\n', { mode: 0o600 });
    expect(() => loadLogKeyFile(file)).toThrow(/^log key file .*log\.key: /);
  });
});
