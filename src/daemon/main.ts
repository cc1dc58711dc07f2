/**
 * `aer1-anchord`: resolves Redis (AER1_REDIS_CLUSTER / redis.cluster, else REDIS_URL /
 * redis.url, else 127.0.0.1:6379 when it answers, else the embedded redis-server), loads
 * or creates the signing key, starts the daemon and its HTTP surfaces, says where
 * everything is in its first log lines, and stops cleanly on SIGTERM/SIGINT within a bounded time.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig, logKeyFile, nostrQuorum, type Config } from '../adapters/config/config.js';
import { UsageError } from '../core/errors/errors.js';
import { VERSION } from '../version.js';
import { type SigningKey } from '../core/nostr/keys.js';
import { autoBudget } from '../core/nostr/auto-mode.js';
import { loadSigningKey, writeKeyFile } from '../adapters/nostr/key-file.js';
import { loadLogKeyFile, writeLogKeyFile } from '../adapters/log/key-file.js';
import type { LogSigner } from '../core/log/note.js';
import { Daemon, settlesWithin, type DaemonDeps } from './daemon.js';
import { openEmbeddedRedis, INSTALL_HINT, type DaemonRedis } from './embedded-redis.js';
import { createLogger, type Logger } from './logger.js';
import { redisAnswers, type RedisTarget } from '../adapters/redis/connection.js';
import { describeProbe } from '../adapters/health/witness-probe.js';
import { displayUrl } from '../adapters/config/display-url.js';

const STOP_TIMEOUT_MS = 20_000;
/** The webhooks' share of a stop: their workers and fan-out, on a Redis that may not answer (the daemon's own is STOP_GRACE_MS). */
const WEBHOOKS_STOP_MS = 5000;

export interface RunningDaemon {
  daemon: Daemon;
  httpUrl: string | null;
  /** The Redis URL, or the cluster's startup nodes joined by commas. */
  redisUrl: string;
  stop(): Promise<void>;
}

export async function resolveRedis(config: Config, log: Logger): Promise<{ url: string; target: RedisTarget; embedded: DaemonRedis | null; where: string }> {
  if (config.redis.cluster.length > 0) {
    return { url: config.redis.cluster.join(','), target: { cluster: config.redis.cluster }, embedded: null, where: `Redis Cluster (${config.redis.cluster.length} startup nodes configured)` };
  }
  if (config.redis.url) return { url: config.redis.url, target: config.redis.url, embedded: null, where: 'configured' };
  if (config.redis.localDefault && (await redisAnswers('127.0.0.1', 6379))) return { url: 'redis://127.0.0.1:6379', target: 'redis://127.0.0.1:6379', embedded: null, where: 'local default' };
  if (!config.redis.embedded) {
    throw new UsageError(`no Redis: nothing answers on 127.0.0.1:6379 and redis.embedded is off; ${INSTALL_HINT}`, 'no_redis');
  }
  log.info({ dir: config.redis.embeddedDir }, 'no Redis configured or answering on 127.0.0.1:6379: using the embedded redis-server');
  const embedded = await openEmbeddedRedis({ dir: config.redis.embeddedDir });
  const how = embedded.reused ? `reused the one still running, pid ${embedded.pid}` : `pid ${embedded.pid}`;
  return { url: embedded.url, target: embedded.url, embedded, where: `embedded (data in ${embedded.dir}; ${how})` };
}

export function signingKeyFor(config: Config, log: Logger): SigningKey | null {
  if (!config.nostr.enabled) return null;
  const envSet = (process.env[config.nostr.keyEnv] ?? '').trim() !== '';
  if (!envSet && !existsSync(config.nostr.keyFile)) {
    const written = writeKeyFile(config.nostr.keyFile);
    log.info({ keyFile: written.path, npub: written.npub }, 'created a new Nostr signing key (mode 0600)');
  }
  const loaded = loadSigningKey(envSet ? { env: config.nostr.keyEnv } : { file: config.nostr.keyFile });
  for (const w of loaded.warnings) log.warn(w);
  return loaded.key;
}

/** The anchor log's key (log.enabled): logKeyFile(config), created on first start named log.origin or `aer1-anchor/<redis.prefix>`. */
export function logSignerFor(config: Config, log: Logger): LogSigner | null {
  if (!config.log.enabled) return null;
  const keyFile = logKeyFile(config);
  if (!existsSync(keyFile)) {
    const written = writeLogKeyFile(keyFile, config.log.origin ?? `aer1-anchor/${config.redis.prefix}`);
    log.info({ keyFile: written.path, vkey: written.verifierKey }, 'created a new anchor log key (mode 0600)');
  }
  return loadLogKeyFile(keyFile);
}

/** What runDaemon has started so far, stopped in reverse on a stop or a failed start. */
interface Started {
  daemon: Daemon | null;
  http: { url: string; close(): Promise<void> } | null;
  webhooks: { stop(): Promise<void> } | null;
}

/** Starts everything `aer1-anchord` runs; used by the CLI and by the demo. */
export async function runDaemon(config: Config, log: Logger, opts: Pick<DaemonDeps, 'witnessReprobeMs'> = {}): Promise<RunningDaemon> {
  const redis = await resolveRedis(config, log);
  const parts: Started = { daemon: null, http: null, webhooks: null };
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (parts.webhooks && !(await settlesWithin(parts.webhooks.stop(), WEBHOOKS_STOP_MS))) log.warn(`webhooks did not stop within ${WEBHOOKS_STOP_MS} ms; going on with the stop`);
      await parts.http?.close();
      await parts.daemon?.stop();
      await redis.embedded?.stop();
    })();
    return stopping;
  };
  try {
    const daemon = await startParts(config, log, redis, parts, opts);
    return { daemon, httpUrl: parts.http?.url ?? null, redisUrl: redis.url, stop };
  } catch (err) {
    // a start refused (or failed) leaves nothing running: no connection, no server, not the embedded redis-server it started
    await stop();
    throw err;
  }
}

