/**
 * The root a batch's witnesses attest: its RFC 6962 tree over its subjects' digests, or, for a
 * batch cut from the anchor log (cut-checkpoint.lua), the root of the signed checkpoint it
 * keeps (docs/log.md, "Witnessing checkpoints").
 */
import { BatchTree } from '../../core/batch/batch-tree.js';
import { sha256 } from '../../core/aer1/hash.js';
import { readCheckpointNote } from '../../core/nostr/events.js';
import type { BatchInfo } from '../state/batches.js';

/** A batch's checkpoint: the tree size it covers, its signed note and root. */
export interface BatchCheckpoint {
  size: number;
  note: string;
  root: Buffer;
}

/** The checkpoint of a batch cut from the anchor log, or null for a batch of digests. */
export function batchCheckpoint(fields: Readonly<Record<string, string>>): BatchCheckpoint | null {
  const note = fields.note;
  if (fields.cp === undefined || note === undefined) return null;
  const { checkpoint } = readCheckpointNote(note, 'batch checkpoint');
  if (checkpoint.size !== Number(fields.cp)) throw new Error(`batch checkpoint of size ${checkpoint.size}, recorded as ${fields.cp}`);
  return { size: checkpoint.size, note, root: checkpoint.root };
}

/** Roots of the batches of digests built lately, by SHA-256 of their digests in order (a small LRU). */
const ROOTS_MAX = 64;
const roots = new Map<string, Buffer>();

/**
 * The root of a batch's tree over its digests, built once per process for a list of 32-byte
 * digests: every OTS poll of a batch, its Nostr event and its NIP-03 events ask for it again,
 * and one hash over the list costs a fraction of the tree (2n − 1 hashes).
 */
function treeRoot(digests: readonly Buffer[]): Buffer {
  if (!digests.every((d) => d.length === 32)) return new BatchTree(digests).root;
  const key = sha256(Buffer.concat(digests)).toString('base64');
  const hit = roots.get(key);
  if (hit !== undefined) {
    roots.delete(key);
    roots.set(key, hit);
    return Buffer.from(hit);
  }
  const root = new BatchTree(digests).root;
  roots.set(key, Buffer.from(root));
  if (roots.size > ROOTS_MAX) roots.delete(roots.keys().next().value!);
  return root;
}

export function batchRoot(batch: Pick<BatchInfo, 'digests' | 'fields'>): Buffer {
  return batchCheckpoint(batch.fields)?.root ?? treeRoot(batch.digests);
}
