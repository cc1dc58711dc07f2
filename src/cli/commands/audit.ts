/**
 * `aer1-anchor audit --relay URL... --expected-pubkey KEY... [--since T] [--kind N]...
 * [--max-events N] [--json] DIR`: monitor mode. Lists every anchor the signers published
 * on the relays and holds the folder's documents against them (src/core/verify/audit.ts).
 * Exit 0 when every subject matches, 1 on any mismatch, 2 on usage or unreadable input,
 * 3 when an answer was incomplete and nothing contradicts the folder.
 */
import { basename } from 'node:path';
import { checkAnchoredAt } from '../../core/envelope/envelope.js';
import { quote } from '../../core/verify/anchor-events.js';
import { npubOf } from '../../core/verify/discover.js';
import { audit, auditExitCode, AUDIT_OUTCOMES, type AuditDocument, type AuditReport } from '../../core/verify/audit.js';
import { parseExpectedPubkey } from '../../core/verify/nostr.js';
import { RelayClientFetcher } from '../../adapters/nostr/relay-fetcher.js';
import { VERSION } from '../../version.js';
import { parseKinds, parseRelays } from '../shared/discovery-options.js';
import { readJsonFile, UsageError } from '../shared/run.js';
import { jsonFilesIn, parseMaxEvents } from './verify-anchor.js';
import { displayName, oneLine } from '../../core/verify/names.js';
import type { RelayAnswer } from '../../core/verify/relay-pages.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'hold a folder of documents against every anchor a signer published on relays';

const USAGE = `usage: aer1-anchor audit --relay URL... --expected-pubkey HEX|npub... [--since T]
         [--kind N]... [--max-events N] [--json] DIR
       aer1-anchor audit --log PREFIX --log-key VKEY... [--max-entries N] [--json] DIR

Lists the signers' envelope-mode anchors on the relays (batch-mode events are counted:
they name no subject), looks every key in DIR up in full, and classifies every subject:
matching; altered or truncated (anchored, the document disagrees); equivocated (anchored
twice with different roots); not-anchored (in DIR, never anchored); withheld (anchored,
missing from DIR); incomplete (a relay's answer for it could not be read to its end).
Every answer is read page by page, at most --max-events events per relay and look-up
(default 10000). --since (RFC 3339 or unix seconds) limits only the listing that finds
withheld subjects. Exit 0 all match, 1 any mismatch, 2 usage or unreadable input,
3 incomplete answers and nothing else wrong.

With --log, the folder is held against the issuer's anchor log at PREFIX (a folder or a
loopback URL), read to its checkpoint signed by a --log-key you give: matching; altered
or truncated (the key's entry has another digest, or the document disagrees with it);
not-logged (in DIR, no entry); withheld (an entry, no document in DIR: complete up to the
checkpoint's size); unchecked (logged, but the document carries no anchor_proof whose
envelope gives the digest). Exit 0 all match, 1 any other outcome but unchecked, 2 usage
or unreadable input, 3 some unchecked and nothing else wrong (or no key you gave signed
the checkpoint).`;

const LABELS: Record<string, string> = {
  matching: 'matching',
  altered: 'altered',
  truncated: 'truncated',
  equivocated: 'equivocated',
  'not-anchored': 'not anchored',
  withheld: 'withheld',
  incomplete: 'incomplete',
};

