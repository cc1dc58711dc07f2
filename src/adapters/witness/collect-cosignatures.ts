/**
 * One checkpoint to every configured witness at once: each answer is recorded per
 * witness (its lines and time, or its typed error), and the verified lines are attached
 * to the note. A witness's failure never blocks another's cosignature.
 */
import { attachCosignatures } from '../../core/witness/cosignature.js';
import type { ProofFor, WitnessClient } from './witness-client.js';
import { WitnessError, type WitnessErrorCode } from './witness-error.js';

export type WitnessOutcome =
  | { readonly url: string; readonly key: string; readonly ok: true; readonly time: number; readonly oldSize: number; readonly lines: readonly string[] }
  | { readonly url: string; readonly key: string; readonly ok: false; readonly code: WitnessErrorCode | 'internal'; readonly message: string; readonly retryable: boolean; readonly knownSize?: number };

/**
 * `knownSizes` (by witness URL) is what each witness last cosigned as far as the caller
 * knows; a witness not in it is sent old size 0 and answers with its size when it has one.
 */
export async function collectCosignatures(note: string, witnesses: readonly WitnessClient[], proofFor: ProofFor, knownSizes: ReadonlyMap<string, number> = new Map()): Promise<{ note: string; outcomes: WitnessOutcome[] }> {
  const settled = await Promise.allSettled(witnesses.map((w) => w.addCheckpoint(note, proofFor, knownSizes.get(w.url) ?? 0)));
  const outcomes = settled.map((s, i): WitnessOutcome => {
    const w = witnesses[i]!;
    if (s.status === 'fulfilled') return { url: w.url, key: w.key.text, ok: true, time: s.value.time, oldSize: s.value.oldSize, lines: s.value.lines };
    const err = s.reason as unknown;
    if (err instanceof WitnessError) {
      return { url: w.url, key: w.key.text, ok: false, code: err.code, message: err.message, retryable: err.retryable, ...(err.knownSize !== undefined ? { knownSize: err.knownSize } : {}) };
    }
    return { url: w.url, key: w.key.text, ok: false, code: 'internal', message: err instanceof Error ? err.message : String(err), retryable: false };
  });
  const lines = outcomes.flatMap((o) => (o.ok ? o.lines : []));
  return { note: lines.length > 0 ? attachCosignatures(note, lines) : note, outcomes };
}
