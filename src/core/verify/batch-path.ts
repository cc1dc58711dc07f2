/**
 * Stage `batch-path` (batch mode, SPEC §4.1, §5, §6.5): the event content is the canonical
 * batch JSON; the RFC 9162 inclusion path leads from d to its `batch_root`; its
 * `leaf_count` is the path's batch size; an `x` tag names the batch root. A checkpoint
 * event (the anchor log on, docs/log.md) carries a signed checkpoint note instead: the
 * subject's log entry, rebuilt from the envelope, leads by the path (at its log index, in
 * the tree of the note's size) to the note's root, the `x` tag names that root, and the
 * note's signature is held against the log keys the caller trusts (`--log-key`).
 */
import { isObject } from '../aer1/fields.js';
import { isHex64 } from '../aer1/hash.js';
import { jsonTextDepth, listBounded, MAX_JSON_DEPTH, quoteBounded } from '../aer1/json-limits.js';
import { rootFromPath } from '../batch/batch-tree.js';
import type { BatchInclusion, NostrEventJson } from '../proof/format.js';
import { BATCH_CONTENT_TYPE, BATCH_TREE, batchContent, isCheckpointEvent } from '../nostr/events.js';
import type { Envelope } from '../envelope/envelope.js';
import type { VerifierKey } from '../log/note.js';
import { checkEntryInCheckpoint } from './log.js';
import { xTags } from './nostr.js';
import { fail, pass, skip, type CheckResult } from './types.js';

interface BatchContent {
  anchored_at: string;
  batch_root: string;
  leaf_count: number;
}

/** The event content as canonical batch JSON, or the reason it is not. */
function readBatchContent(content: string): BatchContent | string {
  if (jsonTextDepth(content) > MAX_JSON_DEPTH) return `the event content is nested deeper than ${MAX_JSON_DEPTH} levels (expected the canonical batch JSON)`;
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return 'the event content is not JSON (expected the canonical batch JSON)';
  }
  if (!isObject(value)) return 'the event content is not a JSON object';
  if (value.type !== BATCH_CONTENT_TYPE) return `the event content has type ${quoteBounded(value.type)}, expected "${BATCH_CONTENT_TYPE}"`;
  if (value.tree !== BATCH_TREE) return `the event content has tree ${quoteBounded(value.tree)}, expected "${BATCH_TREE}"`;
  if (!isHex64(value.batch_root)) return 'the event content\'s batch_root is not 64 lowercase hex characters';
  if (typeof value.leaf_count !== 'number' || !Number.isSafeInteger(value.leaf_count) || value.leaf_count < 1) {
    return 'the event content\'s leaf_count is not a positive integer';
  }
  if (typeof value.anchored_at !== 'string') return 'the event content\'s anchored_at is not a string';
  const c: BatchContent = { anchored_at: value.anchored_at, batch_root: value.batch_root, leaf_count: value.leaf_count };
  if (batchContent(c.anchored_at, c.batch_root, c.leaf_count) !== content) {
    return 'the event content is not the canonical batch JSON (extra members, or not canonical bytes)';
  }
  return c;
}

/** What a checkpoint event's path is checked with: the envelope its entry is rebuilt from, and the log keys the caller trusts. */
export interface CheckpointPathContext {
  envelope: Envelope | null;
  logKeys: readonly VerifierKey[];
}

export function checkBatchPath(event: NostrEventJson | null, batch: BatchInclusion, digest: Buffer | null, log: CheckpointPathContext = { envelope: null, logKeys: [] }): CheckResult {
  if (!event) return skip('batch-path', 'no event');
  if (digest === null) return skip('batch-path', 'no envelope digest to start from (see digest)');
  if (isCheckpointEvent(event)) return checkCheckpointPath(event, batch, digest, log);
  const content = readBatchContent(event.content);
  if (typeof content === 'string') return fail('batch-path', content);
  const { index, size, path } = batch;
  const root = rootFromPath(digest, index, size, path.map((h) => Buffer.from(h, 'hex')));
  if (!root) return fail('batch-path', `an inclusion path of ${path.length} hashes does not fit leaf ${index} of a batch of ${size}`);
  const rootHex = root.toString('hex');
  if (rootHex !== content.batch_root) {
    return fail('batch-path', `the path leads from d to ${rootHex}, the event's batch_root is ${content.batch_root}`);
  }
  if (content.leaf_count !== size) {
    return fail('batch-path', `the event's leaf_count is ${content.leaf_count}, the path is for a batch of ${size}`);
  }
  const x = xTags(event);
  if (!x.includes(content.batch_root)) {
    return fail('batch-path', x.length ? `the x tag ${listBounded(x)} is not the batch root ${content.batch_root}` : 'the event has no x tag naming the batch root');
  }
  return pass('batch-path', `leaf ${index} of ${size}: the path leads from d to batch_root ${content.batch_root}; x tag = batch root`);
}

/** A checkpoint event: the subject's log entry leads by the path to the root of the note the event carries. */
function checkCheckpointPath(event: NostrEventJson, batch: BatchInclusion, digest: Buffer, log: CheckpointPathContext): CheckResult {
  if (!log.envelope) return skip('batch-path', 'checkpoint event: no envelope to rebuild the log entry from (see envelope)');
  const result = checkEntryInCheckpoint('batch-path', { note: event.content, field: 'nostr.event.content', index: batch.index, path: batch.path }, log.envelope, digest, log.logKeys, (cp) => {
    if (cp.size !== batch.size) return `checkpoint event: the path is for a tree of ${batch.size}, the checkpoint's size is ${cp.size}`;
    const x = xTags(event);
    const root = cp.root.toString('hex');
    if (!x.includes(root)) return x.length ? `checkpoint event: the x tag ${listBounded(x)} is not the checkpoint's root ${root}` : 'checkpoint event: no x tag naming the checkpoint\'s root';
    return null;
  });
  return { ...result, detail: result.status === 'FAIL' && result.detail.startsWith('checkpoint event') ? result.detail : `checkpoint event: ${result.detail}${result.status === 'PASS' ? '; x tag = its root' : ''}` };
}
