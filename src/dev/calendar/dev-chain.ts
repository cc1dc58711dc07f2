/**
 * The dev calendar's regtest chain: each mine builds one block on the highest header,
 * either in the shared headers file (under its lock, so several calendars extend one chain)
 * or, without a file, in memory.
 */
import { parseHeader, sha256d } from './block-header.js';
import { mineCommitments, type MinedBlock } from './confirmation.js';
import { readHeadersFile, withHeadersLock, writeHeadersFile } from './headers-file.js';

interface ChainTip {
  height: number;
  hash: Buffer;
  time: number;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function tipOf(headers: Map<number, Buffer>): ChainTip | null {
  let best: number | null = null;
  for (const h of headers.keys()) if (best === null || h > best) best = h;
  if (best === null) return null;
  const header = headers.get(best)!;
  return { height: best, hash: sha256d(header), time: parseHeader(header).time };
}

export class DevChain {
  private memoryTip: ChainTip | null = null;

  constructor(private readonly opts: { headersOut: string | undefined; startHeight: number; fillerTxs: number }) {}

  /** Creates the headers file up front so readers can rely on it; a bad existing file fails here. */
  async init(): Promise<void> {
    const file = this.opts.headersOut;
    if (!file) return;
    await withHeadersLock(file, async () => {
      const headers = await readHeadersFile(file);
      if (headers.size === 0) await writeHeadersFile(file, headers);
    });
  }

  /** Mines one block holding `commitments` on the current tip. */
  async extend(commitments: Buffer[]): Promise<MinedBlock> {
    const build = (tip: ChainTip | null): MinedBlock =>
      mineCommitments({
        commitments,
        height: tip ? tip.height + 1 : this.opts.startHeight,
        prevHash: tip ? tip.hash : Buffer.alloc(32),
        time: Math.max(nowSeconds(), tip ? tip.time + 1 : 0),
        fillerTxs: this.opts.fillerTxs,
      });
    const file = this.opts.headersOut;
    if (!file) {
      const block = build(this.memoryTip);
      this.memoryTip = { height: block.height, hash: block.hash, time: parseHeader(block.header).time };
      return block;
    }
    return withHeadersLock(file, async () => {
      const headers = await readHeadersFile(file);
      const block = build(tipOf(headers));
      headers.set(block.height, block.header);
      await writeHeadersFile(file, headers);
      return block;
    });
  }
}
