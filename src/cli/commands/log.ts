/**
 * `aer1-anchor log verify PREFIX --log-key VKEY... [--checkpoint FILE]... [--json]
 * [--max-entries N]`: checks an anchor log served as C2SP tlog-tiles (a folder, or an
 * http(s) URL on this machine) against log keys the caller trusts.
 * Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 nothing established (no trusted signature).
 */
import { readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { LogFormatError } from '../../core/log/errors.js';
import { MAX_NOTE_BYTES, parseVerifierKey, type VerifierKey } from '../../core/log/note.js';
import { DEFAULT_MAX_ENTRIES, verifyLog, type LogVerifyReport } from '../../adapters/log/log-check.js';
import { logSource } from '../../adapters/log/log-source.js';
import { VERSION } from '../../version.js';
import { UsageError } from '../shared/run.js';

export const summary = 'check an anchor log (C2SP checkpoint, tiles, entry bundles) against your log key';

const USAGE = `usage: aer1-anchor log verify PREFIX --log-key VKEY... [--checkpoint FILE]...
         [--max-entries N] [--json]

PREFIX is the log's folder, or its http(s) URL on this machine (PREFIX/checkpoint,
PREFIX/tile/...). Checks that the checkpoint is signed by a key you give (--log-key
<name>+<hash>+<base64>, repeatable), that every entry bundle hashes to its level-0 tile
and holds entries in the anchor-log layout, that every tile above level 0 hashes the
tiles below, and that the tiles hash to the checkpoint's root. Each --checkpoint FILE
(an older signed checkpoint you kept) is proven consistent with the current one.
--max-entries (default ${DEFAULT_MAX_ENTRIES}) bounds the log size read.
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

export function formatLogReport(r: LogVerifyReport): string {
  const lines = [`aer1-anchor log verify ${VERSION}: ${r.prefix}`];
  if (r.checkpoint) lines.push(`  checkpoint: ${r.checkpoint.origin}, size ${r.checkpoint.size}, root ${r.checkpoint.root}`);
  for (const c of r.checks) lines.push(`  ${c.status === 'pass' ? 'ok  ' : c.status === 'fail' ? 'FAIL' : 'n/a '} ${c.name}: ${c.detail.replace(/[\r\n]+/g, ' ')}`);
  lines.push(`${r.verdict}`);
  return `${lines.join('\n')}\n`;
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      'log-key': { type: 'string', multiple: true },
      checkpoint: { type: 'string', multiple: true },
      'max-entries': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`log verify takes one PREFIX (a folder or a loopback URL), not ${positionals.length}`);
  const keys = values['log-key'] ?? [];
  if (keys.length === 0) throw new UsageError('log verify needs --log-key <name>+<hash>+<base64>: the log key you trust');
  let trusted: VerifierKey[];
  try {
    trusted = keys.map((k, i) => parseVerifierKey(k, `--log-key ${i + 1}`));
  } catch (err) {
    throw new UsageError((err as Error).message, (err as LogFormatError).code);
  }
  let maxEntries = DEFAULT_MAX_ENTRIES;
  if (values['max-entries'] !== undefined) {
    if (!/^[1-9][0-9]{0,14}$/.test(values['max-entries'])) throw new UsageError('--max-entries takes a positive integer');
    maxEntries = Number(values['max-entries']);
  }
  const older = (values.checkpoint ?? []).map((file) => ({ name: file, note: readCheckpointFile(file) }));
  const report = await verifyLog(logSource(positionals[0]!), { trusted, older, maxEntries });
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatLogReport(report));
  return EXIT[report.verdict];
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
