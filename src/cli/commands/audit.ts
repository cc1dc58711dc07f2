/**
 * `aer1-anchor audit --relay URL... --expected-pubkey KEY... [--since T] [--kind N]...
 * [--json] DIR`: monitor mode. Lists every anchor the signers published on the relays and
 * holds the folder's documents against them (src/core/verify/audit.ts). Exit 0 when every
 * subject matches, 1 on any mismatch, 2 on usage or unreadable input.
 */
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { checkAnchoredAt } from '../../core/envelope/envelope.js';
import { quote } from '../../core/verify/anchor-events.js';
import { npubOf } from '../../core/verify/discover.js';
import { audit, auditExitCode, AUDIT_OUTCOMES, type AuditDocument, type AuditReport } from '../../core/verify/audit.js';
import { parseExpectedPubkey } from '../../core/verify/nostr.js';
import { RelayClientFetcher } from '../../adapters/nostr/relay-fetcher.js';
import { VERSION } from '../../version.js';
import { parseKinds, parseRelays } from '../shared/discovery-options.js';
import { readJsonFile, UsageError } from '../shared/run.js';
import { jsonFilesIn } from './verify-anchor.js';

export const summary = 'hold a folder of documents against every anchor a signer published on relays';

const USAGE = `usage: aer1-anchor audit --relay URL... --expected-pubkey HEX|npub... [--since T]
         [--kind N]... [--json] DIR

Lists the signers' envelope-mode anchors on the relays (batch-mode events are counted:
they name no subject) and classifies every subject: matching; altered or truncated
(anchored, the document disagrees); not-anchored (in DIR, never anchored); withheld
(anchored, missing from DIR). --since (RFC 3339 or unix seconds) limits the listing;
documents in DIR are still looked up by key. Exit 0 all match, 1 any mismatch, 2 usage
or unreadable input.`;

const LABELS: Record<string, string> = {
  matching: 'matching',
  altered: 'altered',
  truncated: 'truncated',
  'not-anchored': 'not anchored',
  withheld: 'withheld',
};

/** `--since`: RFC 3339 UTC with whole seconds (`2026-01-31T12:00:00Z`, as `anchored_at`) or unix seconds. */
export function parseSince(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (/^\d{1,12}$/.test(t)) return Number(t);
  try {
    return Date.parse(checkAnchoredAt(t, '--since')) / 1000;
  } catch {
    throw new UsageError(`--since ${JSON.stringify(t.slice(0, 40))} is neither RFC 3339 UTC (2026-01-31T12:00:00Z) nor unix seconds`);
  }
}

export function formatAudit(report: AuditReport, dir: string): string {
  const lines = [`aer1-anchor audit ${VERSION}: ${dir} against anchors by ${report.signers.map(npubOf).join(', ')}`];
  for (const r of report.relays) {
    lines.push(`  relay ${r.url}: ${r.error === null ? `${r.events} event${r.events === 1 ? '' : 's'} listed${r.complete ? '' : ' (listing incomplete: a bound was reached)'}` : `unreachable: ${r.error.replace(/[\r\n]+/g, ' ')}`}`);
  }
  lines.push(`  ${report.anchor_events} envelope-mode anchor event${report.anchor_events === 1 ? '' : 's'}; ${report.batch_events} batch-mode event${report.batch_events === 1 ? '' : 's'} (a batch names no subject: those subjects cannot be listed)`);
  lines.push('');
  lines.push('matching: anchored, the document agrees; altered / truncated: anchored, the document disagrees;');
  lines.push('not anchored: in the folder, no anchor found; withheld: anchored, missing from the folder');
  lines.push('');
  lines.push(`${'OUTCOME'.padEnd(13)} ${'KIND'.padEnd(15)} ${'KEY'.padEnd(40)} ${'FILE'.padEnd(24)} DETAIL`);
  for (const row of report.rows) {
    lines.push(`${row.outcome.padEnd(13)} ${(row.kind ?? '-').padEnd(15)} ${quote(row.key, 38).padEnd(40)} ${(row.file === null ? '-' : basename(row.file)).padEnd(24)} ${row.detail.replace(/[\r\n]+/g, ' ')}`);
  }
  for (const u of report.unreadable) lines.push(`${'UNREADABLE'.padEnd(13)} ${'-'.padEnd(15)} ${'-'.padEnd(40)} ${basename(u.file).padEnd(24)} ${u.error.replace(/[\r\n]+/g, ' ')}`);
  for (const ig of report.ignored) lines.push(`  ignored: event ${ig.event_id ?? '(no id)'} from ${ig.relay}: ${ig.reason.replace(/[\r\n]+/g, ' ')}`);
  lines.push('');
  const counts = AUDIT_OUTCOMES.map((o) => `${report.counts[o]} ${LABELS[o]}`).join(', ');
  lines.push(`SUMMARY: ${report.rows.length} subject${report.rows.length === 1 ? '' : 's'}: ${counts}; ${report.unreadable.length} unreadable`);
  return `${lines.join('\n')}\n`;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      relay: { type: 'string', multiple: true },
      'expected-pubkey': { type: 'string', multiple: true },
      since: { type: 'string' },
      kind: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`expected exactly one DIR\n${USAGE}`);
  const relays = parseRelays(values.relay);
  if (relays.length === 0) throw new UsageError('audit needs --relay URL (repeatable): the relays to list the anchors from');
  const trusted = (values['expected-pubkey'] ?? []).map(parseExpectedPubkey);
  if (trusted.length === 0) throw new UsageError('audit needs --expected-pubkey KEY (repeatable): only the signers you trust are listed');
  const kinds = parseKinds(values.kind);
  const since = parseSince(values.since);
  const dir = positionals[0]!;

  const documents: AuditDocument[] = [];
  const unreadable: Array<{ file: string; error: string }> = [];
  for (const file of jsonFilesIn(dir)) {
    try {
      documents.push({ file, value: readJsonFile(file) });
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      unreadable.push({ file, error: err.message });
    }
  }

  const fetcher = new RelayClientFetcher();
  let report: AuditReport;
  try {
    report = await audit(documents, { relays, trustedPubkeys: trusted, kinds, ...(since !== undefined ? { since } : {}), fetcher });
  } finally {
    fetcher.close();
  }
  report = { ...report, unreadable: [...unreadable, ...report.unreadable] };
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ tool: 'aer1-anchor audit', version: VERSION, dir, ...report, exit: auditExitCode(report) }, null, 2)}\n`);
  } else {
    process.stdout.write(formatAudit(report, dir));
  }
  return auditExitCode(report);
}
