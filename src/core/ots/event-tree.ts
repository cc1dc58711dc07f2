/**
 * NIP-03 without an extra calendar submission: in envelope mode a batch commits to its
 * subjects' digests and to their Nostr event ids at once. The batch's subject tree (root
 * R_s over d_0..d_{n-1}, SPEC §4.2) and an event tree (root R_e, the same RFC 6962 tree
 * over the event ids e_0..e_{k-1}, in batch order) are joined by one more hash, with a
 * prefix no RFC 6962 leaf (0x00) or node (0x01) uses, so R is never also a tree node:
 *
 *     R = SHA-256(0x02 || R_s || R_e)
 *
 * and R is what the calendars timestamp. A subject's proof is unchanged up to R_s, then
 * `prepend 02, append R_e, sha256` reaches R; an event id's proof is its inclusion path
 * to R_e, then `prepend R_s, prepend 02, sha256`. Both are standard `.ots` files. Pure.
 */
import { createHash } from 'node:crypto';
import { BatchTree } from '../batch/batch-tree.js';
import { subjectOps } from './batch-proof.js';
import { DetachedTimestampFile } from './codec.js';
import { OtsFormatError } from './errors.js';
import { SHA256, append, prepend, type Op } from './ops.js';
import { Timestamp, walk } from './timestamp.js';
import type { Attestation } from './attestations.js';

/** The join's domain prefix: neither an RFC 6962 leaf (0x00) nor node (0x01). */
export const JOIN_PREFIX = 0x02;
const JOIN = Uint8Array.of(JOIN_PREFIX);

/** The message the calendars timestamp for a batch with an event tree. */
export function joinedRoot(subjectsRoot: Uint8Array, eventsRoot: Uint8Array): Buffer {
  return createHash('sha256').update(JOIN).update(subjectsRoot).update(eventsRoot).digest();
}

/** Ops from the subject root R_s to the joined root R. */
export function subjectsToJoined(eventsRoot: Uint8Array): Op[] {
  return [prepend(JOIN), append(eventsRoot), SHA256];
}

/** Ops from the event root R_e to the joined root R. */
export function eventsToJoined(subjectsRoot: Uint8Array): Op[] {
  return [prepend(subjectsRoot), prepend(JOIN), SHA256];
}

/** The root of the event tree over `eventIds` (32 bytes each), or null when there are none. */
export function eventsRootOf(eventIds: readonly Uint8Array[]): Buffer | null {
  if (eventIds.length === 0) return null;
  for (const e of eventIds) {
    if (e.length !== 32) throw new OtsFormatError('ots_bad_message', `an event id is 32 bytes, got ${e.length}`);
  }
  return new BatchTree(eventIds).root;
}

/**
 * A copy of `node` holding only the path to one attestation `keep` accepts (given the
 * attestation and the message it attests; the first found, depth first), or null when none
 * does. NIP-03 asks for a single Bitcoin
 * attestation and no pending ones.
 */
export function prunedTo(node: Timestamp, keep: (a: Attestation, msg: Buffer) => boolean): Timestamp | null {
  // Depth-first with the path of ops that led to each node; no recursion.
  const stack: Array<{ ts: Timestamp; path: Op[] }> = [{ ts: node, path: [] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const at = item.ts;
    const found = at.attestations.find((a) => keep(a, at.msg));
    if (found) {
      const head = new Timestamp(node.msg);
      let tip = head;
      for (const op of item.path) tip = tip.addOp(op);
      tip.addAttestation(found);
      return head;
    }
    for (let i = item.ts.ops.length - 1; i >= 0; i--) {
      const b = item.ts.ops[i]!;
      stack.push({ ts: b.timestamp, path: [...item.path, b.op] });
    }
  }
  return null;
}

/** The node of `root`'s tree whose message is `msg`, or null. */
export function findNode(root: Timestamp, msg: Uint8Array): Timestamp | null {
  let found: Timestamp | null = null;
  walk(root, (n) => {
    if (!found && n.msg.equals(msg)) found = n;
  });
  return found;
}

/**
 * The detached proof of leaf `index` of `events` (the event tree; file digest = that
 * event id): its inclusion path, the join with `subjectsRoot`, then `joined` (a timestamp
 * on R, shared). Build the tree once per batch: it is the same for every event.
 */
export function eventIdProof(events: BatchTree, eventId: Uint8Array, index: number, subjectsRoot: Uint8Array, joined: Timestamp): DetachedTimestampFile {
  const ops = [...subjectOps(index, events.size, events.path(index)), ...eventsToJoined(subjectsRoot)];
  const head = new Timestamp(eventId);
  let node = head;
  for (let i = 0; i < ops.length - 1; i++) node = node.addOp(ops[i]!);
  // setOp checks that the last sha256 gives exactly the joined root's message.
  node.setOp(ops[ops.length - 1]!, joined);
  return new DetachedTimestampFile('sha256', head);
}
