/**
 * `aer1-anchor demo [--out DIR] [--json]`: the whole product on loopback in under a
 * minute, offline, with nothing configured (see src/dev/demo/demo.ts). Exit 0 when every
 * subject verifies (PASS) and the cut workflow FAILs naming the truncation, else 1.
 */
import { runDemo, type DemoSummary } from '../../dev/demo/demo.js';
import { prepareOutDir } from '../shared/out-dir.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'run the whole product on loopback in under a minute: anchor, confirm, verify, detect truncation';

const USAGE = `usage: aer1-anchor demo [--out DIR] [--json]
  Starts a private redis-server, 3 dev Nostr relays, 2 dev OpenTimestamps calendars
  (regtest) and the daemon; anchors a receipt, a workflow close and a job timeline;
  mines a regtest block; writes each subject with its anchor_proof, the .ots files and
  the headers file to DIR; verifies each (PASS); cuts the workflow's last step and shows
  the verifier naming the truncation (FAIL); stops everything it started.
  --out DIR   where the files go (default: a new folder ./aer1-demo-<timestamp>); must be empty
  --json      print a machine-readable summary on stdout (progress goes to stderr)`;

/** Unknown or malformed flags are usage errors (exit 2, one line): runMain maps parseArgs' errors. */
function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    out: { type: 'string' },
    json: { type: 'boolean' },
  });
}

function closingLines(s: DemoSummary): string {
  if (!s.ok) return `demo FAILED after ${(s.total_ms / 1000).toFixed(1)} s: ${s.error ?? 'unknown'}\n`;
  const cut = s.truncation?.file ?? '';
  const wf = s.subjects.find((x) => x.label === 'workflow');
  return [
    `Done in ${(s.total_ms / 1000).toFixed(1)} s. Everything is in ${s.out}. Try it yourself:`,
    `  ${wf?.verify?.command ?? ''}`,
    `  ${(wf?.verify?.command ?? '').replace(wf?.files.document ?? '\u0000', cut)}`,
    `  aer1-anchor ots info ${wf?.files.ots ?? ''}`,
    '(From a clone: `npm link` once puts aer1-anchord, aer1-anchor and aer1-verify-anchor on your PATH; or run node bin/<name>.js.)',
    '',
  ].join('\n');
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const out = prepareOutDir(values.out, 'demo');
  const json = values.json === true;
  // progress on stdout for people; on stderr with --json, so stdout is only the summary
  const stream = json ? process.stderr : process.stdout;
  const summary = await runDemo({
    out,
    progress: { write: (t) => stream.write(t), tty: stream.isTTY === true, columns: stream.columns },
  });
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else process.stdout.write(closingLines(summary));
  if (!summary.ok && json) process.stderr.write(`aer1-anchor demo: ${summary.error ?? 'failed'}\n`);
  return summary.ok ? 0 : 1;
}
