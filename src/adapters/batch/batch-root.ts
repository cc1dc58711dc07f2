/**
 * The root a batch's witnesses attest: its RFC 6962 tree over its subjects' digests, or, for a
 * batch cut from the anchor log (cut-checkpoint.lua), the root of the signed checkpoint it
 * keeps (docs/log.md, "Witnessing checkpoints").
 */
import { BatchTree } from '../../core/batch/batch-tree.js';
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

export function batchRoot(batch: Pick<BatchInfo, 'digests' | 'fields'>): Buffer {
  return batchCheckpoint(batch.fields)?.root ?? new BatchTree(batch.digests).root;
}
