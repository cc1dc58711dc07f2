/**
 * Stages `ots-digest` and `ots-attestations` (SPEC §6.6): the proof's `.ots` is a
 * well-formed detached timestamp whose file hash op is sha256 and whose file digest is d;
 * every attestation in it is reported — pending ones with their calendar URIs.
 */
import { decodeBase64Strict } from '../aer1/base64.js';
import { Aer1Error } from '../errors/errors.js';
import type { OtsProof } from '../proof/format.js';
import { parseDetached, type DetachedTimestampFile } from '../ots/codec.js';
import { allAttestations } from '../ots/timestamp.js';
import { fail, pass, skip, type CheckResult, type PreparedInput } from './types.js';

export interface OtsDigestOutcome {
  readonly check: CheckResult;
  /** The parsed file, when it parses (even when it is for another digest). */
  readonly file: DetachedTimestampFile | null;
  /** True when the file's digest is d (only then do its attestations speak for d). */
  readonly forDigest: boolean;
}

export function checkOtsDigest(input: PreparedInput | null, digest: Buffer | null): OtsDigestOutcome {
  const none = (check: CheckResult): OtsDigestOutcome => ({ check, file: null, forDigest: false });
  if (!input) return none(skip('ots-digest', 'no usable proof (see input)'));
  const ots: OtsProof | undefined = input.proof.ots;
  if (!ots) return none(skip('ots-digest', 'no OpenTimestamps witness in the proof'));
  if (ots.proof === null) {
    if (ots.status === 'confirmed' || ots.status === 'partial') {
      return none(fail('ots-digest', `the proof says ots is ${ots.status} but carries no .ots`));
    }
    return none(skip('ots-digest', `no .ots yet (ots ${ots.status})`));
  }
  let file: DetachedTimestampFile;
  try {
    file = parseDetached(decodeBase64Strict(ots.proof, 'anchor_proof.ots.proof'));
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return none(fail('ots-digest', `the .ots does not read: ${err.message}`));
  }
  if (file.hashOp !== 'sha256') return { check: fail('ots-digest', `the .ots file hash op is ${file.hashOp}, expected sha256`), file, forDigest: false };
  if (digest === null) return { check: skip('ots-digest', 'no envelope digest to compare (see digest)'), file, forDigest: false };
  const fileDigest = file.digest.toString('hex');
  const d = digest.toString('hex');
  if (fileDigest !== d) return { check: fail('ots-digest', `the .ots is for digest ${fileDigest}, not d ${d}`), file, forDigest: false };
  return { check: pass('ots-digest', 'the .ots file digest is d (file hash op sha256)'), file, forDigest: true };
}

export interface AttestationSummary {
  readonly pending: string[];
  readonly bitcoin: Array<{ height: number; merkleRoot: Buffer }>;
  readonly other: string[];
}

export function summarizeAttestations(file: DetachedTimestampFile): AttestationSummary {
  const pending: string[] = [];
  const bitcoin: Array<{ height: number; merkleRoot: Buffer }> = [];
  const other: string[] = [];
  for (const { msg, attestation } of allAttestations(file.timestamp)) {
    switch (attestation.kind) {
      case 'pending':
        if (!pending.includes(attestation.uri)) pending.push(attestation.uri);
        break;
      case 'bitcoin':
        if (!bitcoin.some((b) => b.height === attestation.height && b.merkleRoot.equals(msg))) bitcoin.push({ height: attestation.height, merkleRoot: msg });
        break;
      case 'litecoin':
        other.push(`litecoin block ${attestation.height}`);
        break;
      case 'unknown':
        other.push(`unknown attestation ${attestation.tag.toString('hex')}`);
        break;
    }
  }
  return { pending, bitcoin, other };
}

export function checkOtsAttestations(digestOutcome: OtsDigestOutcome): { check: CheckResult; summary: AttestationSummary | null } {
  const { file } = digestOutcome;
  if (!file) return { check: skip('ots-attestations', 'no readable .ots'), summary: null };
  if (!digestOutcome.forDigest) return { check: skip('ots-attestations', 'the .ots does not commit to d (see ots-digest)'), summary: null };
  const summary = summarizeAttestations(file);
  const parts: string[] = [];
  if (summary.bitcoin.length) parts.push(`Bitcoin block${summary.bitcoin.length > 1 ? 's' : ''} ${summary.bitcoin.map((b) => b.height).join(', ')}`);
  if (summary.pending.length) parts.push(`pending at ${summary.pending.length} calendar${summary.pending.length > 1 ? 's' : ''}: ${summary.pending.join(', ')}`);
  if (summary.other.length) parts.push(`not checked: ${summary.other.join(', ')}`);
  if (parts.length === 0) return { check: fail('ots-attestations', 'the .ots carries no attestation'), summary };
  return { check: pass('ots-attestations', parts.join('; ')), summary };
}
