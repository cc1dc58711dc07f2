/**
 * Stage `digest`: d = SHA-256 of the envelope's canonical bytes (SPEC §2, §3), computed
 * here from the envelope as given. Later stages hold the witnesses to this d, never to
 * the digest the proof states.
 */
import { canonicalJson } from '../aer1/canonical-json.js';
import { sha256 } from '../aer1/hash.js';
import { fail, pass, skip, type CheckResult, type PreparedInput } from './types.js';

export interface DigestOutcome {
  readonly check: CheckResult;
  readonly digest: Buffer | null;
  /** The envelope's canonical text, as hashed. */
  readonly text: string | null;
}

export function checkDigest(input: PreparedInput | null): DigestOutcome {
  if (!input) return { check: skip('digest', 'no usable proof (see input)'), digest: null, text: null };
  let text: string;
  try {
    text = canonicalJson(input.proof.envelope);
  } catch (err) {
    return { check: fail('digest', `the envelope has no canonical form: ${(err as Error).message}`), digest: null, text: null };
  }
  const d = sha256(text);
  const hex = d.toString('hex');
  if (hex !== input.proof.digest) {
    return { check: fail('digest', `the proof states digest ${input.proof.digest}, the envelope's canonical bytes hash to ${hex}`), digest: d, text };
  }
  return { check: pass('digest', `d = ${hex} (SHA-256 of ${Buffer.byteLength(text)} canonical envelope bytes)`), digest: d, text };
}
