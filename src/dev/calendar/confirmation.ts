/**
 * What `POST /mine` computes, as opentimestamps-server's stamper does once its
 * transaction is in a block (otsserver/stamper.py): each pending commitment is hashed,
 * the hashes form one `make_merkle_tree`, its tip goes into a transaction, and the
 * transaction into a block. Each commitment's upgrade is the path commitment → sha256 →
 * tip → `prepend <tx prefix> append <tx suffix> sha256 sha256` (txid) → the block's
 * Merkle tree → Bitcoin attestation at the block height.
 */
import { sha256 } from '../../core/aer1/hash.js';
import { mineHeader, REGTEST_BITS } from './block-header.js';
import { bitcoinMerkleTree, otsMerkleTree } from './merkle-paths.js';
import { append, bitcoinAttestationBytes, opsBytes, prepend, SHA256, type PathOp } from './ots-ops.js';
import { buildSyntheticBlock } from './synthetic-block.js';

export interface MinedBlock {
  height: number;
  header: Buffer;
  /** Block hash in internal byte order. */
  hash: Buffer;
  /** Merkle root in internal byte order: the message every upgrade's attestation commits to. */
  merkleRoot: Buffer;
  /** upgrades[i] is the serialized timestamp starting at commitments[i]. */
  upgrades: Buffer[];
}

export interface MineInput {
  commitments: readonly Buffer[];
  height: number;
  /** Previous block hash, internal byte order. */
  prevHash: Buffer;
  time: number;
  bits?: number;
  fillerTxs?: number;
}

export function mineCommitments(input: MineInput): MinedBlock {
  const { commitments, height } = input;
  const tree = commitments.length > 0 ? otsMerkleTree(commitments.map((c) => sha256(c))) : null;
  const block = buildSyntheticBlock(height, tree ? tree.tip : null, input.fillerTxs ?? 0);
  const txTree = bitcoinMerkleTree(block.txids);
  const { header, hash } = mineHeader({
    version: 0x20000000,
    prevHash: input.prevHash,
    merkleRoot: txTree.tip,
    time: input.time,
    bits: input.bits ?? REGTEST_BITS,
  });
  const upgrades: Buffer[] = [];
  if (tree && block.commitmentTx) {
    const { prefix, suffix } = block.commitmentTx;
    const toBlock: PathOp[] = [prepend(prefix), append(suffix), SHA256, SHA256, ...txTree.paths[block.commitmentIndex]!];
    const tail = Buffer.concat([opsBytes(toBlock), bitcoinAttestationBytes(height)]);
    for (let i = 0; i < commitments.length; i++) {
      upgrades.push(Buffer.concat([opsBytes([SHA256, ...tree.paths[i]!]), tail]));
    }
  }
  return { height, header, hash, merkleRoot: txTree.tip, upgrades };
}
