/**
 * Stage `envelope`: the proof's envelope is a valid `zambo-receipt-anchor/1` envelope and
 * binds exactly the values recomputed from the document. Truncation and alteration are
 * named plainly: "truncated: anchored 12 steps, receipt has 9"; "altered: ...".
 */
import { parseEnvelope, type Envelope } from '../envelope/envelope.js';
import { Aer1Error } from '../errors/errors.js';
import { fail, pass, skip, type CheckResult, type PreparedInput, type RecomputedValues } from './types.js';
import { quoteBounded } from '../aer1/json-limits.js';

export interface EnvelopeOutcome {
  readonly check: CheckResult;
  /** The envelope, when it is well-formed (whether or not it binds the document). */
  readonly envelope: Envelope | null;
}

function describeSubject(env: Envelope): string {
  return env.subject === 'chain-head' ? `chain-head ${env.job_id}` : `${env.subject} ${env.receipt_uuid}`;
}

/** Mismatches of members other than the counted/rooted ones, as `altered: <member> ...` phrases. */
function memberMismatches(env: Record<string, unknown>, values: Record<string, unknown>, members: readonly string[], what: string): string[] {
  const out: string[] = [];
  for (const m of members) {
    if (env[m] !== values[m]) out.push(`${m} anchored ${quoteBounded(env[m], 80)}, ${what} has ${quoteBounded(values[m], 80)}`);
  }
  return out;
}

function compare(env: Envelope, values: RecomputedValues): string | null {
  if (env.subject !== values.kind) return `the envelope anchors a ${env.subject}, the document is a ${values.kind}`;
  const e = env as unknown as Record<string, unknown>;
  const v = values as unknown as Record<string, unknown>;
  switch (values.kind) {
    case 'receipt': {
      const problems = memberMismatches(e, v, ['receipt_uuid'], 'the receipt');
      if (e.output_sha256 !== values.output_sha256) {
        problems.unshift(`output_sha256 anchored ${String(e.output_sha256)}, the receipt's bytes hash to ${values.output_sha256}`);
      }
      return problems.length ? `altered: ${problems.join('; ')}` : null;
    }
    case 'workflow-close': {
      const anchoredSteps = e.step_count as number;
      const others = memberMismatches(e, v, ['receipt_uuid', 'workflow_id', 'output_sha256', 'merkle_version'], 'the receipt');
      const tail = others.length ? `; also ${others.join('; ')}` : '';
      if (values.step_count < anchoredSteps) return `truncated: anchored ${anchoredSteps} steps, receipt has ${values.step_count}${tail}`;
      if (values.step_count > anchoredSteps) return `altered: anchored ${anchoredSteps} steps, receipt has ${values.step_count}${tail}`;
      if (e.merkle_root !== values.merkle_root) {
        const source = values.rootRecomputed ? 'its steps give' : 'the receipt declares';
        return `altered: anchored merkle_root ${String(e.merkle_root)}, ${source} ${values.merkle_root} (same ${anchoredSteps} steps)${tail}`;
      }
      return others.length ? `altered: ${others.join('; ')}` : null;
    }
    case 'chain-head': {
      const anchored = e.entry_count as number;
      const others = memberMismatches(e, v, ['job_id'], 'the timeline');
      const tail = others.length ? `; also ${others.join('; ')}` : '';
      if (values.entry_count < anchored) return `truncated: anchored ${anchored} entries, timeline has ${values.entry_count}${tail}`;
      if (values.entry_count > anchored) return `altered: anchored ${anchored} entries, timeline has ${values.entry_count}${tail}`;
      if (e.final_entry_digest !== values.final_entry_digest) {
        return `altered: anchored final_entry_digest ${String(e.final_entry_digest)}, the entries give ${values.final_entry_digest} (same ${anchored} entries)${tail}`;
      }
      return others.length ? `altered: ${others.join('; ')}` : null;
    }
  }
}

function bound(env: Envelope): string {
  switch (env.subject) {
    case 'receipt': {
      const evidence = env.evidence_sha256 !== undefined ? ' (evidence_* anchored as given, not checked)' : '';
      return `binds receipt ${env.receipt_uuid}: output_sha256${evidence}`;
    }
    case 'workflow-close':
      return `binds workflow-close ${env.receipt_uuid}: ${env.step_count} steps, merkle_root ${env.merkle_root} (${env.merkle_version}), workflow_id, output_sha256`;
    case 'chain-head':
      return `binds chain-head ${env.job_id}: ${env.entry_count} entries, final_entry_digest ${env.final_entry_digest}`;
  }
}

export function checkEnvelope(input: PreparedInput | null, values: RecomputedValues | null): EnvelopeOutcome {
  if (!input) return { check: skip('envelope', 'no usable proof (see input)'), envelope: null };
  let env: Envelope;
  try {
    env = parseEnvelope(input.proof.envelope);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return { check: fail('envelope', `not a valid zambo-receipt-anchor/1 envelope: ${err.message}`), envelope: null };
  }
  if (!input.document) {
    const why = input.proofSource === 'standalone' ? 'no document given' : 'document not recognized (see input)';
    return { check: skip('envelope', `${why}; the envelope anchors ${describeSubject(env)}`), envelope: env };
  }
  if (!values) return { check: skip('envelope', 'nothing recomputed to compare (see recompute)'), envelope: env };
  const problem = compare(env, values);
  return { check: problem ? fail('envelope', problem) : pass('envelope', bound(env)), envelope: env };
}
