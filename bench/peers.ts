/**
 * The benchmark's witnesses in a process of their own, so they do not share an event
 * loop with the daemon or the load generator: three dev relays and two dev calendars on
 * loopback, the calendars writing one regtest headers file. Prints one JSON line
 * `{relays, calendars, headersFile}` when listening; stops when its stdin closes (the
 * bench went away), on SIGTERM or SIGINT.
 *
 * usage: node dist/bench/peers.js HEADERS_FILE [RELAYS=3] [CALENDARS=2] [ROUND_MS=1000]
 */
import { startDevRelay, type DevRelay } from '../src/dev/relay/dev-relay.js';
import { startDevCalendar, type DevCalendar } from '../src/dev/calendar/index.js';

export interface PeersInfo {
  relays: string[];
  calendars: string[];
  headersFile: string;
  pid: number;
}

function intArg(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(text)}`);
  return n;
}

async function main(): Promise<void> {
  const [headersFile, relaysArg, calendarsArg, roundArg] = process.argv.slice(2);
  if (!headersFile) throw new Error('usage: peers.js HEADERS_FILE [RELAYS] [CALENDARS] [ROUND_MS]');
  const relayCount = intArg(relaysArg, 3, 'RELAYS');
  const calendarCount = intArg(calendarsArg, 2, 'CALENDARS');
  const aggregationMs = intArg(roundArg, 1000, 'ROUND_MS');

  const relays: DevRelay[] = [];
  const calendars: DevCalendar[] = [];
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await Promise.allSettled([...relays.map((r) => r.close()), ...calendars.map((c) => c.close())]);
    })();
    return stopping;
  };
  const exitAfterStop = (): void => {
    const hard = setTimeout(() => process.exit(0), 5000);
    hard.unref();
    void stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', exitAfterStop);
  process.once('SIGINT', exitAfterStop);
  process.stdin.on('end', exitAfterStop);
  process.stdin.on('error', exitAfterStop);
  process.stdin.resume();

  try {
    for (let i = 0; i < relayCount; i++) relays.push(await startDevRelay({ host: '127.0.0.1' }));
    for (let i = 0; i < calendarCount; i++) calendars.push(await startDevCalendar({ host: '127.0.0.1', headersOut: headersFile, aggregationMs }));
  } catch (err) {
    await stop();
    throw err;
  }
  const info: PeersInfo = { relays: relays.map((r) => r.url), calendars: calendars.map((c) => c.url), headersFile, pid: process.pid };
  process.stdout.write(`${JSON.stringify(info)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench peers: ${(err as Error).message}\n`);
  process.exit(1);
});
