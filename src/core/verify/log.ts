/**
 * Stage `log`: the subject in the issuer's anchor log (anchor_proof.log, docs/log.md). The
 * entry is rebuilt here from the envelope (d as computed by `digest`, its kind and key),
 * never read from the proof; its RFC 6962 inclusion path must lead to the root of the signed
 * checkpoint the proof carries; and that checkpoint counts only when signed by a log key the
 * caller trusts (`--log-key`, or a trust file's log keys). Without one given: the path is
 * checked and the signer is "not trusted", as for Nostr (not a FAIL).
 */
import { subjectKey, type Envelope } from '../envelope/envelope.js';
import { openCheckpoint } from '../log/checkpoint.js';
import { encodeEntry, entryKindOfSubject } from '../log/entry.js';
import { InputError } from '../errors/errors.js';
import type { VerifierKey } from '../log/note.js';
import { verifyInclusion } from '../log/proof.js';
import { leafHash } from '../log/rfc6962.js';
import type { LogProof } from '../proof/format.js';
import { fail, pass, skip, type CheckResult } from './types.js';

export interface LogOutcome {
  readonly check: CheckResult;
  /** The entry rebuilt from the envelope leads by the path to the checkpoint's root (its signer trusted or not). */
  readonly included?: boolean;
}

export function checkLog(log: LogProof | undefined, envelope: Envelope | null, d: Buffer | null, trusted: readonly VerifierKey[]): LogOutcome {
  const no = (check: CheckResult): LogOutcome => ({ check });
  if (!log) return no(skip('log', 'the proof carries no anchor log inclusion'));
  if (!envelope || !d) return no(skip('log', 'no envelope or digest to rebuild the log entry from (see envelope, digest)'));
  const kind = entryKindOfSubject(envelope.subject);
  if (kind === undefined) return no(fail('log', `subject kind ${JSON.stringify(envelope.subject)} has no log entry kind`));
  let entry: Buffer;
  let opened: ReturnType<typeof openCheckpoint>;
  try {
    entry = encodeEntry({ digest: d, kind, key: subjectKey(envelope) });
    opened = openCheckpoint(log.checkpoint, trusted, 'anchor_proof.log.checkpoint');
  } catch (err) {
    // a malformed note or entry is the proof's fault; anything else is ours
    if (!(err instanceof InputError)) throw err;
    return no(fail('log', err.message));
  }
  const cp = opened.checkpoint;
  if (cp.origin !== log.origin) return no(fail('log', `the checkpoint's origin ${JSON.stringify(cp.origin)} is not the proof's log.origin ${JSON.stringify(log.origin)}`));
  if (log.index >= cp.size) return no(fail('log', `index ${log.index} is outside the checkpoint's tree of ${cp.size}`));
  const path = log.path.map((h) => Buffer.from(h, 'hex'));
  if (!verifyInclusion(leafHash(entry), log.index, cp.size, path, cp.root)) {
    return no(fail('log', `the entry rebuilt from the envelope (d, ${kind}, key) does not lead by the path to the root of ${cp.origin} at size ${cp.size}: another entry was logged at index ${log.index}, or the path is altered`));
  }
  const where = `entry ${log.index} of ${cp.origin} (d, ${kind}, key) is in the tree of size ${cp.size}`;
  if (!opened.ok) {
    if (opened.reason === 'bad_signature') return no(fail('log', `${where}, but the checkpoint's ${opened.message}`));
    if (trusted.length === 0) return { included: true, ...no(skip('log', `${where}; signer not trusted: give --log-key VKEY to check the checkpoint's signature`)) };
    return no(fail('log', `${where}, but the checkpoint is not signed by a log key given (${trusted.map((k) => `${k.name}+${k.keyId.toString(16).padStart(8, '0')}`).join(', ')}): ${opened.message}`));
  }
  return { included: true, check: pass('log', `${where}, whose checkpoint is signed by ${opened.signedBy.map((k) => `${k.name}+${k.keyId.toString(16).padStart(8, '0')}`).join(', ')}`) };
}
