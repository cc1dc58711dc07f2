/**
 * `aer1-anchor dev-calendar`: a development OpenTimestamps calendar in the foreground.
 * The first line on stdout is its URL; it runs until SIGINT or SIGTERM.
 */
import { startAutoMiner, startDevCalendar, type DevCalendar } from '../../dev/calendar/index.js';
import { MAX_BEHAVIOUR_MS } from '../../dev/calendar/behaviour.js';
import { InputError, UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'run a development OpenTimestamps calendar (regtest, POST /mine)';

const USAGE =
  'usage: aer1-anchor dev-calendar --headers-out FILE [--port P] [--host H] [--public-url URL]\n' +
  '         [--base-path /PREFIX] [--aggregation-ms MS] [--start-height N] [--mine-every MS]\n' +
  '         [--not-found-ms MS] [--gzip] [--delay-ms MS]';

function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

export async function run(argv: string[]): Promise<number> {
  // Unknown or malformed flags are usage errors (exit 2, one line): runMain maps parseArgs' errors.
  const { values } = commandArgs(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    'headers-out': { type: 'string' },
    'public-url': { type: 'string' },
    'base-path': { type: 'string' },
    'aggregation-ms': { type: 'string' },
    'start-height': { type: 'string' },
    'mine-every': { type: 'string' },
    'not-found-ms': { type: 'string' },
    gzip: { type: 'boolean' },
    'delay-ms': { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (!values['headers-out']) throw new UsageError(`--headers-out FILE is required\n${USAGE}`);
  const mineEvery = intFlag('mine-every', values['mine-every'], 1, 86_400_000);

  let calendar: DevCalendar;
  try {
    calendar = await startDevCalendar({
      port: intFlag('port', values.port, 0, 65535) ?? 0,
      host: values.host ?? '127.0.0.1',
      headersOut: values['headers-out'],
      publicUrl: values['public-url'],
      basePath: values['base-path'],
      aggregationMs: intFlag('aggregation-ms', values['aggregation-ms'], 0, 60_000) ?? 1000,
      startHeight: intFlag('start-height', values['start-height'], 0, 100_000_000),
      notFoundMs: intFlag('not-found-ms', values['not-found-ms'], 0, MAX_BEHAVIOUR_MS),
      gzip: values.gzip ?? false,
      delayMs: intFlag('delay-ms', values['delay-ms'], 0, MAX_BEHAVIOUR_MS),
    });
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new UsageError(`cannot listen: ${(err as Error).message}`);
    }
    throw err;
  }

  process.stdout.write(calendar.url + '\n');
  process.stderr.write(`dev calendar: headers file ${values['headers-out']}; POST ${calendar.url}/mine to confirm\n`);

  const miner =
    mineEvery === undefined
      ? undefined
      : startAutoMiner(calendar, mineEvery, {
          onMined: (_cal, m) => process.stderr.write(`mined height ${m.height} (${m.count} commitments)\n`),
          onError: (_cal, err) => process.stderr.write(`mine failed: ${err.message}\n`),
        });

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  await miner?.stop();
  process.stderr.write(`dev calendar: ${signal}, closing\n`);
  await calendar.close();
  return 0;
}
