/**
 * ShardEngine.closeRest tells every part of a shard to close even when an earlier one fails
 * or hangs (a worker never told would, once the stop drops the connections, retry its next
 * job without pause for ever): the periodic passes are told at once, every later part after
 * them even when one failed, and the first failure is what closeRest throws. A running daemon
 * with every part on (Nostr and OTS with their batchers, relay upkeep, retention, the anchor
 * log with a TSA); the faults are stand-ins, named so: a frozen Redis cannot be made to fail or
 * hang one part at a chosen moment. Each stand-in runs the part's real close first.
 */
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import type { ShardEngine } from '../../src/daemon/shard-engine.js';
import type { Daemon } from '../../src/daemon/daemon.js';
import { startDevTsa } from '../../src/dev/tsa/index.js';
import { startCalendars, startDaemon, startRelays, tempDir, testConfig } from '../helpers/harness.js';

const BOUND_MS = 10_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** Settles as `p` does, or rejects once BOUND_MS pass (so a hang fails the test, not its timeout). */
function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([p, bound]).finally(() => clearTimeout(timer));
}

async function daemonWithEveryPart(): Promise<{ daemon: Daemon; engine: ShardEngine }> {
  const dir = tempDir('aer1-close-rest');
  const relays = await startRelays(1);
  cleanups.push(() => Promise.all(relays.map((r) => r.close())));
  const headersFile = join(dir, 'headers.json');
  const calendars = await startCalendars(1, headersFile);
  cleanups.push(() => Promise.all(calendars.map((c) => c.close())));
  const tsa = await startDevTsa();
  cleanups.push(() => tsa.close());
  const config = testConfig({
    relays,
    calendars,
    headersFile,
    overrides: {
      relayUpkeep: { enabled: true },
      archive: { dir: join(dir, 'archive') },
      retention: { confirmedAfterMs: 60_000 },
      log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/aer1', tsaUrls: [tsa.url] },
    },
  });
  const daemon = await startDaemon(config);
  cleanups.push(() => daemon.stop());
  const engine = daemon.engines[0]!;
  expect(engine.upkeep, 'relay upkeep on').not.toBeNull();
  expect(engine.retention, 'retention on').not.toBeNull();
  expect(engine.timeWitnesses, 'the anchor log with a TSA').not.toBeNull();
  expect(engine['batchers'].map((b) => b.witness)).toEqual(['nostr', 'ots']);
  return { daemon, engine };
}

it('tells every part to close when the first one fails and another hangs, and throws the first failure', { timeout: 60_000 }, async () => {
  const { engine } = await daemonWithEveryPart();
  await engine.closeIntake();
  const told: string[] = [];
  const ended: string[] = [];
  /** Records that a part was told to close and when its close ended; the part's real close runs, then `after` decides how it ends. */
  const watch = <T extends object, K extends keyof T & string>(name: string, part: T, method: K, after?: () => Promise<void>): void => {
    const real = (part[method] as () => Promise<unknown>).bind(part);
    vi.spyOn(part, method as never).mockImplementation((async () => {
      told.push(name);
      try {
        await real();
        await after?.();
      } finally {
        ended.push(name);
      }
    }) as never);
  };
  const reconcilerFailure = new Error('stand-in: the reconciler\'s close failed (Redis dropped)');
  const nostrFailure = new Error('stand-in: the Nostr witness\'s close failed');
  // stand-in for a close stuck on a frozen Redis: it ends when the test drops the connection
  let dropConnection!: (err: Error) => void;
  const frozen = new Promise<void>((_, reject) => (dropConnection = reject));

  watch('reconciler', engine.reconciler, 'close', () => Promise.reject(reconcilerFailure));
  watch('retention', engine.retention!, 'close', () => frozen);
  watch('upkeep', engine.upkeep!, 'close');
  for (const b of engine['batchers']) watch(`batcher ${b.witness}`, b, 'stop');
  watch('nostr', engine.nostr!, 'close', () => Promise.reject(nostrFailure));
  watch('ots', engine.ots!, 'close');
  watch('intake queue', engine.intakeQueue, 'close');
  watch('time witnesses', engine.timeWitnesses!, 'stop');
  watch('anchor log', engine.anchorLog!, 'stop');

  const closing = engine.closeRest();
  const outcome = closing.then(() => null, (err: unknown) => err);
  // the periodic passes are all told at once: upkeep too while retention's close hangs, after the reconciler's failed
  await within(vi.waitFor(() => expect([...ended].sort()).toEqual(['reconciler', 'upkeep']), { timeout: BOUND_MS, interval: 10 }), 'the reconciler\'s and upkeep\'s close');
  expect(told).toEqual(['reconciler', 'retention', 'upkeep']);
  dropConnection(new Error('stand-in: retention\'s close ended by the dropped connection'));
  const thrown = await within(outcome, 'closeRest');

  expect(told).toEqual(['reconciler', 'retention', 'upkeep', 'batcher nostr', 'batcher ots', 'nostr', 'ots', 'intake queue', 'time witnesses', 'anchor log']);
  expect(thrown).toBe(reconcilerFailure);
});
