/**
 * The synthetic regtest block `POST /mine` commits to: a coinbase carrying the height
 * (BIP 34), then one transaction whose OP_RETURN output holds the tip of the calendar's
 * commitment tree, then optional filler transactions. Transactions are real legacy
 * serializations, so python-bitcoinlib parses them and txid = double SHA-256.
 */
import { sha256 } from '../../core/aer1/hash.js';
import { sha256d } from './block-header.js';
import { varuint } from './ots-ops.js';

export interface CommitmentTx {
  /** tx bytes before the tip. */
  prefix: Buffer;
  /** tx bytes after the tip. */
  suffix: Buffer;
  txid: Buffer;
}

export interface SyntheticBlock {
  /** txids in block order (internal byte order). */
  txids: Buffer[];
  /** Index of the commitment tx in `txids`, or -1 in an empty block. */
  commitmentIndex: number;
  commitmentTx: CommitmentTx | null;
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

function u64le(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
}

/** Minimal script push of a small non-negative number, as BIP 34 wants the height. */
function scriptNum(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  while (v > 0) {
    bytes.push(v & 0xff);
    v = Math.floor(v / 256);
  }
  if (bytes.length > 0 && (bytes[bytes.length - 1]! & 0x80) !== 0) bytes.push(0);
  return Buffer.concat([Buffer.from([bytes.length]), Buffer.from(bytes)]);
}

function script(bytes: Buffer): Buffer {
  return Buffer.concat([varuint(bytes.length), bytes]);
}

function coinbaseTx(height: number, tag: string): Buffer {
  const scriptSig = Buffer.concat([scriptNum(height), Buffer.from([tag.length]), Buffer.from(tag, 'ascii')]);
  return Buffer.concat([
    u32le(1),
    Buffer.from([1]),
    Buffer.alloc(32),
    u32le(0xffffffff),
    script(scriptSig),
    u32le(0xffffffff),
    Buffer.from([1]),
    u64le(5_000_000_000n),
    script(Buffer.from([0x51])), // OP_TRUE
    u32le(0),
  ]);
}

function spendingTx(prevTxid: Buffer, outputScript: Buffer, lockTime: number): Buffer {
  return Buffer.concat([
    u32le(2),
    Buffer.from([1]),
    prevTxid,
    u32le(0),
    script(Buffer.alloc(0)),
    u32le(0xfffffffd),
    Buffer.from([1]),
    u64le(0n),
    script(outputScript),
    u32le(lockTime),
  ]);
}

export function buildSyntheticBlock(height: number, tip: Buffer | null, fillerTxs = 0): SyntheticBlock {
  const coinbase = coinbaseTx(height, 'aer1-dev-calendar');
  const txids = [sha256d(coinbase)];
  let commitmentTx: CommitmentTx | null = null;
  if (tip) {
    if (tip.length !== 32) throw new RangeError('the commitment tip is 32 bytes');
    // OP_RETURN <32-byte push>; the funding outpoint is made up but unique per height.
    const outputScript = Buffer.concat([Buffer.from([0x6a, 0x20]), tip]);
    const tx = spendingTx(sha256(Buffer.from(`aer1-dev-calendar funding ${height}`)), outputScript, height - 1);
    const at = tx.length - 4 - 32;
    commitmentTx = { prefix: tx.subarray(0, at), suffix: tx.subarray(at + 32), txid: sha256d(tx) };
    txids.push(commitmentTx.txid);
  }
  for (let i = 0; i < fillerTxs; i++) {
    const filler = spendingTx(sha256(Buffer.from(`aer1-dev-calendar filler ${height} ${i}`)), Buffer.from([0x51]), 0);
    txids.push(sha256d(filler));
  }
  return { txids, commitmentIndex: tip ? 1 : -1, commitmentTx };
}