async function startParts(config: Config, log: Logger, redis: Awaited<ReturnType<typeof resolveRedis>>, parts: Started, opts: Pick<DaemonDeps, 'witnessReprobeMs'>): Promise<Daemon> {
  const signingKey = signingKeyFor(config, log);
  const logSigner = logSignerFor(config, log);
  const daemon = (parts.daemon = new Daemon({ config, redisUrl: redis.target, log, signingKey, logSigner, ...opts }));
  await daemon.start();
  // bounded (3 s) and run beside the HTTP start: the first log lines say whether the witnesses answered
  const probe = daemon.probeWitnesses();
  if (config.http.enabled) {
    const { startHttpServer } = await import('../adapters/http/server.js');
    parts.http = await startHttpServer({ daemon, log });
  }
  if (config.webhooks.length > 0) {
    const { startShardWebhooks } = await import('../adapters/webhooks/webhooks.js');
    parts.webhooks = await startShardWebhooks({ daemon, log });
  }
  log.info({ redis: redis.url.replace(/\/\/[^@]*@/g, '//***@'), where: redis.where }, `Redis: ${redis.where}`);
  announceWitnesses(config, log, signingKey);
  if (logSigner) {
    const logs = daemon.engines.map((e) => e.anchorLog!.options);
    log.info(
      { vkey: logSigner.verifierKey, origins: logs.map((l) => l.origin), dirs: logs.map((l) => l.dir), checkpointIntervalMs: config.log.checkpointIntervalMs },
      `anchor log: ${logs.map((l) => l.origin).join(', ')} in ${logs.map((l) => l.dir).join(', ')}, verifier key ${logSigner.verifierKey}`,
    );
  }
  const outcomes = await probe;
  const unreachable = outcomes.filter((o) => !o.answered);
  (unreachable.length > 0 ? log.warn.bind(log) : log.info.bind(log))(
    { answered: outcomes.length - unreachable.length, unreachable: unreachable.map((o) => ({ kind: o.kind, url: displayUrl(o.url), error: o.message })) },
    describeProbe(outcomes),
  );
  if (parts.http) log.info({ url: parts.http.url }, `status page: ${parts.http.url}/`);
  log.info({ queue: config.queue.name, version: VERSION }, 'aer1-anchord ready');
  return daemon;
}

function announceWitnesses(config: Config, log: Logger, signingKey: SigningKey | null): void {
  if (config.nostr.enabled) {
    log.info(
      { mode: config.nostr.mode, relays: config.nostr.relays.map(displayUrl), quorum: nostrQuorum(config), npub: signingKey?.npub },
      `witness nostr: ${config.nostr.mode} mode${config.nostr.mode === 'auto' ? ` (one event per subject while a cut fits the budget of ${autoBudget(config.nostr.ratePerMinute, config.nostr.autoHorizonMs)} events per ${config.nostr.autoHorizonMs} ms beside what the relays already carry, else batch events)` : ''}, ${config.nostr.relays.length} relays, signing as ${signingKey?.npub}`,
    );
  }
  if (config.ots.enabled) {
    log.info({ calendars: config.ots.calendars.map(displayUrl), m: config.ots.minCalendars, network: config.ots.network }, `witness ots: ${config.ots.minCalendars} of ${config.ots.calendars.length} calendars, ${config.ots.network}`);
  }
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string' }, 'stop-on-stdin-eof': { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(
      'usage: aer1-anchord [--config FILE] [--stop-on-stdin-eof]\n' +
        '  Configuration: built-in defaults, then --config FILE, then AER1_* environment variables (docs/configuration.md).\n' +
        '  --stop-on-stdin-eof  stop as on SIGTERM when standard input closes: a parent holding a pipe to it\n' +
        '                       (a supervisor, a test) takes the daemon with it when it dies, even by SIGKILL.\n',
    );
    return 0;
  }
  if (values.version) {
    process.stdout.write(`aer1-anchord ${VERSION}\n`);
    return 0;
  }
  const config = loadConfig({ file: values.config });
  const log = createLogger(config.log.level, process.stderr, config.log.format);
  const running = await runDaemon(config, log);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals | 'stdin-eof'): void => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'stopping: no new jobs; in-flight work finishes or returns to its queue');
      const timer = setTimeout(() => {
        log.error(`did not stop within ${STOP_TIMEOUT_MS} ms; exiting`);
        process.exit(1);
      }, STOP_TIMEOUT_MS);
      timer.unref();
      running.stop().then(
        () => {
          log.info('stopped');
          resolve();
        },
        (err: unknown) => {
          log.error({ err }, 'error while stopping');
          resolve();
        },
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    if (values['stop-on-stdin-eof']) {
      // Nothing is read from stdin; its end (or an error: the parent's end gone) is the signal.
      process.stdin.on('data', () => undefined);
      process.stdin.once('end', () => onSignal('stdin-eof'));
      process.stdin.once('error', () => onSignal('stdin-eof'));
    }
  });
  // a stdin being read keeps the process alive: let it go once stopped
  if (values['stop-on-stdin-eof']) process.stdin.destroy();
  return 0;
}
