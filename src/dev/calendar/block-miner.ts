/**
 * The dev calendar's `mine()`: commits everything pending into the next regtest block and
 * hands the upgrades to the commitment book, one mine at a time, so two never build on
 * the same tip.
 */
import type { CommitmentBook } from './commitment-book.js';
import type { DevChain } from './dev-chain.js';

export interface MineResult {
  height: number;
  /** Block hash as explorers and bitcoind print it (reversed internal order). */
  blockHash: string;
  /** Merkle root in internal byte order: the message the Bitcoin attestations commit to. */
  merkleRootHex: string;
  /** The 80-byte header, hex, as written to the headers file. */
  headerHex: string;
  /** How many commitments (aggregation rounds) the block confirmed. */
  count: number;
}

export class BlockMiner {
  private queue: Promise<unknown> = Promise.resolve();
  /** Height of the last block this calendar mined; null before the first. */
  lastHeight: number | null = null;

  constructor(
    private readonly book: CommitmentBook,
    private readonly chain: DevChain,
  ) {}

  /** Mines after any mine still running (whether it succeeds or fails). */
  mine(): Promise<MineResult> {
    const run = this.queue.catch(() => undefined).then(() => this.mineNow());
    this.queue = run;
    return run;
  }

  private async mineNow(): Promise<MineResult> {
    const { keys, commitments } = this.book.pendingCommitments();
    const block = await this.chain.extend(commitments);
    this.book.confirm(keys, block.upgrades);
    this.lastHeight = block.height;
    return {
      height: block.height,
      blockHash: Buffer.from(block.hash).reverse().toString('hex'),
      merkleRootHex: block.merkleRoot.toString('hex'),
      headerHex: block.header.toString('hex'),
      count: commitments.length,
    };
  }
}
