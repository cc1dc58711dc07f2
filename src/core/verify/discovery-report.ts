/**
 * How a discovery result is shown (text and `--json`), beside report.ts: one line naming
 * what was asked of whom, a block per anchor found (its checks, as for a proof), the
 * events ignored, then `VERDICT: PASS|FAIL|INCONCLUSIVE: <reason>`.
 */
import type { DiscoveryReport } from './discover.js';
import { oneLine } from './names.js';

const NAME_WIDTH = 17;
/** Ignored events named in the text output; the rest are counted (--json lists them all). */
const IGNORED_SHOWN = 5;

export function formatDiscovery(report: DiscoveryReport): string {
  const answered = report.relays.filter((r) => r.error === null).length;
  const lines = [
    `  discovery: ${report.subject.description}, signed by ${report.signers.join(', ')}: asked ${report.relays.length} relay${report.relays.length === 1 ? '' : 's'} (${answered} answered), ${report.anchors.length} anchor${report.anchors.length === 1 ? '' : 's'} found`,
  ];
  for (const r of report.relays) {
    const events = `${r.events} event${r.events === 1 ? '' : 's'}`;
    lines.push(`    relay ${oneLine(r.url)}: ${r.error === null ? (r.complete ? `${events}, complete` : `${events} (incomplete: ${oneLine(r.incomplete ?? '')})`) : `unreachable: ${oneLine(r.error)}`}`);
  }
  report.anchors.forEach((a, i) => {
    lines.push(`  anchor ${i + 1} of ${report.anchors.length}: event ${a.event_id}, anchored_at ${a.anchored_at}, on ${a.relays.join(', ')}`);
    for (const c of a.report.checks) lines.push(`    ${c.status.padEnd(4)}  ${c.name.padEnd(NAME_WIDTH)} ${oneLine(c.detail)}`);
    lines.push(`    anchor ${i + 1}: ${a.report.verdict}: ${oneLine(a.report.reason)}`);
  });
  for (const ig of report.ignored.slice(0, IGNORED_SHOWN)) lines.push(`  ignored: event ${ig.event_id ?? '(no id)'} from ${oneLine(ig.relay)}: ${oneLine(ig.reason)}`);
  if (report.ignored.length > IGNORED_SHOWN) lines.push(`  ignored: ${report.ignored.length - IGNORED_SHOWN} more events (--json lists them)`);
  if (report.batch_events !== null && report.batch_events > 0) {
    lines.push(`  batch mode: ${report.batch_events} batch event${report.batch_events === 1 ? '' : 's'} by the signer; a batch names no subject, so discovery cannot tell whether one holds this document`);
  }
  lines.push(`VERDICT: ${report.verdict}: ${oneLine(report.reason)}`);
  return lines.join('\n');
}

/** `--json` for one discovery: the same content as objects. */
export function discoveryJson(file: string, report: DiscoveryReport): Record<string, unknown> {
  return {
    file,
    mode: 'discovery',
    verdict: report.verdict,
    reason: report.reason,
    pending: report.pending,
    subject: report.subject,
    signers: report.signers,
    relays: report.relays,
    anchors: report.anchors.map((a) => ({
      event_id: a.event_id,
      pubkey: a.pubkey,
      created_at: a.created_at,
      anchored_at: a.anchored_at,
      relays: a.relays,
      verdict: a.report.verdict,
      reason: a.report.reason,
      checks: a.report.checks.map((c) => ({ name: c.name, status: c.status, detail: c.detail })),
      witnesses: a.report.witnesses,
    })),
    ignored: report.ignored,
    batch_events: report.batch_events,
  };
}
