/**
 * `aer1-anchor dev-calendar`: a development OpenTimestamps calendar in the foreground.
 * The first line on stdout is its URL; it runs until SIGINT or SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startDevCalendar, type DevCalendar } from '../../dev/calendar/index.js';
import { InputError, UsageError } from '../shared/run.js';

export const summary = 'run a development OpenTimestamps calendar (regtest, POST /mine)';

const USAGE =
  'usage: aer1-anchor dev-calendar --headers-out FILE [--port P] [--host H] [--public-url URL]\n' +
  '         [--base-path /PREFIX] [--aggregation-ms MS] [--start-height N] [--mine-every MS]';

function intFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

export async function run(argv: string[]): Promise<number> {
  // Unknown or malformed flags are usage errors (exit 2, one line): runMain maps parseArgs' errors.
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'headers-out': { type: 'string' },
      'public-url': { type: 'string' },
      'base-path': { type: 'string' },
      'aggregation-ms': { type: 'string' },
      'start-height': { type: 'string' },
      'mine-every': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
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

  const timer =
    mineEvery === undefined
      ? undefined
      : setInterval(() => {
          if (calendar.pendingCount() === 0) return;
          calendar.mine().then(
            (m) => process.stderr.write(`mined height ${m.height} (${m.count} commitments)\n`),
            (err: unknown) => process.stderr.write(`mine failed: ${(err as Error).message}\n`),
          );
        }, mineEvery);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  if (timer) clearInterval(timer);
  process.stderr.write(`dev calendar: ${signal}, closing\n`);
  await calendar.close();
  return 0;
}
