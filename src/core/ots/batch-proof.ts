/**
 * Batch proofs (SPEC §4.2): one calendar timestamp on the batch root, one standard
 * detached `.ots` per subject whose file digest is the subject's `d`. The path from `d`
 * to the root is the RFC 6962 inclusion path written as OTS ops:
 *   leaf  = SHA-256(0x00 || d)          → prepend 00, sha256
 *   node  = SHA-256(0x01 || L || R)
 *     sibling on the right → prepend 01, append R, sha256
 *     sibling on the left  → prepend L, prepend 01, sha256
 * The last sha256 lands on the root timestamp itself, shared (not copied): the daemon
 * keeps one root timestamp per batch and builds each subject's proof on demand.
 */
import { BatchTree, pathSteps } from '../batch/batch-tree.js';
import { DetachedTimestampFile } from './codec.js';
import { OtsFormatError } from './errors.js';
import { type Op, SHA256, append, prepend } from './ops.js';
import { Timestamp } from './timestamp.js';

const LEAF_PREFIX = prepend(Uint8Array.of(0x00));
const NODE_PREFIX = prepend(Uint8Array.of(0x01));

/**
 * The ops from `d` to the batch root for leaf `index` of `size`, given its inclusion path.
 * `leafSuffix`: what the leaf holds after `d`, for a leaf that is an anchor log entry
 * (`d ‖ kind ‖ key`, docs/log.md): leaf = SHA-256(0x00 ‖ d ‖ suffix) → prepend 00, append
 * the suffix, sha256.
 */
export function subjectOps(index: number, size: number, path: readonly Uint8Array[], leafSuffix?: Uint8Array): Op[] {
  const steps = pathSteps(index, size, path);
  if (!steps) throw new RangeError(`inclusion path of ${path.length} hashes does not fit leaf ${index} of ${size}`);
  const ops: Op[] = leafSuffix && leafSuffix.length > 0 ? [LEAF_PREFIX, append(leafSuffix), SHA256] : [LEAF_PREFIX, SHA256];
  for (const step of steps) {
    if (step.side === 'right') ops.push(NODE_PREFIX, append(step.hash), SHA256);
    else ops.push(prepend(step.hash), NODE_PREFIX, SHA256);
  }
  return ops;
}

/**
 * A timestamp on `digest` made of the chain of ops to the batch root; returns the head
 * (on `digest`) and the tip (on the root, still empty: attach attestations or merge the
 * calendar answers into it before writing).
 */
export function subjectTimestamp(digest: Uint8Array, index: number, size: number, path: readonly Uint8Array[]): { head: Timestamp; tip: Timestamp } {
  const head = new Timestamp(digest);
  let tip = head;
  for (const op of subjectOps(index, size, path)) tip = tip.addOp(op);
  return { head, tip };
}

function checkDigest(digest: Uint8Array): void {
  if (digest.length !== 32) throw new OtsFormatError('ots_bad_message', `a subject digest is 32 bytes (SHA-256), got ${digest.length}`);
}

/**
 * The detached proof for one subject: file digest `digest` (sha256), the ops of its
 * inclusion path, then `rootTimestamp` (shared by reference). Throws when the path does
 * not lead to `rootTimestamp.msg`. `leafSuffix` as for subjectOps (a log entry's kind ‖ key).
 */
export function proofForSubject(
  digest: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
  rootTimestamp: Timestamp,
  leafSuffix?: Uint8Array,
): DetachedTimestampFile {
  checkDigest(digest);
  const ops = subjectOps(index, size, path, leafSuffix);
  const head = new Timestamp(digest);
  let node = head;
  for (let i = 0; i < ops.length - 1; i++) node = node.addOp(ops[i]!);
  // setOp checks that the last sha256 gives exactly the root's message.
  try {
    node.setOp(ops[ops.length - 1]!, rootTimestamp);
  } catch (err) {
    if (err instanceof OtsFormatError && err.code === 'ots_message_mismatch') {
      throw new OtsFormatError('ots_message_mismatch', `the inclusion path of leaf ${index} of ${size} does not lead to the root timestamp's message ${rootTimestamp.msg.toString('hex')}`);
    }
    throw err;
  }
  return new DetachedTimestampFile('sha256', head);
}

/** One proof per subject, in order, all sharing `rootTimestamp` (on the batch tree's root). */
export function batchProofs(digests: readonly Uint8Array[], rootTimestamp: Timestamp): DetachedTimestampFile[] {
  digests.forEach(checkDigest);
  const tree = new BatchTree(digests);
  if (!tree.root.equals(rootTimestamp.msg)) {
    throw new OtsFormatError('ots_message_mismatch', `the root timestamp is on ${rootTimestamp.msg.toString('hex')}, the batch root is ${tree.root.toString('hex')}`);
  }
  return digests.map((d, i) => proofForSubject(d, i, tree.size, tree.path(i), rootTimestamp));
}
