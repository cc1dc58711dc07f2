/**
 * `aer1-anchor dev-stack`: the daemon, dev relays and dev calendars that mine on their own,
 * on loopback, kept up until SIGINT/SIGTERM; then everything is stopped and its ports
 * checked closed (src/dev/stack/). Exit 0 after a clean stop, 1 when a port still answers.
 */
import { RELAY_PROFILES, type RelayProfileName } from '../../dev/relay/dev-relay.js';
import { describeDevStack, startDevStack } from '../../dev/stack/dev-stack.js';
import { portAnswers } from '../../dev/stack/stack.js';
import { prepareOutDir } from '../shared/out-dir.js';
import { UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'keep the daemon, dev relays and self-mining dev calendars (regtest) up on loopback until Ctrl-C';

const USAGE = `usage: aer1-anchor dev-stack [--relay-profile LIST] [--calendars N] [--mine-every MS] [--http-port P] [--out DIR] [--json]
  Starts a private redis-server, dev Nostr relays, dev OpenTimestamps calendars (regtest)
  that mine a block on their own while they hold commitments, and the daemon, all on
  loopback; writes its config, signing key, headers file and log to DIR; prints the URLs,
  the token and the config; stops everything on Ctrl-C or SIGTERM.
  --relay-profile LIST  one relay per comma-separated profile (default open,open,open):
                        ${RELAY_PROFILES.join(', ')} (docs/nostr.md)
  --calendars N         dev calendars, 1-8 (default 2)
  --mine-every MS       each calendar mines this often while it holds commitments (default 3000)
  --http-port P         the daemon's HTTP port (default 0: a free one, printed)
  --out DIR             where the files go (default: a new folder ./aer1-dev-stack-<timestamp>); must be empty
  --json                print one JSON line (http, token, relays, calendars, signer, headers,
                        network, config, ...) on stdout once up; the rest goes to stderr`;

function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    'relay-profile': { type: 'string' },
    calendars: { type: 'string' },
    'mine-every': { type: 'string' },
    'http-port': { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean' },
  });
}

function intFlag(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^[0-9]{1,9}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`dev-stack: --${name} must be an integer ${min}-${max}, got ${JSON.stringify(value.slice(0, 40))}`);
  }
  return Number(value);
}

export function relayProfilesFlag(value: string | undefined): RelayProfileName[] {
  if (value === undefined) return ['open', 'open', 'open'];
  const names = value.split(',').map((s) => s.trim());
  if (names.length > 16) throw new UsageError(`dev-stack: --relay-profile names at most 16 relays, got ${names.length}`);
  for (const name of names) {
    if (!(RELAY_PROFILES as readonly string[]).includes(name)) {
      throw new UsageError(`dev-stack: --relay-profile: ${JSON.stringify(name.slice(0, 40))} is not a profile; use a comma-separated list of ${RELAY_PROFILES.join(', ')}`);
    }
  }
  return names as RelayProfileName[];
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const relayProfiles = relayProfilesFlag(values['relay-profile']);
  const calendarCount = intFlag('calendars', values.calendars, 2, 1, 8);
  const mineEveryMs = intFlag('mine-every', values['mine-every'], 3000, 100, 3_600_000);
  const httpPort = intFlag('http-port', values['http-port'], 0, 0, 65535);
  const out = prepareOutDir(values.out, 'dev-stack');
  const json = values.json === true;
  const note = (line: string): void => void process.stderr.write(`dev-stack: ${line}\n`);

  // signals that arrive while starting stop the stack as soon as it is up
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  let running;
  try {
    running = await startDevStack({
      out, relayProfiles, calendarCount, mineEveryMs, httpPort,
      onMined: (cal, block) => note(`${cal.url} mined block ${block.height} ${block.blockHash} (${block.count} commitment${block.count === 1 ? '' : 's'})`),
      onMineError: (cal, err) => note(`${cal.url} could not mine: ${err.message}`),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') throw new UsageError(`dev-stack: cannot listen: ${(err as Error).message}`, 'cannot_listen');
    throw err;
  }
  process.stdout.write(json ? `${JSON.stringify(running.info)}\n` : describeDevStack(running.info));
  const signal = await signalled;
  note(`${signal}, stopping`);
  const ports = running.info.ports;
  await running.stop();
  const answering: number[] = [];
  for (const port of ports) if (await portAnswers(port)) answering.push(port);
  if (answering.length > 0) {
    note(`ports still answering after the stop: ${answering.join(', ')}`);
    return 1;
  }
  note(`stopped: redis-server, ${running.info.relays.length} relays, ${running.info.calendars.length} calendars and the daemon (${ports.length} ports, none answering); files kept in ${out}`);
  return 0;
}