function answerText(r: RelayAnswer, what: string): string {
  const events = `${r.events} event${r.events === 1 ? '' : 's'} ${what}`;
  if (r.error !== null) return `unreachable: ${oneLine(r.error)}`;
  return r.complete ? events : `${events} (incomplete: ${oneLine(r.incomplete ?? '')})`;
}

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
  const lines = [`aer1-anchor audit ${VERSION}: ${displayName(dir)} against anchors by ${report.signers.map(npubOf).join(', ')}`];
  report.relays.forEach((r, i) => {
    const lookup = report.lookups[i];
    lines.push(`  relay ${oneLine(r.url)}: ${answerText(r, 'listed')}${lookup && lookup.pages > 0 ? `; ${answerText(lookup, 'by key')}` : ''}`);
  });
  lines.push(`  ${report.anchor_events} envelope-mode anchor event${report.anchor_events === 1 ? '' : 's'}; ${report.batch_events} batch-mode event${report.batch_events === 1 ? '' : 's'} (a batch names no subject: those subjects cannot be listed)`);
  lines.push('');
  lines.push('matching: anchored, the document agrees; altered / truncated: anchored, the document disagrees;');
  lines.push('equivocated: anchored twice with different roots; not anchored: in the folder, no anchor found;');
  lines.push('withheld: anchored, missing from the folder; incomplete: a relay\'s answer could not be read to its end');
  lines.push('');
  lines.push(`${'OUTCOME'.padEnd(13)} ${'KIND'.padEnd(15)} ${'KEY'.padEnd(40)} ${'FILE'.padEnd(24)} DETAIL`);
  for (const row of report.rows) {
    lines.push(`${row.outcome.padEnd(13)} ${(row.kind ?? '-').padEnd(15)} ${quote(row.key, 38).padEnd(40)} ${(row.file === null ? '-' : displayName(basename(row.file), 60)).padEnd(24)} ${oneLine(row.detail)}`);
  }
  for (const u of report.unreadable) lines.push(`${'UNREADABLE'.padEnd(13)} ${'-'.padEnd(15)} ${'-'.padEnd(40)} ${displayName(basename(u.file), 60).padEnd(24)} ${oneLine(u.error)}`);
  for (const ig of report.ignored.slice(0, 5)) lines.push(`  ignored: event ${ig.event_id ?? '(no id)'} from ${oneLine(ig.relay)}: ${oneLine(ig.reason)}`);
  if (report.ignored.length > 5) lines.push(`  ignored: ${report.ignored.length - 5} more events (--json lists them)`);
  lines.push('');
  const counts = AUDIT_OUTCOMES.map((o) => `${report.counts[o]} ${LABELS[o]}`).join(', ');
  lines.push(`SUMMARY: ${report.rows.length} subject${report.rows.length === 1 ? '' : 's'}: ${counts}; ${report.unreadable.length} unreadable`);
  return `${lines.join('\n')}\n`;
}

/** The folder's JSON files, read; each one refused is a line on stderr and a row, the others are still audited. */
export function readFolder(dir: string): { documents: AuditDocument[]; unreadable: Array<{ file: string; error: string }> } {
  const documents: AuditDocument[] = [];
  const unreadable: Array<{ file: string; error: string }> = [];
  for (const file of jsonFilesIn(dir)) {
    try {
      documents.push({ file, value: readJsonFile(file) });
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      process.stderr.write(`aer1-anchor: ${err.message}\n`);
      unreadable.push({ file, error: err.message });
    }
  }
  return { documents, unreadable };
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, {
    relay: { type: 'string', multiple: true },
    'expected-pubkey': { type: 'string', multiple: true },
    since: { type: 'string' },
    kind: { type: 'string', multiple: true },
    'max-events': { type: 'string' },
    log: { type: 'string' },
    'log-key': { type: 'string', multiple: true },
    'max-entries': { type: 'string' },
    json: { type: 'boolean' },
  }, { positionals: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`expected exactly one DIR\n${USAGE}`);
  if (values.log !== undefined) {
    const others = (['relay', 'expected-pubkey', 'since', 'kind', 'max-events'] as const).filter((k) => values[k] !== undefined);
    if (others.length) throw new UsageError(`audit --log holds the folder against the log alone: --${others[0]} is for the relay audit`);
    return (await import('./audit-log.js')).runLogAudit({ log: values.log, logKeys: values['log-key'], maxEntries: values['max-entries'], json: values.json ?? false }, positionals[0]!);
  }
  if (values['log-key'] !== undefined || values['max-entries'] !== undefined) throw new UsageError('--log-key and --max-entries go with --log PREFIX');
  const relays = parseRelays(values.relay);
  if (relays.length === 0) throw new UsageError('audit needs --relay URL (repeatable): the relays to list the anchors from');
  const trusted = (values['expected-pubkey'] ?? []).map(parseExpectedPubkey);
  if (trusted.length === 0) throw new UsageError('audit needs --expected-pubkey KEY (repeatable): only the signers you trust are listed');
  const kinds = parseKinds(values.kind);
  const since = parseSince(values.since);
  const maxEvents = parseMaxEvents(values['max-events']);
  const dir = positionals[0]!;

  const { documents, unreadable } = readFolder(dir);

  const fetcher = new RelayClientFetcher();
  let report: AuditReport;
  try {
    report = await audit(documents, { relays, trustedPubkeys: trusted, kinds, ...(since !== undefined ? { since } : {}), ...(maxEvents !== undefined ? { bound: { maxEvents } } : {}), fetcher });
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
