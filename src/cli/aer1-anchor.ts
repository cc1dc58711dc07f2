#!/usr/bin/env node
/** `aer1-anchor <command> ...`: one module per command under ./commands. */
import { runMain, UsageError, type Command } from './shared/run.js';

type Loader = () => Promise<{ run: Command; summary: string }>;

const COMMANDS: Record<string, Loader> = {
  envelope: () => import('./commands/envelope.js'),
  enqueue: () => import('./commands/enqueue.js'),
  status: () => import('./commands/status.js'),
  proof: () => import('./commands/proof.js'),
  keygen: () => import('./commands/keygen.js'),
  ots: () => import('./commands/ots.js'),
  'verify-anchor': () => import('./commands/verify-anchor.js'),
  audit: () => import('./commands/audit.js'),
  log: () => import('./commands/log.js'),
  monitor: () => import('./commands/monitor.js'),
  tsa: () => import('./commands/tsa.js'),
  'dev-relay': () => import('./commands/dev-relay.js'),
  'dev-calendar': () => import('./commands/dev-calendar.js'),
  'dev-witness': () => import('./commands/dev-witness.js'),
  'dev-tsa': () => import('./commands/dev-tsa.js'),
  demo: () => import('./commands/demo.js'),
  'dev-stack': () => import('./commands/dev-stack.js'),
};

async function usage(): Promise<string> {
  const lines = ['usage: aer1-anchor <command> [options]', '', 'commands:'];
  for (const [name, load] of Object.entries(COMMANDS)) {
    const mod = await load();
    lines.push(`  ${name.padEnd(14)} ${mod.summary}`);
  }
  return lines.join('\n');
}

const main: Command = async (argv) => {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write((await usage()) + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') {
    const { VERSION } = await import('../version.js');
    process.stdout.write(`aer1-anchor ${VERSION}\n`);
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) throw new UsageError(`unknown command '${name}' (try: aer1-anchor --help)`);
  return (await load()).run(rest);
};

await runMain('aer1-anchor', main);
