/**
 * A timestamp: a message, the attestations that commit to it, and ops leading to child
 * timestamps (python-opentimestamps `Timestamp`). Branches built here are kept in
 * python-opentimestamps' canonical order (attestations sorted, then ops sorted), so what
 * we write re-serializes byte for byte in both reference readers; a parsed file keeps
 * the order it was written in, so it round-trips byte for byte too.
 *
 * Nothing here recurses: merging and walking use explicit stacks.
 */
import { type Attestation, compareAttestations } from './attestations.js';
import { OtsFormatError } from './errors.js';
import { type Op, MAX_MSG_LENGTH, applyOp, compareOps, opsEqual } from './ops.js';

export interface OpBranch {
  readonly op: Op;
  readonly timestamp: Timestamp;
}

export class Timestamp {
  readonly msg: Buffer;
  private readonly atts: Attestation[] = [];
  private readonly branches: OpBranch[] = [];

  constructor(msg: Uint8Array) {
    if (msg.length > MAX_MSG_LENGTH) {
      throw new OtsFormatError('ots_message_too_long', `a ${msg.length}-byte message exceeds ${MAX_MSG_LENGTH} bytes`);
    }
    this.msg = Buffer.from(msg);
  }

  get attestations(): readonly Attestation[] {
    return this.atts;
  }

  get ops(): readonly OpBranch[] {
    return this.branches;
  }

  /** No attestation and no op: such a node cannot be serialized. */
  get isEmpty(): boolean {
    return this.atts.length === 0 && this.branches.length === 0;
  }

  /** Adds an attestation at its canonical place; false when an equal one is already here. */
  addAttestation(a: Attestation): boolean {
    let at = this.atts.length;
    for (let i = 0; i < this.atts.length; i++) {
      const c = compareAttestations(this.atts[i]!, a);
      if (c === 0) return false;
      if (c > 0) {
        at = i;
        break;
      }
    }
    this.atts.splice(at, 0, a);
    return true;
  }

  /** The child reached by `op`, if this node has that branch. */
  child(op: Op): Timestamp | undefined {
    return this.branches.find((b) => opsEqual(b.op, op))?.timestamp;
  }

  /** The child reached by `op`: the existing one, or a new empty one at its canonical place. */
  addOp(op: Op): Timestamp {
    const existing = this.child(op);
    if (existing) return existing;
    const child = new Timestamp(applyOp(op, this.msg));
    this.insertBranch(op, child);
    return child;
  }

  /**
   * Makes `child` the timestamp reached by `op` (replacing any existing branch for that
   * op), as python's `ts.ops[op] = child`. The child is shared, not copied: later changes
   * to it show in every tree that holds it.
   */
  setOp(op: Op, child: Timestamp): void {
    const result = applyOp(op, this.msg);
    if (!result.equals(child.msg)) {
      throw new OtsFormatError('ots_message_mismatch', `${op.kind} of ${this.msg.toString('hex')} is not the child's message ${child.msg.toString('hex')}`);
    }
    const i = this.branches.findIndex((b) => opsEqual(b.op, op));
    if (i >= 0) this.branches[i] = { op, timestamp: child };
    else this.insertBranch(op, child);
  }

  /**
   * Adds every attestation and op of `other` (same message) to this timestamp, copying
   * the nodes this one lacks (python `Timestamp.merge`).
   */
  merge(other: Timestamp): void {
    if (!this.msg.equals(other.msg)) {
      throw new OtsFormatError('ots_message_mismatch', `cannot merge a timestamp for ${other.msg.toString('hex')} into one for ${this.msg.toString('hex')}`);
    }
    const stack: Array<[Timestamp, Timestamp]> = [[this, other]];
    for (let pair = stack.pop(); pair; pair = stack.pop()) {
      const [ours, theirs] = pair;
      if (ours === theirs) continue;
      for (const a of theirs.atts) ours.addAttestation(a);
      for (const b of theirs.branches) {
        let mine = ours.child(b.op);
        if (!mine) {
          // Same op on the same message: the result is their child's message.
          mine = new Timestamp(b.timestamp.msg);
          ours.insertBranch(b.op, mine);
        }
        stack.push([mine, b.timestamp]);
      }
    }
  }

  private insertBranch(op: Op, child: Timestamp): void {
    let at = this.branches.length;
    for (let i = 0; i < this.branches.length; i++) {
      if (compareOps(this.branches[i]!.op, op) > 0) {
        at = i;
        break;
      }
    }
    this.branches.splice(at, 0, { op, timestamp: child });
  }

  /** @internal The parser's way in: appends in file order (checks are the parser's). */
  static pushParsed(node: Timestamp, branch: Attestation | OpBranch): void {
    if ('op' in branch) node.branches.push(branch);
    else node.atts.push(branch);
  }
}

/** Visits every node once per path, depth first in serialization order, without recursion. */
export function walk(root: Timestamp, visit: (node: Timestamp, depth: number) => void): void {
  const stack: Array<[Timestamp, number]> = [[root, 0]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    visit(node, depth);
    for (let i = node.ops.length - 1; i >= 0; i--) stack.push([node.ops[i]!.timestamp, depth + 1]);
  }
}

export interface AttestedMessage {
  /** The message the attestation commits to (for Bitcoin: the block's merkle root, internal order). */
  msg: Buffer;
  attestation: Attestation;
}

/** Every attestation with the message it attests, in serialization order. */
export function allAttestations(ts: Timestamp): AttestedMessage[] {
  const out: AttestedMessage[] = [];
  walk(ts, (node) => {
    for (const attestation of node.attestations) out.push({ msg: node.msg, attestation });
  });
  return out;
}

export interface PendingCommitment {
  uri: string;
  /** What to ask the calendar about: `GET {uri}/timestamp/{hex commitment}`. */
  commitment: Buffer;
}

export function pendingAttestations(ts: Timestamp): PendingCommitment[] {
  const out: PendingCommitment[] = [];
  for (const { msg, attestation } of allAttestations(ts)) {
    if (attestation.kind === 'pending') out.push({ uri: attestation.uri, commitment: msg });
  }
  return out;
}

export interface BitcoinCommitment {
  height: number;
  /** The block's merkle root this proof claims, internal byte order. */
  merkleRoot: Buffer;
}

export function bitcoinAttestations(ts: Timestamp): BitcoinCommitment[] {
  const out: BitcoinCommitment[] = [];
  for (const { msg, attestation } of allAttestations(ts)) {
    if (attestation.kind === 'bitcoin') out.push({ height: attestation.height, merkleRoot: msg });
  }
  return out;
}

