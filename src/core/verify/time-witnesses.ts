/**
 * Stages `tsa` and `cosignatures`, and the report's independent times (docs/time.md,
 * docs/verify.md): once the `log` stage showed the subject's entry in the checkpoint's tree,
 * every time a party vouches for that checkpoint is a time at which `d` existed. A TSA
 * token counts when it checks and chains to a CA the caller gave (`--tsa-ca`); a witness
 * cosignature when it verifies under a witness key the caller gave (`--witness`), with at
 * least `--witness-quorum` distinct keys; a Bitcoin block when the caller's header source
 * holds it (stage `bitcoin`). Nothing given: the tokens and lines are reported, not trusted.
 */
import { parseNote } from '../log/note.js';
import type { LogProof } from '../proof/format.js';
import { checkCheckpointTimestamps } from '../tsa/checkpoint-timestamps.js';
import { NO_TSA_TRUST_ANCHORS, type TsaTrustAnchors } from '../tsa/trust-anchors.js';
import { checkCosignatures } from '../witness/cosignature-policy.js';
import type { WitnessKey } from '../witness/cosignature.js';
import { InputError } from '../errors/errors.js';
import { fail, pass, skip, type CheckResult, type TimeEvidence } from './types.js';

export interface TimeWitnessOptions {
  /** `--tsa-ca`: the CAs a TSA certificate must chain to (none: "TSA not trusted"). */
  readonly tsaTrustAnchors?: TsaTrustAnchors | null;
  /** `--witness`: the C2SP witnesses the caller trusts. */
  readonly witnessKeys?: readonly WitnessKey[];
  /** `--witness-quorum` (default: every key given). */
  readonly witnessQuorum?: number;
  /** The checker's clock (tests). */
  readonly now?: Date;
}

export interface TimeWitnessOutcome {
  readonly tsa: CheckResult;
  readonly cosignatures: CheckResult;
  readonly times: TimeEvidence[];
  /** A trusted TSA token (tsa) or the witness quorum (witness) vouches for the checkpoint. */
  readonly confirmed: { tsa: boolean; witness: boolean };
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

export async function checkTimeWitnesses(log: LogProof | undefined, included: boolean, options: TimeWitnessOptions): Promise<TimeWitnessOutcome> {
  const none = (why: string): TimeWitnessOutcome => ({ tsa: skip('tsa', why), cosignatures: skip('cosignatures', why), times: [], confirmed: { tsa: false, witness: false } });
  if (!log) return none('the proof carries no anchor log checkpoint');
  if (!included) return none('the entry is not shown in the checkpoint\'s tree (see log): its time witnesses say nothing of d');
  let parsed;
  try {
    parsed = parseNote(log.checkpoint, 'anchor_proof.log.checkpoint');
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return none(`the checkpoint does not parse: ${err.message}`);
  }
  const times: TimeEvidence[] = [];
  const holding = `the checkpoint holding d (${log.origin}, size ${parsed.text.split('\n')[1] ?? '?'})`;

  let tsa: CheckResult;
  let tsaConfirmed = false;
  if (!log.timestamps || log.timestamps.length === 0) tsa = skip('tsa', 'the checkpoint carries no TSA token');
  else {
    const anchors = options.tsaTrustAnchors ?? NO_TSA_TRUST_ANCHORS;
    const results = await checkCheckpointTimestamps(parsed.text, log.timestamps, anchors, options.now);
    for (const r of results) {
      if (r.status === 'FAIL' || r.genTime === null) continue;
      const trusted = r.status === 'PASS';
      times.push({
        kind: 'tsa', at: r.genTime.replace('.000Z', 'Z'), by: r.tsa ?? 'an unnamed TSA', source: r.url, trusted,
        statement: `${holding} existed at ${r.genTime.replace('.000Z', 'Z')}: TSA genTime, signed by ${r.tsa ?? 'an unnamed TSA'} (${r.url})${trusted ? '' : ', TSA not trusted'}`,
      });
    }
    const failed = results.filter((r) => r.status === 'FAIL');
    const passed = results.filter((r) => r.status === 'PASS');
    tsaConfirmed = passed.length > 0 && failed.length === 0;
    if (failed.length > 0) tsa = fail('tsa', failed.map((r) => `${r.url}: ${r.detail}`).join('; '));
    else if (passed.length > 0) tsa = pass('tsa', `${passed.length} of ${results.length} token(s) time-stamp the checkpoint and chain to --tsa-ca: ${passed.map((r) => `${r.genTime} by ${r.tsa}`).join(', ')}`);
    else tsa = skip('tsa', `TSA not trusted: ${results.length} sound token(s); give --tsa-ca FILE (a PEM bundle of the TSAs' CAs) to trust them (${results[0]!.detail})`);
  }

  let cosignatures: CheckResult;
  let witnessConfirmed = false;
  const keys = options.witnessKeys ?? [];
  const lines = parsed.signatures.length - 1;
  if (keys.length === 0) {
    cosignatures = skip('cosignatures', `${Math.max(0, lines)} signature line(s) besides the log's; witnesses not trusted: give --witness VKEY to check their cosignatures`);
  } else {
    const quorum = options.witnessQuorum ?? new Set(keys.map((k) => k.text)).size;
    const report = checkCosignatures(log.checkpoint, keys, quorum, options.now ? { now: Math.floor(options.now.getTime() / 1000) } : {});
    for (const w of report.witnesses) {
      if (w.status !== 'verified' || w.time === undefined) continue;
      times.push({ kind: 'witness', at: iso(w.time), by: w.name, source: w.key, trusted: true, statement: `${holding} existed at ${iso(w.time)}: cosigned by witness ${w.name}` });
    }
    const bad = report.witnesses.filter((w) => w.status === 'bad_signature' || w.status === 'future');
    witnessConfirmed = report.ok && quorum > 0 && bad.length === 0;
    const verified = `${report.verified} of the ${keys.length} witness key(s) given cosigned (quorum ${quorum})`;
    if (bad.length > 0) cosignatures = fail('cosignatures', bad.map((w) => w.detail).join('; '));
    else if (!report.ok) cosignatures = fail('cosignatures', `${verified}: ${report.witnesses.filter((w) => w.status !== 'verified').map((w) => w.detail).join('; ')}`);
    else cosignatures = pass('cosignatures', verified);
  }
  return { tsa, cosignatures, times, confirmed: { tsa: tsaConfirmed, witness: witnessConfirmed } };
}

/** The Bitcoin blocks the `bitcoin` stage verified, as times at which d existed. */
export function bitcoinTimes(blocks: ReadonlyArray<{ height: number; time: number | null; verified: boolean }>, headerSource: string | null): TimeEvidence[] {
  return blocks.flatMap((b) => (b.verified && b.time !== null
    ? [{ kind: 'bitcoin' as const, at: iso(b.time), by: `Bitcoin block ${b.height}`, source: headerSource, trusted: true, statement: `d existed at ${iso(b.time)}: Bitcoin block ${b.height}'s time (header from ${headerSource ?? 'the header source'})` }]
    : []));
}
