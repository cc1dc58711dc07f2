/**
 * How verification results are shown: a header line with the tool and its version, one
 * line per check, `VERDICT: PASS|FAIL|INCONCLUSIVE: <reason>`; for several files a block
 * per file and a summary line. `--json` gives the same content as objects (see
 * docs/verify.md). File names are shown escaped and bounded (names.ts).
 */
import type { VerifyReport } from './pipeline.js';
import type { DiscoveryReport } from './discover.js';
import { discoveryJson, formatDiscovery } from './discovery-report.js';
import { displayName, oneLine } from './names.js';

export const TOOL_NAME = 'aer1-verify-anchor';

/** Exit codes of `aer1-verify-anchor` and `aer1-anchor audit` (docs/verify.md). */
export const EXIT = { pass: 0, fail: 1, unreadable: 2, inconclusive: 3 } as const;

/** One file's outcome: a report, or the reason it could not be read (exit 2). */
export type FileOutcome =
  | { readonly file: string; readonly report: VerifyReport }
  | { readonly file: string; readonly unreadable: string }
  // a document without proof, checked against the anchors found on relays (discover.ts)
  | { readonly file: string; readonly discovery: DiscoveryReport };

export interface RunSummary {
  files: number;
  pass: number;
  /** PASS results with no witness confirmed yet (counted in `pass` too). */
  pending: number;
  fail: number;
  /** Nothing established (no anchor found, answers incomplete, relays unreachable). */
  inconclusive: number;
  unreadable: number;
}

/** The tool's version comes from its caller (the CLI reads package.json; the core does no I/O). */
export function headerLine(version: string): string {
  return `${TOOL_NAME} ${version}`;
}

const NAME_WIDTH = 17;

/** Per witness: what it established and what it did not (docs/verify.md, the trust model). */
function witnessLines(report: VerifyReport): string[] {
  const lines: string[] = [];
  for (const [name, w] of [['nostr', report.witnesses.nostr], ['ots', report.witnesses.ots]] as const) {
    if (!w) continue;
    if (w.established.length) lines.push(`  WITNESS ${name.padEnd(5)} established: ${oneLine(w.established.join('; '))}`);
    if (w.not_established.length) lines.push(`  WITNESS ${name.padEnd(5)} not established: ${oneLine(w.not_established.join('; '))}`);
  }
  for (const t of report.times) lines.push(`  TIME    ${t.kind.padEnd(7)} ${oneLine(t.statement)}`);
  return lines;
}

export function formatReport(report: VerifyReport): string {
  const lines = report.checks.map((c) => `  ${c.status.padEnd(4)}  ${c.name.padEnd(NAME_WIDTH)} ${oneLine(c.detail)}`);
  lines.push(...witnessLines(report));
  lines.push(`VERDICT: ${report.verdict}: ${oneLine(report.reason)}`);
  return lines.join('\n');
}

export function summarize(outcomes: readonly FileOutcome[]): RunSummary {
  const s: RunSummary = { files: outcomes.length, pass: 0, pending: 0, fail: 0, inconclusive: 0, unreadable: 0 };
  for (const o of outcomes) {
    const r = 'discovery' in o ? o.discovery : 'report' in o ? o.report : null;
    if (r === null) s.unreadable++;
    else if (r.verdict === 'FAIL') s.fail++;
    else if (r.verdict === 'INCONCLUSIVE') s.inconclusive++;
    else {
      s.pass++;
      if (r.pending) s.pending++;
    }
  }
  return s;
}

export function summaryLine(s: RunSummary): string {
  const pending = s.pending ? ` (${s.pending} pending)` : '';
  return `SUMMARY: ${s.files} file${s.files === 1 ? '' : 's'}: ${s.pass} PASS${pending}, ${s.fail} FAIL, ${s.inconclusive} inconclusive, ${s.unreadable} unreadable`;
}

/** Exit code of a run: 2 when any input was unreadable, else 1 when any FAIL, else 3 when any INCONCLUSIVE, else 0. */
export function exitCode(s: RunSummary): number {
  if (s.unreadable) return EXIT.unreadable;
  if (s.fail) return EXIT.fail;
  return s.inconclusive ? EXIT.inconclusive : EXIT.pass;
}

/** Text output; `single` prints one file without the summary line. */
export function formatText(outcomes: readonly FileOutcome[], single: boolean, version: string): string {
  const blocks = [headerLine(version)];
  for (const o of outcomes) {
    const lines = [`file: ${displayName(o.file)}`];
    if ('report' in o) lines.push(formatReport(o.report));
    else if ('discovery' in o) lines.push(formatDiscovery(o.discovery));
    else lines.push(`UNREADABLE: ${oneLine(o.unreadable)}`);
    blocks.push(lines.join('\n'));
  }
  if (!single) blocks.push(summaryLine(summarize(outcomes)));
  return `${blocks.join(single ? '\n' : '\n\n')}\n`;
}

/** One file's result as `--json` prints it (SPEC section 6), with the file named. */
export type ReportJson = Pick<VerifyReport, 'verdict' | 'reason' | 'pending' | 'subject' | 'witnesses' | 'times'> & {
  file: string;
  checks: Array<{ name: string; status: string; detail: string }>;
};

export function reportJson(file: string, report: VerifyReport): ReportJson {
  return {
    file,
    verdict: report.verdict,
    reason: report.reason,
    pending: report.pending,
    checks: report.checks.map((c) => ({ name: c.name, status: c.status, detail: c.detail })),
    subject: report.subject,
    witnesses: report.witnesses,
    times: report.times,
  };
}

/**
 * `--json`: one file gives its result object; several give
 * `{tool, version, results: [...], summary}` where an unreadable file's result is
 * `{file, verdict: "ERROR", error}`.
 */
export function formatJson(outcomes: readonly FileOutcome[], single: boolean, version: string): string {
  const results = outcomes.map((o) => ('report' in o ? reportJson(o.file, o.report) : 'discovery' in o ? discoveryJson(o.file, o.discovery) : { file: o.file, verdict: 'ERROR', error: o.unreadable }));
  if (single && results.length === 1) return `${JSON.stringify({ tool: TOOL_NAME, version, ...results[0] }, null, 2)}\n`;
  return `${JSON.stringify({ tool: TOOL_NAME, version, results, summary: summarize(outcomes) }, null, 2)}\n`;
}
