/**
 * `aer1-anchor log verify PREFIX --log-key VKEY... [--relay URL... --author KEY]
 * [--checkpoint FILE]... [OLD_CHECKPOINT_FILE...] [--json] [--max-entries N]`: checks an
 * anchor log served as C2SP tlog-tiles (a folder, or an http(s) URL on this machine)
 * against log keys the caller trusts, and older checkpoints (files, or the checkpoint
 * events the author published on the relays) for consistency with it.
 * Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 nothing established (no trusted signature).
 */
import { readFileSync, statSync } from 'node:fs';
import { LogFormatError } from '../../core/log/errors.js';
import { MAX_NOTE_BYTES, parseVerifierKey, type VerifierKey } from '../../core/log/note.js';
import { DEFAULT_MAX_ENTRIES, verifyLog, type LogVerifyReport } from '../../adapters/log/log-check.js';
import { listCheckpointEvents, type CheckpointEvents } from '../../adapters/log/checkpoint-events.js';
import { logSource } from '../../adapters/log/log-source.js';
import { RelayClientFetcher } from '../../adapters/nostr/relay-fetcher.js';
import { parseExpectedPubkey } from '../../core/verify/nostr.js';
import { oneLine } from '../../core/verify/names.js';
import type { RelayAnswer } from '../../core/verify/relay-pages.js';
import { parseRelays } from '../shared/discovery-options.js';
import { parseMaxEvents } from './verify-anchor.js';
import { VERSION } from '../../version.js';
import { UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'check an anchor log (C2SP checkpoint, tiles, entry bundles) against your log key';

const USAGE = `usage: aer1-anchor log verify PREFIX --log-key VKEY... [--relay URL... --author KEY]
         [--checkpoint FILE]... [OLD_CHECKPOINT_FILE...] [--max-entries N] [--max-events N] [--json]

PREFIX is the log's folder, or its http(s) URL on this machine (PREFIX/checkpoint,
PREFIX/tile/...). Checks that the checkpoint is signed by a key you give (--log-key
<name>+<hash>+<base64>, repeatable), that every entry bundle hashes to its level-0 tile
and holds entries in the anchor-log layout, that every tile above level 0 hashes the
tiles below, and that the tiles hash to the checkpoint's root. Each older checkpoint
(--checkpoint FILE or OLD_CHECKPOINT_FILE: one you kept; and with --relay URL --author KEY
every checkpoint event that key published on those relays) is proven consistent with the
current one from the tiles; two signed checkpoints that are not are a fork, and a note no
key you gave signed is reported, never trusted. --max-entries (default ${DEFAULT_MAX_ENTRIES})
bounds the log size read, --max-events (default 10000) each relay's answer.
Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 nothing established (the checkpoint
is signed by no key you gave).`;

const EXIT: Record<LogVerifyReport['verdict'], number> = { PASS: 0, FAIL: 1, 'NOTHING ESTABLISHED': 3 };

function readCheckpointFile(file: string): Buffer {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
  if (size > MAX_NOTE_BYTES) throw new UsageError(`${file} is ${size} bytes, over the ${MAX_NOTE_BYTES} of a checkpoint`, 'unreadable');
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
  }
}

/** `--log-key VKEY` (repeatable, at least one): the log keys the caller trusts. */
export function parseLogKeys(keys: readonly string[] | undefined, command: string): VerifierKey[] {
  if (!keys?.length) throw new UsageError(`${command} needs --log-key <name>+<hash>+<base64>: the log key you trust`);
  try {
    return keys.map((k, i) => parseVerifierKey(k, `--log-key ${i + 1}`));
  } catch (err) {
    throw new UsageError((err as Error).message, (err as LogFormatError).code);
  }
}

export function parseMaxEntries(text: string | undefined): number {
  if (text === undefined) return DEFAULT_MAX_ENTRIES;
  if (!/^[1-9][0-9]{0,14}$/.test(text)) throw new UsageError('--max-entries takes a positive integer');
  return Number(text);
}

/** `--author KEY`: the Nostr key (hex or npub) that publishes the log's checkpoint events. */
export function parseAuthors(values: readonly string[] | undefined): string[] {
  return [...new Set((values ?? []).map((v) => {
    try {
      return parseExpectedPubkey(v);
    } catch (err) {
      throw new UsageError((err as Error).message.replace('--expected-pubkey', '--author'));
    }
  }))];
}

