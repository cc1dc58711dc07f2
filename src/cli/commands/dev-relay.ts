/**
 * `aer1-anchor dev-relay [--port P] [--host H] [--events FILE] [--profile NAME]`: a real
 * Nostr relay on loopback for development and tests, in the foreground until
 * SIGINT/SIGTERM. The first line of stdout is its ws:// URL.
 */
import { RELAY_PROFILES, startDevRelay, type RelayProfileName, type RelayProfileOptions } from '../../dev/relay/dev-relay.js';
import { UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'run a local Nostr relay (@nostr-relay/*, events in memory) until interrupted';

const USAGE = `usage: aer1-anchor dev-relay [--port P] [--host 127.0.0.1] [--events FILE] [--profile NAME] [--silent] [--drop-on-event] [--verbose]
  --port P          port to listen on (default 0: a free port, printed)
  --profile NAME    behave as a public relay: ${RELAY_PROFILES.join(', ')} (default open; see docs/nostr.md)
  --rate N          damus profile: events a minute per key before rate-limited: (default 6)
  --pow-difficulty N  pow profile: NIP-13 bits asked (default 8)
  --host H          address to listen on (default 127.0.0.1)
  --events FILE     JSON-lines file the events are kept in (default: memory only)
  --silent          never answer EVENT messages (fault testing)
  --drop-on-event   close the connection upon an EVENT (fault testing)
  --verbose         relay log lines on stderr`;

// Unknown or malformed flags are usage errors (exit 2): runMain maps parseArgs' errors.
function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    port: { type: 'string', short: 'p' },
    host: { type: 'string' },
    events: { type: 'string' },
    silent: { type: 'boolean' },
    'drop-on-event': { type: 'boolean' },
    verbose: { type: 'boolean' },
    profile: { type: 'string' },
    rate: { type: 'string' },
    'pow-difficulty': { type: 'string' },
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let port = 0;
  if (values.port !== undefined) {
    if (!/^[0-9]{1,5}$/.test(values.port) || Number(values.port) > 65535) {
      throw new UsageError(`dev-relay: --port must be 0-65535, got ${JSON.stringify(values.port)}`);
    }
    port = Number(values.port);
  }
  let profile: RelayProfileName = 'open';
  if (values.profile !== undefined) {
    if (!(RELAY_PROFILES as readonly string[]).includes(values.profile)) {
      throw new UsageError(`dev-relay: --profile must be one of ${RELAY_PROFILES.join(', ')}, got ${JSON.stringify(values.profile.slice(0, 40))}`);
    }
    profile = values.profile as RelayProfileName;
  }
  const profileOptions: RelayProfileOptions = {};
  for (const [flag, field, max] of [['rate', 'ratePerMinute', 1_000_000], ['pow-difficulty', 'powDifficulty', 64]] as const) {
    const text = values[flag];
    if (text === undefined) continue;
    if (!/^[0-9]{1,7}$/.test(text) || Number(text) < 1 || Number(text) > max) {
      throw new UsageError(`dev-relay: --${flag} must be an integer 1-${max}, got ${JSON.stringify(text.slice(0, 40))}`);
    }
    profileOptions[field] = Number(text);
  }
  let relay;
  try {
    relay = await startDevRelay({
      port,
      host: values.host ?? '127.0.0.1',
      ...(values.events !== undefined ? { eventsFile: values.events } : {}),
      silent: values.silent === true,
      dropOnEvent: values['drop-on-event'] === true,
      profile,
      profileOptions,
      ...(values.verbose ? { log: (line: string) => process.stderr.write(`${line}\n`) } : {}),
    });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`dev-relay: cannot start: ${code ?? (err as Error).message}`, 'dev_relay_start');
  }
  process.stdout.write(`${relay.url}\n`);
  process.stderr.write(`dev-relay: listening on ${relay.url}${values.events ? ` (events in ${values.events})` : ' (in memory)'}, profile ${profile}; Ctrl-C to stop\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  await relay.close();
  process.stderr.write(`dev-relay: ${signal}, stopped\n`);
  return 0;
}
