/**
 * `aer1-anchor audit --log PREFIX --log-key VKEY... [--max-entries N] [--json] DIR`: the
 * folder held against the issuer's anchor log (src/core/verify/log-audit.ts). The log is
 * read first, every tile and bundle checked to a checkpoint signed by a key the caller
 * gives (log-check.ts); its entries by key are what the documents are held against.
 */
import { basename } from 'node:path';
import { inspectLog } from '../../adapters/log/log-check.js';
import { logSource } from '../../adapters/log/log-source.js';
import { decodeEntry } from '../../core/log/entry.js';
import { auditByLog, logAuditExitCode, LOG_AUDIT_OUTCOMES, type LoggedEntry, type LogAuditReport } from '../../core/verify/log-audit.js';
import { displayName, oneLine } from '../../core/verify/names.js';
import { quote } from '../../core/verify/anchor-events.js';
import { VERSION } from '../../version.js';
import { readFolder } from './audit.js';
import { formatLogReport, parseLogKeys, parseMaxEntries } from './log.js';

/** Rows of one outcome printed in text before the rest are counted (--json lists all). */
const TEXT_ROWS = 50;

export interface LogAuditFlags {
  readonly log: string;
  readonly logKeys: readonly string[] | undefined;
  readonly maxEntries: string | undefined;
  readonly json: boolean;
}

function formatLogAudit(report: LogAuditReport, dir: string, log: { prefix: string; origin: string; size: number; root: string }): string {
  const lines = [`aer1-anchor audit ${VERSION}: ${displayName(dir)} against the anchor log ${oneLine(log.origin)} at size ${log.size} (${oneLine(log.prefix)}, root ${log.root})`, ''];
  lines.push('matching: logged, the document agrees; altered / truncated: logged under its key, the document or its proof is not what was logged;');
  lines.push('not-logged: in the folder, no entry; withheld: logged, no document in the folder; unchecked: logged, no anchor_proof to recompute d from');
  lines.push('');
  lines.push(`${'OUTCOME'.padEnd(11)} ${'INDEX'.padEnd(8)} ${'KIND'.padEnd(15)} ${'KEY'.padEnd(40)} ${'FILE'.padEnd(24)} DETAIL`);
  const shown = new Map<string, number>();
  for (const row of report.rows) {
    const n = (shown.get(row.outcome) ?? 0) + 1;
    shown.set(row.outcome, n);
    if (n > TEXT_ROWS) continue;
    lines.push(`${row.outcome.padEnd(11)} ${String(row.index ?? '-').padEnd(8)} ${(row.kind ?? '-').padEnd(15)} ${quote(row.key, 38).padEnd(40)} ${(row.file === null ? '-' : displayName(basename(row.file), 60)).padEnd(24)} ${oneLine(row.detail)}`);
  }
  for (const [outcome, n] of shown) if (n > TEXT_ROWS) lines.push(`${outcome.padEnd(11)} ... and ${n - TEXT_ROWS} more (--json lists them)`);
  for (const u of report.unreadable) lines.push(`${'UNREADABLE'.padEnd(11)} ${'-'.padEnd(8)} ${'-'.padEnd(15)} ${'-'.padEnd(40)} ${displayName(basename(u.file), 60).padEnd(24)} ${oneLine(u.error)}`);
  lines.push('');
  lines.push(`SUMMARY: ${report.rows.length} subject${report.rows.length === 1 ? '' : 's'}: ${LOG_AUDIT_OUTCOMES.map((o) => `${report.counts[o]} ${o}`).join(', ')}; ${report.unreadable.length} unreadable`);
  return `${lines.join('\n')}\n`;
}

export async function runLogAudit(flags: LogAuditFlags, dir: string): Promise<number> {
  const logKeys = parseLogKeys(flags.logKeys, 'audit --log');
  const maxEntries = parseMaxEntries(flags.maxEntries);
  const { documents, unreadable } = readFolder(dir);
  const entries = new Map<string, LoggedEntry>();
  const inspection = await inspectLog(logSource(flags.log), {
    trusted: logKeys,
    maxEntries,
    onEntry: (index, bytes) => {
      try {
        const e = decodeEntry(bytes);
        // a key is logged once: the first entry is its entry (a later one fails nothing here, the log's own check is the entries')
        if (!entries.has(e.key)) entries.set(e.key, { index, kind: e.kind, digest: Buffer.from(e.digest).toString('hex') });
      } catch {
        // the entries check names it
      }
    },
  });
  const log = inspection.report;
  if (log.verdict !== 'PASS' || log.checkpoint === null) {
    // the folder is held only against a log that holds together under a key the caller trusts
    process.stdout.write(flags.json ? `${JSON.stringify({ tool: 'aer1-anchor audit', version: VERSION, dir, log, exit: log.verdict === 'FAIL' ? 1 : 3 })}\n` : `${formatLogReport(log)}audit: the log does not establish anything to hold ${displayName(dir)} against\n`);
    return log.verdict === 'FAIL' ? 1 : 3;
  }
  const cp = log.checkpoint;
  let report = auditByLog(documents, { entries, logName: `${cp.origin} at size ${cp.size}` });
  report = { ...report, unreadable: [...unreadable, ...report.unreadable] };
  const code = logAuditExitCode(report);
  const where = { prefix: log.prefix, origin: cp.origin, size: cp.size, root: cp.root };
  process.stdout.write(flags.json
    ? `${JSON.stringify({ tool: 'aer1-anchor audit', version: VERSION, dir, log: where, ...report, exit: code }, null, 2)}\n`
    : formatLogAudit(report, dir, where));
  return code;
}
