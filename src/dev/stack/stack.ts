/**
 * The loopback stack the demo and `aer1-anchor dev-stack` run, started in order and stopped
 * in reverse: a private redis-server on a free port (data in a temporary folder, removed
 * afterwards), dev relays (one per profile asked), dev calendars sharing one regtest
 * headers file (mining on a schedule when asked), a dev RFC 3161 TSA and two dev C2SP
 * witnesses for the anchor log's checkpoints, and the daemon in-process with fast windows.
 * Nothing is read from the environment or a config file.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../adapters/config/config.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../daemon/embedded-redis.js';
import { createLogger } from '../../daemon/logger.js';
import { runDaemon, type RunningDaemon } from '../../daemon/main.js';
import { npub } from '../../core/nostr/keys.js';
import { loadSigningKey } from '../../adapters/nostr/key-file.js';
import { startDevRelay, type DevRelay, type RelayProfileName } from '../relay/dev-relay.js';
import { startAutoMiner, startDevCalendar, type DevCalendar, type MineResult } from '../calendar/index.js';
import { loadLogKeyFile, writeLogKeyFile } from '../../adapters/log/key-file.js';
import { parseVerifierKey } from '../../core/log/note.js';
import { generateCosignerKey } from '../../core/witness/cosignature.js';
import { startDevTsa, type DevTsa } from '../tsa/index.js';
import { startDevWitness, type DevWitness } from '../witness/dev-witness.js';

/** Names the stack's key variable so a real AER1_NOSTR_SECRET_KEY in the shell is never used. */
export const DEMO_KEY_ENV = 'AER1_DEMO_NOSTR_SECRET_KEY';

export interface StackFiles {
  /** The regtest headers file the calendars write and the verifier reads. */
  headers: string;
  /** The stack's throwaway Nostr signing key (mode 0600). */
  key: string;
  /** The daemon's JSON log lines. */
  log: string;
  /** The anchor log's Ed25519 key (mode 0600) and its folder of tlog-tiles files (docs/log.md). */
  logKey: string;
  logDir: string;
  /** The dev TSA's CA certificate (PEM): what a verifier gives as --tsa-ca. */
  tsaCa: string;
}

/** The stack's dev witnesses' names. */
export const DEV_WITNESS_NAMES = ['aer1-anchor.dev/witness-1', 'aer1-anchor.dev/witness-2'] as const;

/** The stack's anchor log origin (and its key's name). */
export const DEV_LOG_ORIGIN = 'aer1-anchor.dev/log';

export interface StackOptions {
  /** One dev relay per profile, in this order (default: three `open` relays). */
  relayProfiles?: readonly RelayProfileName[];
  /** Default 2. */
  calendarCount?: number;
  /** Each calendar's aggregation round in ms (default 100). */
  aggregationMs?: number;
  /** Each calendar mines a regtest block this often (ms) while it holds commitments; unset: only by hand (`mine()`). */
  mineEveryMs?: number;
  /** Relays that must accept an event: every one (the demo, the default) or a majority (the daemon's default). */
  quorum?: 'all' | 'majority';
  /** The daemon's HTTP port (default 0: a free one). */
  httpPort?: number;
  /** File name of the signing key in the stack's folder (default `demo-nostr.key`). */
  keyFileName?: string;
  /** Told of each block a calendar mined on its schedule, and of each failed mine. */
  onMined?: (calendar: DevCalendar, block: MineResult) => void;
  onMineError?: (calendar: DevCalendar, err: Error) => void;
}

export interface DevStack {
  readonly config: Config;
  /** The settings the daemon was started with (over the built-in defaults): a config file's content. */
  readonly settings: Record<string, unknown>;
  readonly running: RunningDaemon;
  readonly redis: EmbeddedRedis;
  readonly relays: readonly DevRelay[];
  readonly calendars: readonly DevCalendar[];
  /** The dev TSA and witnesses the daemon sends each anchor log checkpoint to. */
  readonly tsa: DevTsa;
  readonly witnesses: readonly DevWitness[];
  /** Bearer token of this run's HTTP API (random, never written anywhere). */
  readonly token: string;
  readonly pubkey: string;
  readonly npub: string;
  readonly files: StackFiles;
  /** Every loopback port a service listened on: redis, relays, calendars, http. */
  ports(): number[];
  stop(): Promise<void>;
}

