/**
 * `aer1-anchor audit --log`: a folder of documents held against the issuer's anchor log
 * (docs/log.md), read to a checkpoint signed by a key the caller trusts. Each entry gives a
 * key, a kind and the envelope digest d; each document is recomputed as the verifier does
 * (the verifier's input, recompute and envelope stages, src/core/verify; its attached
 * proof's envelope gives `anchored_at`, which d covers; no witness is needed), and ends in one
 * outcome: matching; altered or truncated (logged under its key, but the document, or the
 * envelope its proof carries, is not what was logged); not-logged (in the folder, no
 * entry for its key); withheld (an entry with no document in the folder: complete up to
 * the checkpoint's size, whatever relays kept); unchecked (logged, but the document
 * carries no proof whose envelope would give d).
 */
import { UsageError } from '../errors/errors.js';
import { envelopeDigest, type SubjectKind } from '../envelope/envelope.js';
import { entryKindOfSubject, type EntryKind } from '../log/entry.js';
import { recognizeForDiscovery } from './discover.js';
import { checkEnvelope } from './envelope.js';
import { findAttached, readInput } from './input.js';
import { recompute } from './recompute.js';
import type { AuditDocument } from './audit.js';

export const LOG_AUDIT_OUTCOMES = ['matching', 'altered', 'truncated', 'not-logged', 'withheld', 'unchecked'] as const;
export type LogAuditOutcome = (typeof LOG_AUDIT_OUTCOMES)[number];

/** One entry of the log, by its key. */
export interface LoggedEntry {
  readonly index: number;
  readonly kind: EntryKind;
  /** d, hex. */
  readonly digest: string;
}

export interface LogAuditRow {
  readonly outcome: LogAuditOutcome;
  readonly kind: SubjectKind | EntryKind | null;
  readonly key: string;
  /** The folder document; null when withheld. */
  readonly file: string | null;
  /** The key's entry in the log; null when not logged. */
  readonly index: number | null;
  readonly detail: string;
}

export interface LogAuditReport {
  readonly rows: LogAuditRow[];
  readonly counts: Record<LogAuditOutcome, number>;
  readonly unreadable: Array<{ file: string; error: string }>;
}

export interface LogAuditOptions {
  /** The log's entries by key, read to the checkpoint's size. */
  readonly entries: ReadonlyMap<string, LoggedEntry>;
  /** What the entries were read from, for the details: `<origin> at size N`. */
  readonly logName: string;
}

const outcomeOf = (problem: string): 'truncated' | 'altered' => (problem.includes('truncated:') ? 'truncated' : 'altered');

/**
 * The document held to its attached proof's envelope by the verifier's own stages: the
 * first disagreement (recompute, envelope), and the envelope's d (null when unreadable).
 */
function holdToProof(value: unknown): { problem: string | null; digest: string | null } {
  const input = readInput(value, undefined, { witnessRequired: false });
  if (input.prepared === null) return { problem: input.check.detail, digest: null };
  const recomputed = recompute(input.prepared);
  const envelope = checkEnvelope(input.prepared, recomputed.values);
  const problem = [input.check, recomputed.check, envelope.check].find((c) => c.status === 'FAIL')?.detail ?? null;
  return { problem, digest: envelope.envelope ? envelopeDigest(envelope.envelope).toString('hex') : null };
}

export function auditByLog(documents: readonly AuditDocument[], options: LogAuditOptions): LogAuditReport {
  const rows: LogAuditRow[] = [];
  const unreadable: Array<{ file: string; error: string }> = [];
  const inFolder = new Set<string>();
  for (const d of documents) {
    const attached = findAttached(d.value);
    let subject;
    try {
      subject = recognizeForDiscovery(attached?.document ?? d.value);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      unreadable.push({ file: d.file, error: err.message });
      continue;
    }
    const { kind, key } = subject;
    inFolder.add(key);
    const logged = options.entries.get(key);
    const row = (outcome: LogAuditOutcome, detail: string): void => void rows.push({ outcome, kind, key, file: d.file, index: logged?.index ?? null, detail });
    if (logged === undefined) {
      row('not-logged', `no entry for this key in ${options.logName}`);
      continue;
    }
    const at = `entry ${logged.index} (d ${logged.digest})`;
    if (entryKindOfSubject(kind) !== logged.kind) {
      row('altered', `${at} logs this key as a ${logged.kind}, the document is a ${kind}`);
      continue;
    }
    if (attached === null) {
      row('unchecked', `logged as ${at}; the document carries no anchor_proof, whose envelope (anchored_at) d is computed from: not checked`);
      continue;
    }
    let held;
    try {
      held = holdToProof(d.value);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      unreadable.push({ file: d.file, error: err.message });
      continue;
    }
    const { problem, digest } = held;
    if (digest === logged.digest) {
      if (problem) row(outcomeOf(problem), `the envelope of ${at} is the proof's, and the document disagrees with it: ${problem}`);
      else row('matching', `${at}: the document recomputed gives the logged envelope's values; d, kind and key are the entry's`);
      continue;
    }
    const other = digest === null ? 'the proof carries no readable envelope' : `the proof's envelope gives d ${digest}`;
    const against = problem ? `; the document also disagrees with that envelope: ${problem}` : '';
    row(problem ? outcomeOf(problem) : 'altered', `same key, other digest: ${at}, ${other}: the document and its proof are not what was logged${against}`);
  }
  const withheld = [...options.entries].filter(([key]) => !inFolder.has(key)).sort((a, b) => a[1].index - b[1].index);
  for (const [key, e] of withheld) {
    rows.push({ outcome: 'withheld', kind: e.kind, key, file: null, index: e.index, detail: `entry ${e.index} (d ${e.digest}); no document in the folder` });
  }
  const counts = Object.fromEntries(LOG_AUDIT_OUTCOMES.map((o) => [o, 0])) as Record<LogAuditOutcome, number>;
  for (const r of rows) counts[r.outcome]++;
  return { rows, counts, unreadable };
}

/** 2 a document unreadable; 1 any subject not matching (unchecked aside); 3 some unchecked; else 0. */
export function logAuditExitCode(report: LogAuditReport): number {
  if (report.unreadable.length) return 2;
  if (report.rows.some((r) => r.outcome !== 'matching' && r.outcome !== 'unchecked')) return 1;
  if (report.rows.some((r) => r.outcome === 'unchecked')) return 3;
  return 0;
}
