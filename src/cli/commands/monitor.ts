/**
 * `aer1-anchor monitor --log PREFIX --log-key VKEY... [--relay URL... --author KEY]
 * [--state FILE] [--json] [--once | --interval MS [--max-rounds N]]`: follows an anchor log
 * (src/adapters/log/log-monitor.ts). Exit 0 every round held, 1 a fork or a failed check
 * (stops at once), 2 usage or the last round unreadable, 3 the checkpoint is signed by no
 * key given.
 */
import { LogMonitor, readMonitorState, writeMonitorState, type MonitorRound, type MonitorState } from '../../adapters/log/log-monitor.js';
import { logSource } from '../../adapters/log/log-source.js';
import { RelayClientFetcher } from '../../adapters/nostr/relay-fetcher.js';
import { oneLine } from '../../core/verify/names.js';
import { VERSION } from '../../version.js';
import { parseRelays } from '../shared/discovery-options.js';
import { UsageError } from '../shared/run.js';
import { parseAuthors, parseLogKeys, parseMaxEntries, relayLine } from './log.js';
import { parseMaxEvents } from './verify-anchor.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'follow an anchor log: prove each new checkpoint consistent, report forks, list new entries';

const USAGE = `usage: aer1-anchor monitor --log PREFIX --log-key VKEY... [--relay URL... --author KEY]
         [--state FILE] [--json] [--once | --interval MS [--max-rounds N]]
         [--max-entries N] [--max-events N] [--max-listed N]

Each round reads the log's checkpoint at PREFIX (a folder or a loopback http(s) URL),
which must be signed by a --log-key you give, checks the tree from the tiles, proves the
checkpoint consistent with the last one verified (kept in --state FILE across runs) and
with every checkpoint event --author published on the --relays, and lists the entries
added since (index, kind, key, digest). Two signed checkpoints that are not consistent
(a same size with another root included) are a FORK: both notes are printed and the
monitor stops, exit 1. --once (the default) runs one round; --interval MS runs one every
MS milliseconds, at most --max-rounds (default 1000000), until SIGINT or SIGTERM.
--json prints one JSON object per round (docs/log.md).
Exit 0 every round held, 1 a fork, a rollback or a failed check, 2 usage or the last
round unreadable, 3 the checkpoint is signed by no key you gave.`;

function positiveInt(text: string | undefined, flag: string, fallback: number, max = 1e9): number {
  if (text === undefined) return fallback;
  if (!/^[1-9][0-9]{0,9}$/.test(text.trim()) || Number(text) > max) throw new UsageError(`${flag} takes a whole number from 1 to ${max}, got ${JSON.stringify(text.slice(0, 20))}`);
  return Number(text);
}

export function formatRound(r: MonitorRound): string {
  const lines: string[] = [];
  const cp = r.checkpoint;
  const was = r.previous === null ? 'first round' : `last verified: size ${r.previous.size}`;
  lines.push(`round ${r.round} ${r.at}: ${cp === null ? 'no checkpoint' : `${oneLine(cp.origin)} size ${cp.size} root ${cp.root}`} (${was})`);
  lines.push(...r.relays.map(relayLine));
  for (const c of r.consistent) lines.push(`  consistent: ${oneLine(c.source)}: size ${c.size} is a prefix of this checkpoint`);
  for (const a of r.ahead) lines.push(`  ahead: ${oneLine(a.source)}: size ${a.size}, larger than the checkpoint served; placed in a later round`);
  for (const u of r.untrusted) lines.push(`  untrusted: ${oneLine(u.detail)}`);
  if (r.other_logs > 0) lines.push(`  ${r.other_logs} checkpoint event${r.other_logs === 1 ? '' : 's'} of other logs (origins) by the author, not this one's`);
  for (const f of r.forks) {
    lines.push(`  FORK: ${oneLine(f.detail)}`);
    lines.push(`    note 1 (${oneLine(f.source)}):`, ...f.note.trimEnd().split('\n').map((l) => `      ${l}`));
    lines.push('    note 2 (the checkpoint served):', ...(f.against_note ?? '').trimEnd().split('\n').map((l) => `      ${l}`));
  }
  for (const p of r.problems) lines.push(`  PROBLEM: ${oneLine(p)}`);
  const e = r.entries;
  if (r.verdict === 'ok') {
    lines.push(`  new entries: ${e.to - e.from} (indexes ${e.from} to ${e.to - 1})${e.omitted ? `, ${e.omitted} not listed` : ''}`);
    for (const x of e.listed) lines.push(`    ${x.index} ${x.kind} ${oneLine(x.key)} ${x.digest}`);
  }
  lines.push(`  ${r.verdict.toUpperCase()}`);
  return `${lines.join('\n')}\n`;
}