export function relayLine(a: RelayAnswer): string {
  if (a.error !== null) return `  relay ${oneLine(a.url)}: unreachable: ${oneLine(a.error)}`;
  return `  relay ${oneLine(a.url)}: ${a.events} event${a.events === 1 ? '' : 's'}${a.complete ? '' : ` (incomplete: ${oneLine(a.incomplete ?? '')})`}`;
}

/** The checkpoint events on `--relay`s by `--author`, when both are given (one without the other is a usage error). */
export async function relayCheckpoints(relayFlags: readonly string[] | undefined, authorFlags: readonly string[] | undefined, maxEvents: number | undefined, since?: number, fetcher?: RelayClientFetcher): Promise<CheckpointEvents | null> {
  const relays = parseRelays(relayFlags);
  const authors = parseAuthors(authorFlags);
  if (relays.length === 0 && authors.length === 0) return null;
  if (relays.length === 0) throw new UsageError('--author needs --relay URL: the relays to read the checkpoint events from');
  if (authors.length === 0) throw new UsageError('--relay needs --author KEY: the Nostr key that publishes the log\'s checkpoint events');
  const own = fetcher ?? new RelayClientFetcher();
  try {
    return await listCheckpointEvents({ relays, authors, fetcher: own, ...(since !== undefined ? { since } : {}), ...(maxEvents !== undefined ? { bound: { maxEvents } } : {}) });
  } finally {
    if (fetcher === undefined) own.close();
  }
}

export function formatLogReport(r: LogVerifyReport, relays: readonly RelayAnswer[] = []): string {
  const lines = [`aer1-anchor log verify ${VERSION}: ${r.prefix}`];
  lines.push(...relays.map(relayLine));
  if (r.checkpoint) lines.push(`  checkpoint: ${r.checkpoint.origin}, size ${r.checkpoint.size}, root ${r.checkpoint.root}`);
  for (const c of r.checks) lines.push(`  ${c.status === 'pass' ? 'ok  ' : c.status === 'fail' ? 'FAIL' : 'n/a '} ${c.name}: ${c.detail.replace(/[\r\n]+/g, ' ')}`);
  lines.push(`${r.verdict}`);
  return `${lines.join('\n')}\n`;
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = commandArgs(argv, {
    'log-key': { type: 'string', multiple: true },
    checkpoint: { type: 'string', multiple: true },
    relay: { type: 'string', multiple: true },
    author: { type: 'string', multiple: true },
    'max-events': { type: 'string' },
    'max-entries': { type: 'string' },
    json: { type: 'boolean' },
  }, { positionals: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('log verify takes a PREFIX (a folder or a loopback URL), then any older checkpoint files');
  const trusted = parseLogKeys(values['log-key'], 'log verify');
  const maxEntries = parseMaxEntries(values['max-entries']);
  const older = [...(values.checkpoint ?? []), ...positionals.slice(1)].map((file) => ({ name: file, note: readCheckpointFile(file) }));
  const source = logSource(positionals[0]!);
  // the relays first: a checkpoint event then never runs ahead of the log only because it came later
  const events = await relayCheckpoints(values.relay, values.author, parseMaxEvents(values['max-events']));
  const report = await verifyLog(source, { trusted, older: [...older, ...(events?.notes ?? [])], maxEntries });
  const incomplete = events?.relays.filter((a) => !a.complete) ?? [];
  const checks = incomplete.length === 0 ? report.checks : [...report.checks, ...incomplete.map((a) => ({ name: 'consistency' as const, status: 'nothing' as const, detail: `${a.url}: the checkpoint events could not be read to their end (${a.incomplete ?? 'incomplete'})` }))];
  const full: LogVerifyReport = { ...report, checks, verdict: report.verdict === 'PASS' && incomplete.length > 0 ? 'NOTHING ESTABLISHED' : report.verdict };
  process.stdout.write(values.json ? `${JSON.stringify(events ? { ...full, relays: events.relays } : full)}\n` : formatLogReport(full, events?.relays));
  return EXIT[full.verdict];
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'verify') return verify(rest);
  throw new UsageError(`unknown log command '${sub}' (try: aer1-anchor log verify --help)`);
}