/** True when something accepts a TCP connection on 127.0.0.1:port (bounded at 500 ms). */
export function portAnswers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (v: boolean): void => {
      socket.destroy();
      resolve(v);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

interface SettingsInput {
  redisUrl: string;
  relays: readonly string[];
  calendars: readonly string[];
  tsaUrl: string;
  witnesses: ReadonlyArray<{ url: string; key: string }>;
  files: StackFiles;
  token: string;
  quorum: 'all' | 'majority';
  httpPort: number;
}

/** Dev timings: windows and polls of a few hundred ms instead of the production seconds and minutes. */
function stackSettings({ redisUrl, relays, calendars, tsaUrl, witnesses, files, token, quorum, httpPort }: SettingsInput): Record<string, unknown> {
  return {
    redis: { url: redisUrl, embedded: false },
    queue: { stalledIntervalMs: 5000 },
    nostr: {
      enabled: true,
      mode: 'envelope',
      relays: [...relays],
      // every relay, as the demo shows; 0 is the daemon's default, a majority
      quorum: quorum === 'all' ? relays.length : 0,
      keyFile: files.key,
      keyEnv: DEMO_KEY_ENV,
      publishTimeoutMs: 3000,
      ratePerMinute: 6000,
      backoffMs: 200,
      backoffMaxMs: 1000,
      maxAttempts: 10,
    },
    ots: {
      enabled: true,
      calendars: [...calendars],
      minCalendars: calendars.length,
      timeoutMs: 5000,
      batchWindowMs: 300,
      submitBackoffMs: 200,
      upgradeInitialMs: 300,
      upgradeMaxMs: 300,
      network: 'regtest',
      headersFile: files.headers,
      esploraUrl: null,
      bitcoindUrl: null,
    },
    http: { enabled: true, host: '127.0.0.1', port: httpPort, token },
    log: {
      level: 'info', enabled: true, keyFile: files.logKey, dir: files.logDir, origin: DEV_LOG_ORIGIN, checkpointIntervalMs: 200,
      tsaUrls: [tsaUrl], witnesses: witnesses.map((w) => ({ ...w })), timeWitnessIntervalMs: 200,
    },
  };
}

/** Runs `fn` for each started service in reverse, collecting (not throwing) errors. */
async function stopAll(stoppers: Array<() => Promise<void>>): Promise<Error[]> {
  const errors: Error[] = [];
  for (const stop of stoppers.reverse()) {
    try {
      await stop();
    } catch (err) {
      errors.push(err instanceof Error ? err : new Error(String(err)));
    }
  }
  return errors;
}

/**
 * Starts the whole stack. On any failure, whatever was already started is stopped
 * before the error is rethrown.
 */
export async function startStack(dir: string, opts: StackOptions = {}): Promise<DevStack> {
  const stoppers: Array<() => Promise<void>> = [];
  const files: StackFiles = { headers: join(dir, 'headers.json'), key: join(dir, opts.keyFileName ?? 'demo-nostr.key'), log: join(dir, 'daemon.log'), logKey: join(dir, 'log.key'), logDir: join(dir, 'log'), tsaCa: join(dir, 'tsa-ca.pem') };
  // the stack's Redis is new each run: an anchor log a former run left belongs to a state that is gone
  rmSync(files.logDir, { recursive: true, force: true });
  let logStream: WriteStream | null = null;
  try {
    const redisDir = mkdtempSync(join(tmpdir(), 'aer1-demo-redis-'));
    stoppers.push(async () => rmSync(redisDir, { recursive: true, force: true }));
    const redis = await startEmbeddedRedis({ dir: redisDir, appendonly: false });
    stoppers.push(() => redis.stop());

    const relays: DevRelay[] = [];
    for (const profile of opts.relayProfiles ?? ['open', 'open', 'open']) {
      const relay = await startDevRelay({ profile });
      stoppers.push(() => relay.close());
      relays.push(relay);
    }
    const calendars: DevCalendar[] = [];
    for (let i = 0; i < (opts.calendarCount ?? 2); i++) {
      const calendar = await startDevCalendar({ headersOut: files.headers, aggregationMs: opts.aggregationMs ?? 100 });
      stoppers.push(() => calendar.close());
      calendars.push(calendar);
      if (opts.mineEveryMs !== undefined) {
        const miner = startAutoMiner(calendar, opts.mineEveryMs, { onMined: opts.onMined, onError: opts.onMineError });
        stoppers.push(() => miner.stop());
      }
    }

    // the log key is made here (not by the daemon) so the witnesses trust it from the start
    const logVkey = existsSync(files.logKey) ? loadLogKeyFile(files.logKey).verifierKey : writeLogKeyFile(files.logKey, DEV_LOG_ORIGIN).verifierKey;
    const tsa = await startDevTsa({ outDir: dir });
    stoppers.push(() => tsa.close());
    const witnessDir = mkdtempSync(join(tmpdir(), 'aer1-demo-witnesses-'));
    stoppers.push(async () => rmSync(witnessDir, { recursive: true, force: true }));
    const witnesses: DevWitness[] = [];
    for (const [i, name] of DEV_WITNESS_NAMES.entries()) {
      const w = await startDevWitness({ stateDir: join(witnessDir, String(i)), key: generateCosignerKey(name).key, logs: new Map([[DEV_LOG_ORIGIN, [parseVerifierKey(logVkey)]]]) });
      stoppers.push(() => w.close());
      witnesses.push(w);
    }

    const token = randomBytes(24).toString('hex');
    const settings = stackSettings({
      redisUrl: redis.url, relays: relays.map((r) => r.url), calendars: calendars.map((c) => c.url), files, token,
      tsaUrl: tsa.url, witnesses: witnesses.map((w) => ({ url: w.url, key: w.verifierKey })),
      quorum: opts.quorum ?? 'all', httpPort: opts.httpPort ?? 0,
    });
    const config = loadConfig({ env: {}, overrides: settings });
    const stream = createWriteStream(files.log, { flags: 'a' });
    logStream = stream;
    stoppers.push(() => new Promise<void>((resolve) => stream.end(resolve)));
    const running = await runDaemon(config, createLogger(config.log.level, stream));
    stoppers.push(() => running.stop());
    const { key } = loadSigningKey({ file: files.key, env: DEMO_KEY_ENV });

    let stopping: Promise<void> | null = null;
    return {
      config,
      settings,
      running,
      redis,
      relays,
      calendars,
      tsa,
      witnesses,
      token,
      pubkey: key.publicKey,
      npub: npub(key.publicKey),
      files,
      ports: () => [redis.port, ...relays.map((r) => r.port), ...calendars.map((c) => c.port), portOf(tsa.url), ...witnesses.map((w) => portOf(w.url)), ...(running.httpUrl ? [portOf(running.httpUrl)] : [])],
      stop() {
        stopping ??= stopAll(stoppers).then((errors) => {
          if (errors.length) throw new AggregateError(errors, `stopping the stack: ${errors.map((e) => e.message).join('; ')}`);
        });
        return stopping;
      },
    };
  } catch (err) {
    await stopAll(stoppers);
    if (logStream && !logStream.closed) logStream.destroy();
    throw err;
  }
}