const EXIT: Record<MonitorRound['verdict'], number> = { ok: 0, fork: 1, fail: 1, untrusted: 3, unreadable: 2 };

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, {
    log: { type: 'string' },
    'log-key': { type: 'string', multiple: true },
    relay: { type: 'string', multiple: true },
    author: { type: 'string', multiple: true },
    state: { type: 'string' },
    json: { type: 'boolean' },
    once: { type: 'boolean' },
    interval: { type: 'string' },
    'max-rounds': { type: 'string' },
    'max-entries': { type: 'string' },
    'max-events': { type: 'string' },
    'max-listed': { type: 'string' },
  }, { positionals: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`monitor takes no positional arguments (the log is --log PREFIX), got ${JSON.stringify(positionals[0]!.slice(0, 40))}`);
  if (values.log === undefined) throw new UsageError('monitor needs --log PREFIX: the log\'s folder or loopback URL');
  const trusted = parseLogKeys(values['log-key'], 'monitor');
  if (values.once && values.interval !== undefined) throw new UsageError('--once and --interval exclude each other');
  if (values.interval === undefined && values['max-rounds'] !== undefined) throw new UsageError('--max-rounds goes with --interval MS');
  const intervalMs = positiveInt(values.interval, '--interval', 0, 86_400_000);
  const maxRounds = values.interval === undefined ? 1 : positiveInt(values['max-rounds'], '--max-rounds', 1_000_000);
  const relays = parseRelays(values.relay);
  const authors = parseAuthors(values.author);
  if (relays.length > 0 && authors.length === 0) throw new UsageError('--relay needs --author KEY: the Nostr key that publishes the log\'s checkpoint events');
  if (authors.length > 0 && relays.length === 0) throw new UsageError('--author needs --relay URL: the relays to read the checkpoint events from');
  const maxEvents = parseMaxEvents(values['max-events']);
  const state: MonitorState = values.state === undefined ? { checkpoint: null, relaySince: null } : readMonitorState(values.state);
  const fetcher = relays.length > 0 ? new RelayClientFetcher() : null;
  const monitor = new LogMonitor({
    source: logSource(values.log),
    trusted,
    maxEntries: parseMaxEntries(values['max-entries']),
    maxListed: positiveInt(values['max-listed'], '--max-listed', 100_000),
    ...(fetcher ? { relays: { urls: relays, authors, fetcher, ...(maxEvents !== undefined ? { bound: { maxEvents } } : {}) } } : {}),
  }, state);

  let stop = false;
  let wake: (() => void) | null = null;
  const onSignal = (): void => {
    stop = true;
    wake?.();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  if (!values.json) process.stdout.write(`aer1-anchor monitor ${VERSION}: ${monitor.state.checkpoint === null ? 'no checkpoint verified yet' : 'from the state\'s last verified checkpoint'}\n`);
  let code = 0;
  try {
    for (let round = 0; round < maxRounds && !stop; round++) {
      if (round > 0) {
        await new Promise<void>((done) => {
          const timer = setTimeout(done, intervalMs);
          wake = () => {
            clearTimeout(timer);
            done();
          };
        });
        wake = null;
        if (stop) break;
      }
      const before = monitor.state;
      const r = await monitor.round();
      process.stdout.write(values.json ? `${JSON.stringify(r)}\n` : formatRound(r));
      if (values.state !== undefined && monitor.state !== before) await writeMonitorState(values.state, monitor.state);
      code = EXIT[r.verdict];
      if (code === 1 || code === 3) break;
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    fetcher?.close();
  }
  return code;
}
