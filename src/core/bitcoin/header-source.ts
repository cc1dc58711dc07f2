/**
 * Where block headers come from, as the checks see it: a name for messages and one
 * lookup. The sources themselves (a headers file, Esplora, bitcoind) are adapters in
 * src/adapters/bitcoin/; which one to trust is the caller's choice.
 */
export interface HeaderSource {
  /** What the source is, for messages (`headers file x.json`, `esplora https://…`). */
  readonly name: string;
  /** The 80-byte header of the block at `height` on the source's best chain. */
  headerAt(height: number): Promise<Buffer>;
}
