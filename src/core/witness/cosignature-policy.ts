/**
 * The caller's witness policy over a cosigned checkpoint: which of the witness keys the
 * caller trusts cosigned the note's text, when each says it saw it, and whether at least
 * `quorum` distinct witnesses did. Lines by other keys are ignored (signed-note); the log's
 * own signature is the checkpoint check's business (openCheckpoint), not this one's.
 */
import { InputError } from '../errors/errors.js';
import { parseNote } from '../log/note.js';
import { verifyCosignature, type WitnessKey } from './cosignature.js';

export type CosignatureStatus =
  /** A line by the key verifies. */
  | 'verified'
  /** No line by this key (name and key ID). */
  | 'missing'
  /** A line by this key does not verify, or is not a timestamped signature: the note is refused for this witness. */
  | 'bad_signature'
  /** It verifies but its time is later than `now` plus the allowed skew (tlog-cosignature: verifiers MAY reject). */
  | 'future';

export interface WitnessCosignature {
  readonly name: string;
  /** The witness's verifier key, as given. */
  readonly key: string;
  readonly status: CosignatureStatus;
  /** POSIX seconds the witness signed at (the earliest of its verified lines); absent unless it verified or is `future`. */
  readonly time?: number;
  readonly detail: string;
}

export interface CosignatureReport {
  /** At least `quorum` distinct witnesses (distinct public keys) verified. */
  readonly ok: boolean;
  readonly quorum: number;
  readonly verified: number;
  readonly witnesses: readonly WitnessCosignature[];
}

export interface CosignaturePolicyOptions {
  /** Now, in POSIX seconds (default the clock). */
  readonly now?: number;
  /** A cosignature up to this many seconds ahead of `now` still counts (default 600). */
  readonly maxFutureSeconds?: number;
}

/**
 * Checks a signed checkpoint note's cosignatures against `witnessKeys` with `quorum`.
 * A key listed twice counts once; two names on one public key count once (the Ed25519
 * cosignature message does not commit to the name, so one signature would serve both).
 */
export function checkCosignatures(note: string | Uint8Array, witnessKeys: readonly WitnessKey[], quorum: number, options: CosignaturePolicyOptions = {}): CosignatureReport {
  const keys = witnessKeys.filter((k, i) => witnessKeys.findIndex((o) => o.text === k.text) === i);
  if (!Number.isSafeInteger(quorum) || quorum < 0 || quorum > keys.length) {
    throw new InputError('bad_option', `the quorum must be an integer in 0..${keys.length} (the distinct witness keys given), got ${quorum}`, 'quorum');
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const skew = options.maxFutureSeconds ?? 600;
  const parsed = parseNote(note);
  const witnesses = keys.map((key): WitnessCosignature => {
    const lines = parsed.signatures.filter((s) => s.name === key.name && s.keyId === key.keyId);
    if (lines.length === 0) return { name: key.name, key: key.text, status: 'missing', detail: `no cosignature by ${key.text}` };
    let earliest: bigint | null = null;
    for (const line of lines) {
      const r = verifyCosignature(parsed.text, line, key);
      if (!r.ok) return { name: key.name, key: key.text, status: 'bad_signature', detail: `the cosignature by ${key.text}: ${r.reason}` };
      if (earliest === null || r.timestamp < earliest) earliest = r.timestamp;
    }
    const t = earliest!;
    if (t > BigInt(now + skew)) {
      const time = t <= BigInt(Number.MAX_SAFE_INTEGER) ? { time: Number(t) } : {};
      return { name: key.name, key: key.text, status: 'future', ...time, detail: `cosigned at ${t}, more than ${skew} s after now (${now})` };
    }
    return { name: key.name, key: key.text, status: 'verified', time: Number(t), detail: `cosigned at ${new Date(Number(t) * 1000).toISOString()}` };
  });
  const distinct = new Set(keys.filter((_, i) => witnesses[i]!.status === 'verified').map((k) => k.publicKey.toString('hex')));
  return { ok: distinct.size >= quorum, quorum, verified: distinct.size, witnesses };
}
