/**
 * Stage `bitcoin` (SPEC §6.6): each Bitcoin attestation in the `.ots` is checked against a
 * header from the caller's source (`--headers`, `--esplora`, `--bitcoind`): proof of work
 * for its bits within the network's limit, and a merkle root equal to the attested
 * message. No source: SKIP. A source that lacks the block or cannot be reached: SKIP
 * (not a verdict on the proof). A header that does not match: FAIL.
 */
import { hexOrQuoted } from '../aer1/json-limits.js';
import type { BitcoinConfirmation } from '../proof/format.js';
import { BitcoinVerificationError } from '../bitcoin/errors.js';
import type { BitcoinNetwork } from '../bitcoin/header.js';
import type { HeaderSource } from '../bitcoin/header-source.js';
import { countConfirmations, verifyBitcoinAttestation, type VerifiedBlock } from '../bitcoin/verify.js';
import type { AttestationSummary } from './ots.js';
import { fail, pass, skip, type CheckResult } from './types.js';

type BlockAnswer = { ok: true; block: VerifiedBlock } | { ok: false; transient: boolean; reason: string };

/** Header checks already made in this run: the proofs of one batch share their attestations. */
export class BitcoinCheckCache {
  private readonly answers = new Map<string, Promise<BlockAnswer>>();
  lookups = 0;

  check(msg: Buffer, height: number, source: HeaderSource, network: BitcoinNetwork): Promise<BlockAnswer> {
    const key = `${network}:${height}:${msg.toString('hex')}`;
    let answer = this.answers.get(key);
    if (!answer) {
      this.lookups++;
      answer = verifyBitcoinAttestation(msg, height, source, network).then(
        (block): BlockAnswer => ({ ok: true, block }),
        (err: unknown): BlockAnswer => {
          if (err instanceof BitcoinVerificationError) return { ok: false, transient: err.transient, reason: err.message };
          return { ok: false, transient: true, reason: `${source.name}: ${(err as Error).message}` };
        },
      );
      this.answers.set(key, answer);
    }
    return answer;
  }
}

export interface BitcoinOutcome {
  readonly check: CheckResult;
  /** One entry per attestation, with what was verified. */
  readonly blocks: Array<{ height: number; block_hash: string | null; time: number | null; verified: boolean }>;
  /** True when at least one attestation was verified and none failed. */
  readonly confirmed: boolean;
  /** True when attestations exist that could not be checked (no source, block unknown). */
  readonly unchecked: boolean;
}

export interface BitcoinCheckOptions {
  source: HeaderSource | null;
  network: BitcoinNetwork;
  cache: BitcoinCheckCache;
  /** The proof's own `ots.bitcoin` claim, held to what the header source says. */
  claim: BitcoinConfirmation | undefined;
  /** `--min-confirmations N`: the source must show N blocks on the attested one's chain, it included (default 1). */
  minConfirmations?: number;
}

export async function checkBitcoin(summary: AttestationSummary | null, opts: BitcoinCheckOptions): Promise<BitcoinOutcome> {
  const none = (check: CheckResult): BitcoinOutcome => ({ check, blocks: [], confirmed: false, unchecked: false });
  if (!summary) return none(skip('bitcoin', 'no attestation to check (see ots-attestations)'));
  if (summary.bitcoin.length === 0) return none(skip('bitcoin', 'no Bitcoin attestation yet'));
  const heights = summary.bitcoin.map((b) => b.height).join(', ');
  const unverified = summary.bitcoin.map((b) => ({ height: b.height, block_hash: null, time: null, verified: false }));
  if (!opts.source) {
    return { check: skip('bitcoin', `Bitcoin attestation at block ${heights} not checked: no header source (give --headers FILE, --esplora URL or --bitcoind URL)`), blocks: unverified, confirmed: false, unchecked: true };
  }
  const source = opts.source;
  const answers = await Promise.all(summary.bitcoin.map((b) => opts.cache.check(b.merkleRoot, b.height, source, opts.network)));
  const blocks: BitcoinOutcome['blocks'] = [];
  const verified: VerifiedBlock[] = [];
  const failures: string[] = [];
  const transient: string[] = [];
  answers.forEach((a, i) => {
    const height = summary.bitcoin[i]!.height;
    if (a.ok) {
      verified.push(a.block);
      blocks.push({ height, block_hash: a.block.block_hash, time: a.block.time, verified: true });
    } else {
      blocks.push({ height, block_hash: null, time: null, verified: false });
      (a.transient ? transient : failures).push(a.reason);
    }
  });
  if (opts.claim && verified.length > 0) {
    const claim = opts.claim;
    const match = verified.find((b) => b.height === claim.height);
    if (!match) failures.push(`the proof claims block ${claim.height}, the .ots attests block ${verified.map((b) => b.height).join(', ')}`);
    else if (match.block_hash !== claim.block_hash) failures.push(`the proof claims block ${claim.height} is ${hexOrQuoted(claim.block_hash)}, ${source.name} has ${match.block_hash}`);
  }
  if (failures.length) return { check: fail('bitcoin', failures.join('; ')), blocks, confirmed: false, unchecked: false };
  if (verified.length === 0) {
    return { check: skip('bitcoin', `not checked: ${transient.join('; ')}`), blocks, confirmed: false, unchecked: true };
  }
  const said = verified.map((b) => `block ${b.height} ${b.block_hash} (time ${new Date(b.time * 1000).toISOString().replace('.000Z', 'Z')})`).join('; ');
  const rest = transient.length ? `; not checked: ${transient.join('; ')}` : '';
  const need = opts.minConfirmations ?? 1;
  if (need > 1) {
    let deepest = 0;
    for (const b of verified) {
      try {
        deepest = Math.max(deepest, await countConfirmations(b.height, b.block_hash, need, source, opts.network));
      } catch (err) {
        if (!(err instanceof BitcoinVerificationError)) throw err;
        return { check: fail('bitcoin', `${said}: ${err.message}`), blocks, confirmed: false, unchecked: false };
      }
    }
    if (deepest < need) {
      return { check: skip('bitcoin', `${said} check out against ${source.name}, but it shows ${deepest} of the ${need} confirmations asked (--min-confirmations)${rest}`), blocks, confirmed: false, unchecked: true };
    }
  }
  const depth = need > 1 ? `, with at least ${need} confirmations` : '';
  return { check: pass('bitcoin', `${said}: proof of work and merkle root check out against ${source.name} (${opts.network})${depth}${rest}`), blocks, confirmed: true, unchecked: transient.length > 0 };
}
