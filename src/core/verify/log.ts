/**
 * Stage `log`: the subject in the issuer's anchor log (anchor_proof.log, docs/log.md). The
 * entry is rebuilt here from the envelope (d as computed by `digest`, its kind and key),
 * never read from the proof; its RFC 6962 inclusion path must lead to the root of the signed
 * checkpoint the proof carries; and that checkpoint counts only when signed by a log key the
 * caller trusts (`--log-key`, or a trust file's log keys). Without one given: the path is
 * checked and the signer is "not trusted", as for Nostr (not a FAIL). The same check reads a
 * checkpoint event's note for the `batch-path` stage (checkpoint-path.ts).
 */
import { subjectKey, type Envelope } from '../envelope/envelope.js';
import { openCheckpoint, type Checkpoint } from '../log/checkpoint.js';
import { encodeEntry, entryKindOfSubject } from '../log/entry.js';
import { InputError } from '../errors/errors.js';
import type { VerifierKey } from '../log/note.js';
import { verifyInclusion } from '../log/proof.js';
import { leafHash } from '../log/rfc6962.js';
import type { LogProof } from '../proof/format.js';
import { fail, pass, skip, type CheckName, type CheckResult } from './types.js';

export interface LogOutcome {
  readonly check: CheckResult;
  /** The entry rebuilt from the envelope leads by the path to the checkpoint's root (its signer trusted or not). */
  readonly included?: boolean;
}

/** One subject's entry at `index` in a signed checkpoint, as a proof states it. */
export interface EntryClaim {
  readonly note: string;
  /** Where the note is in the proof, for messages naming a malformed one. */
  readonly field: string;
  readonly index: number;
  readonly path: readonly string[];
  /** The origin the proof names besides the note's own, when it names one. */
  readonly origin?: string;
}

/**
 * The check `name`: the entry rebuilt from the envelope and d leads by the path to the root
 * of the claimed note, whose signature is then held against the trusted log keys. `tree`
 * receives the note's checkpoint once it parsed (for checks of their own on it).
 */
export function checkEntryInCheckpoint(name: CheckName, claim: EntryClaim, envelope: Envelope, d: Buffer, trusted: readonly VerifierKey[], tree?: (cp: Checkpoint) => string | null): CheckResult {
  const kind = entryKindOfSubject(envelope.subject);
  if (kind === undefined) return fail(name, `subject kind ${JSON.stringify(envelope.subject)} has no log entry kind`);
  let entry: Buffer;
  let opened: ReturnType<typeof openCheckpoint>;
  try {
    entry = encodeEntry({ digest: d, kind, key: subjectKey(envelope) });
    opened = openCheckpoint(claim.note, trusted, claim.field);
  } catch (err) {
    // a malformed note or entry is the proof's fault; anything else is ours
    if (!(err instanceof InputError)) throw err;
    return fail(name, err.message);
  }
  const cp = opened.checkpoint;
  if (claim.origin !== undefined && cp.origin !== claim.origin) return fail(name, `the checkpoint's origin ${JSON.stringify(cp.origin)} is not the proof's log.origin ${JSON.stringify(claim.origin)}`);
  const own = tree?.(cp) ?? null;
  if (own !== null) return fail(name, own);
  if (claim.index >= cp.size) return fail(name, `index ${claim.index} is outside the checkpoint's tree of ${cp.size}`);
  const path = claim.path.map((h) => Buffer.from(h, 'hex'));
  if (!verifyInclusion(leafHash(entry), claim.index, cp.size, path, cp.root)) {
    return fail(name, `the entry rebuilt from the envelope (d, ${kind}, key) does not lead by the path to the root of ${cp.origin} at size ${cp.size}: another entry was logged at index ${claim.index}, or the path is altered`);
  }
  const where = `entry ${claim.index} of ${cp.origin} (d, ${kind}, key) is in the tree of size ${cp.size}`;
  if (!opened.ok) {
    if (opened.reason === 'bad_signature') return fail(name, `${where}, but the checkpoint's ${opened.message}`);
    if (trusted.length === 0) return skip(name, `${where}; signer not trusted: give --log-key VKEY to check the checkpoint's signature`);
    return fail(name, `${where}, but the checkpoint is not signed by a log key given (${trusted.map(keyName).join(', ')}): ${opened.message}`);
  }
  return pass(name, `${where}, whose checkpoint is signed by ${opened.signedBy.map(keyName).join(', ')}`);
}

function keyName(k: VerifierKey): string {
  return `${k.name}+${k.keyId.toString(16).padStart(8, '0')}`;
}

export function checkLog(log: LogProof | undefined, envelope: Envelope | null, d: Buffer | null, trusted: readonly VerifierKey[]): LogOutcome {
  if (!log) return { check: skip('log', 'the proof carries no anchor log inclusion') };
  if (!envelope || !d) return { check: skip('log', 'no envelope or digest to rebuild the log entry from (see envelope, digest)') };
  const check = checkEntryInCheckpoint('log', { note: log.checkpoint, field: 'anchor_proof.log.checkpoint', index: log.index, path: log.path, origin: log.origin }, envelope, d, trusted);
  // past the envelope's own checks, the one SKIP left is a path that holds under a signer not trusted
  return { check, included: check.status !== 'FAIL' };
}
