/**
 * Checking a detached proof end to end: does it commit to the expected digest, which
 * calendars is it pending at, and which of its Bitcoin attestations check out against
 * block headers. A list of findings; the caller decides the verdict.
 */
import type { DetachedTimestampFile } from './codec.js';
import { BitcoinVerificationError } from '../bitcoin/errors.js';
import { displayHex, type BitcoinNetwork } from '../bitcoin/header.js';
import type { HeaderSource } from '../bitcoin/header-source.js';
import { verifyBitcoinAttestation, type VerifiedBlock } from '../bitcoin/verify.js';
import { type AttestationJson, attestationJson } from './info.js';
import { allAttestations } from './timestamp.js';

export interface BitcoinFinding {
  height: number;
  /** Merkle root the proof claims, display order. */
  merkle_root: string;
  status: 'verified' | 'failed' | 'unchecked';
  block_hash?: string;
  time?: number;
  code?: string;
  reason?: string;
}

export interface ProofCheck {
  hash_op: DetachedTimestampFile['hashOp'];
  file_digest: string;
  digest: 'match' | 'mismatch' | 'not_given';
  bitcoin: BitcoinFinding[];
  pending: Array<{ uri: string; commitment: string }>;
  /** Litecoin and unknown attestations: reported, not checked. */
  other: Array<AttestationJson & { msg: string }>;
  /** The earliest block among the verified attestations, or null. */
  verified: VerifiedBlock | null;
}

export interface ProofCheckOptions {
  expectedDigest?: Uint8Array;
  /** Without a source, Bitcoin attestations are reported `unchecked`. */
  source?: HeaderSource | null;
  network?: BitcoinNetwork;
}

export async function checkDetachedProof(file: DetachedTimestampFile, opts: ProofCheckOptions = {}): Promise<ProofCheck> {
  const result: ProofCheck = {
    hash_op: file.hashOp,
    file_digest: file.digest.toString('hex'),
    digest: opts.expectedDigest === undefined ? 'not_given' : file.digest.equals(opts.expectedDigest) ? 'match' : 'mismatch',
    bitcoin: [],
    pending: [],
    other: [],
    verified: null,
  };
  const seen = new Set<string>();
  for (const { msg, attestation } of allAttestations(file.timestamp)) {
    if (attestation.kind === 'pending') {
      result.pending.push({ uri: attestation.uri, commitment: msg.toString('hex') });
    } else if (attestation.kind === 'bitcoin') {
      const key = `${attestation.height}:${msg.toString('hex')}`;
      if (seen.has(key)) continue; // several paths to the same block: check once
      seen.add(key);
      const finding: BitcoinFinding = { height: attestation.height, merkle_root: displayHex(msg), status: 'unchecked' };
      result.bitcoin.push(finding);
      if (!opts.source) {
        finding.reason = 'no header source given';
        continue;
      }
      try {
        const block = await verifyBitcoinAttestation(msg, attestation.height, opts.source, opts.network ?? 'mainnet');
        Object.assign(finding, { status: 'verified', block_hash: block.block_hash, time: block.time });
        if (!result.verified || block.time < result.verified.time) result.verified = block;
      } catch (err) {
        if (!(err instanceof BitcoinVerificationError)) throw err;
        Object.assign(finding, { status: err.transient ? 'unchecked' : 'failed', code: err.code, reason: err.message });
      }
    } else {
      result.other.push({ ...attestationJson(attestation), msg: msg.toString('hex') });
    }
  }
  return result;
}
