/**
 * Every checkpoint a log folder published is kept (checkpoints/<size> and the sizes list),
 * so a subject's proof is built against the first checkpoint that covers it: the one its
 * witnesses attested soonest. A sizes list cut short by a crash mends itself.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey, parseVerifierKey } from '../../src/core/log/note.js';
import { verifyInclusion } from '../../src/core/log/proof.js';
import { leafHash } from '../../src/core/log/rfc6962.js';
import { encodeEntry, type LogEntry } from '../../src/core/log/entry.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { checkpointEvent, isCheckpointEvent, readCheckpointNote, verifySignedEvent } from '../../src/core/nostr/events.js';
import { CheckpointHistory } from '../../src/adapters/log/checkpoint-history.js';
import { LogFolder } from '../../src/adapters/log/log-folder.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';

const root = mkdtempSync(join(tmpdir(), 'aer1-cp-history-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ORIGIN = 'example.test/aer1';
const signer = generateSignerKey(ORIGIN).signer;
const entry = (i: number): LogEntry => ({ digest: createHash('sha256').update(`s${i}`).digest(), kind: 'receipt', key: `k${i}` });

/** A log in `dir` checkpointed after each group of the given sizes. */
async function grow(dir: string, groups: number[]): Promise<LogWriter> {
  const writer = await LogWriter.open({ dir, origin: ORIGIN, signer });
  let i = writer.size;
  for (const n of groups) {
    for (let j = 0; j < n; j++) writer.append(entry(i++));
    await writer.checkpoint();
  }
  return writer;
}

describe('checkpoint history', () => {
  it('gives each entry the first checkpoint covering it, with a path that checks against that checkpoint', async () => {
    const dir = join(root, 'a');
    await grow(dir, [3, 1, 300, 5]); // sizes 3, 4, 304, 309
    const folder = new LogFolder(dir);
    const vkey = parseVerifierKey(signer.verifierKey);
    for (const [index, size] of [[0, 3], [2, 3], [3, 4], [4, 304], [303, 304], [304, 309], [308, 309]] as const) {
      const cp = folder.checkpointCovering(index);
      expect(cp?.size, `index ${index}`).toBe(size);
      const opened = openCheckpoint(cp!.note, [vkey]);
      expect(opened.ok).toBe(true);
      const path = folder.inclusion(index, size);
      expect(verifyInclusion(leafHash(encodeEntry(entry(index))), index, size, path, opened.checkpoint.root)).toBe(true);
    }
    expect(folder.checkpointCovering(309)).toBeNull();
    expect(new CheckpointHistory(dir).sizesAfter(3, 10)).toEqual([4, 304, 309]);
  });

  it('mends a sizes list cut short by a crash, and lists the live checkpoint on reopening', async () => {
    const dir = join(root, 'b');
    await grow(dir, [2, 2]);
    const sizes = join(dir, 'checkpoints', 'sizes');
    // the last slot half written, as a crash between the two files leaves it
    truncateSync(sizes, statSync(sizes).size - 5);
    const history = new CheckpointHistory(dir);
    expect(history.last()).toBe(2);
    await grow(dir, [1]); // reopening lists size 4 again, then 5
    expect(history.sizesAfter(-1, 10)).toEqual([0, 2, 4, 5]);
    expect(statSync(sizes).size).toBe(4 * 8);
  });
});

describe('checkpoint events', () => {
  it('carry the signed note as content, its root in x and the marker tag', async () => {
    const dir = join(root, 'c');
    const writer = await grow(dir, [7]);
    const { note, checkpoint } = writer.checkpointed;
    const key = generateSecretKey();
    const event = checkpointEvent({ note, createdAt: 1_790_000_000 }, key);
    expect(verifySignedEvent(JSON.stringify(event)).ok).toBe(true);
    expect(event.content).toBe(note);
    expect(isCheckpointEvent(event)).toBe(true);
    expect(event.tags).toContainEqual(['x', checkpoint.root.toString('hex')]);
    expect(readCheckpointNote(event.content).checkpoint.size).toBe(7);
    expect(() => checkpointEvent({ note: 'not a note', createdAt: 1 }, key)).toThrow(/note/);
  });
});
