/**
 * The two Merkle trees a calendar proof walks through, as linear op paths per leaf:
 * the calendar's own tree (python-opentimestamps `make_merkle_tree`: adjacent pairs,
 * an odd last node carried up, each step `append|prepend <32>` then `sha256`), and a
 * Bitcoin block's transaction tree (`make_btc_block_merkle_tree`: an odd last node is
 * paired with a copy of itself, each step then `sha256 sha256`).
 */
import { sha256 } from '../../core/aer1/hash.js';
import { append, prepend, SHA256, type PathOp } from './ots-ops.js';

export interface MerklePaths {
  /** The tip (root) message. */
  tip: Buffer;
  /** paths[i] leads from leaves[i] to the tip. */
  paths: PathOp[][];
}

interface Node {
  msg: Buffer;
  leaves: number[];
}

function pair(left: Node, right: Node, paths: PathOp[][], rounds: number): Node {
  let msg: Buffer = Buffer.concat([left.msg, right.msg]);
  for (let r = 0; r < rounds; r++) msg = sha256(msg);
  const hashes: PathOp[] = Array.from({ length: rounds }, () => SHA256);
  for (const i of left.leaves) paths[i]!.push(append(right.msg), ...hashes);
  for (const i of right.leaves) paths[i]!.push(prepend(left.msg), ...hashes);
  return { msg, leaves: [...left.leaves, ...right.leaves] };
}

function start(leaves: readonly Buffer[]): { nodes: Node[]; paths: PathOp[][] } {
  if (leaves.length === 0) throw new RangeError('a Merkle tree needs at least one leaf');
  return {
    nodes: leaves.map((msg, i) => ({ msg, leaves: [i] })),
    paths: leaves.map(() => []),
  };
}

/** python-opentimestamps `make_merkle_tree(stamps, cat_sha256)`. */
export function otsMerkleTree(leaves: readonly Buffer[]): MerklePaths {
  let { nodes, paths } = start(leaves);
  while (nodes.length > 1) {
    const next: Node[] = [];
    for (let i = 0; i + 1 < nodes.length; i += 2) next.push(pair(nodes[i]!, nodes[i + 1]!, paths, 1));
    if (nodes.length % 2 === 1) next.push(nodes[nodes.length - 1]!);
    nodes = next;
  }
  return { tip: nodes[0]!.msg, paths };
}

/** Bitcoin's transaction Merkle tree over txids (internal byte order), with paths. */
export function bitcoinMerkleTree(txids: readonly Buffer[]): MerklePaths {
  let { nodes, paths } = start(txids);
  while (nodes.length > 1) {
    // Satoshi's rule: an odd level pairs its last node with a copy of itself.
    if (nodes.length % 2 === 1) nodes = [...nodes, { msg: nodes[nodes.length - 1]!.msg, leaves: [] }];
    const next: Node[] = [];
    for (let i = 0; i < nodes.length; i += 2) next.push(pair(nodes[i]!, nodes[i + 1]!, paths, 2));
    nodes = next;
  }
  return { tip: nodes[0]!.msg, paths };
}
