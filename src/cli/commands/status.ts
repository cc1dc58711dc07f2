import { configuredSources, subjectDetail, type AnchorDetail } from '../../adapters/state/subject-view.js';
import { CLIENT_OPTIONS, connectClient } from '../shared/connect.js';
import { commandArgs } from '../shared/args.js';
import { UsageError } from '../shared/run.js';
import { ProofArchive, archivedSummary, type ArchivedAnchor } from '../../adapters/archive/proof-archive.js';
import { ProofExporter, type RetiredAnchor } from '../../adapters/proof/export.js';
import { shardLogDir } from '../../adapters/config/config.js';
import type { Client } from '../shared/connect.js';

export const summary = "show a subject's anchoring state: witnesses, relays, calendars, history";

function render(v: AnchorDetail): string {
  const lines = [`${v.key}: ${v.status}${v.kind ? ` (${v.kind})` : ''}`];
  if (v.reason) lines.push(`  reason: ${v.reason}`);
  if (v.digest) lines.push(`  digest: ${v.digest}`);
  const n = v.witnesses.nostr;
  if (n) {
    lines.push(`  nostr: ${n.status}${n.mode ? `  ${n.mode} mode` : ''}${n.eventId ? `  event ${n.eventId}` : ''}${n.batch ? `  batch ${n.batch.id} #${n.batch.index}` : ''}`);
    for (const r of n.relays) lines.push(`    ${r.url}: ${r.status}${r.message ? ` (${r.message})` : ''}`);
  }
  const o = v.witnesses.ots;
  if (o) {
    lines.push(`  ots: ${o.status}${o.batch ? `  batch ${o.batch.id} #${o.batch.index} of ${o.batch.size}` : ''}${o.bitcoin ? `  Bitcoin block ${o.bitcoin.height}` : ''}`);
    for (const c of o.calendars) lines.push(`    ${c.url}: ${c.status}${c.message ? ` (${c.message})` : ''}`);
  }
  lines.push('  history:');
  for (const h of v.history) {
    const what = h.event === 'witness' ? `${h.witness} ${h.from} -> ${h.to} (overall ${h.status})${h.detail ? `: ${h.detail}` : ''}` : `${h.event}${h.reason ? `: ${h.reason}` : ''}`;
    lines.push(`    ${h.at}  ${what}`);
  }
  return lines.join('\n') + '\n';
}

/** A subject retired from Redis (to the anchor log, or to the archive), as GET shows it. */
function renderRetired(a: ArchivedAnchor | RetiredAnchor): string {
  const where = 'retired' in a ? `retired to the anchor log at index ${a.logIndex}` : 'archived';
  const from = 'retired' in a ? 'is rebuilt from the anchor log' : 'is in the archive';
  const witnesses = Object.entries(a.witnesses).map(([w, st]) => `  ${w}: ${st}`);
  return [`${a.key}: ${a.status}${a.kind ? ` (${a.kind})` : ''}, ${where}`, `  digest: ${a.digest}`, ...witnesses, `  retired from Redis; its proof ${from} (aer1-anchor proof ${a.key})`].join('\n') + '\n';
}

/** A subject no longer in Redis: retired lean (log.enabled), or archived (archive.dir); null when neither has it. */
async function retiredView(client: Client, key: string): Promise<ArchivedAnchor | RetiredAnchor | null> {
  const c = client.config;
  if (c.log.enabled) {
    const store = client.state.of(key);
    const lean = await new ProofExporter(store, configuredSources(c), { dir: shardLogDir(c, client.state.shards.indexOf(store)) }).retiredAnchor(key);
    if (lean) return lean;
  }
  const archived = c.archive.dir !== null ? await new ProofArchive(c.archive.dir).read(key) : null;
  return archived ? archivedSummary(key, archived.proof) : null;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, CLIENT_OPTIONS, { positionals: true });
  const usage = 'usage: aer1-anchor status KEY [--json] [--config FILE] [--redis-url URL]';
  if (values.help) {
    process.stdout.write(`${usage}\n  ${summary}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(usage);
  const client = await connectClient(values);
  try {
    const view = await subjectDetail(client.state.of(positionals[0]!), client.config, positionals[0]!);
    if (!view) {
      const retired = await retiredView(client, positionals[0]!);
      if (retired) {
        process.stdout.write(values.json ? JSON.stringify(retired, null, 2) + '\n' : renderRetired(retired));
        return 0;
      }
      process.stderr.write(`aer1-anchor: no subject with key ${positionals[0]}\n`);
      return 1;
    }
    process.stdout.write(values.json ? JSON.stringify(view, null, 2) + '\n' : render(view));
    return 0;
  } finally {
    await client.close();
  }
}
