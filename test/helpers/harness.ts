/**
 * Shared test scaffolding: real Redis (shared with a unique prefix, or a private
 * redis-server on a free port), real dev relays, real dev calendars, the daemon in-process
 * or as a child process, and bounded waiting.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Queue } from 'bullmq';
import { connectRedis, type RedisClient, type RedisTarget } from '../../src/adapters/redis/connection.js';
import { loadConfig, type Config } from '../../src/adapters/config/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { logSignerFor } from '../../src/daemon/main.js';
import { createLogger } from '../../src/daemon/logger.js';
import { startEmbeddedRedis, stopChild, type EmbeddedRedis } from '../../src/daemon/embedded-redis.js';
import { ANCHOR_JOB } from '../../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../../src/adapters/queue/producer.js';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { ShardedStore } from '../../src/adapters/state/sharded-store.js';
import { StateKeys } from '../../src/adapters/state/keys.js';
import { generateSecretKey, type SigningKey } from '../../src/core/nostr/keys.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import { startDevCalendar, type DevCalendar, type DevCalendarBehaviour } from '../../src/dev/calendar/index.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export { SHARED_REDIS_URL, deletePrefix, prefixKeys, uniquePrefix } from './shared-redis.js';
import { SHARED_REDIS_URL, uniquePrefix } from './shared-redis.js';
import { ownTempDir } from './temp-registry.js';

/** A fresh temp folder, removed after the test file (test/helpers/temp-folders.ts). */
export function tempDir(label = 'aer1'): string {
  return ownTempDir(mkdtempSync(join(tmpdir(), `${label}-`)));
}

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 30_000, intervalMs = 100): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let i = 0; i < Math.ceil(timeoutMs / intervalMs) + 1; i++) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

/** A bare receipt subject with a fresh uuid and output hash. */
export function receiptFields(): { subject: 'receipt'; receipt_uuid: string; output_sha256: string } {
  return { subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: randomBytes(32).toString('hex') };
}

export async function startRelays(n: number): Promise<DevRelay[]> {
  return Promise.all(Array.from({ length: n }, () => startDevRelay()));
}

/** `behaviours[i]` gives calendar i the real server's awkward answers (Not-found window, gzip, delay). */
export async function startCalendars(n: number, headersOut: string, aggregationMs = 100, behaviours: Array<Partial<DevCalendarBehaviour>> = []): Promise<DevCalendar[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => startDevCalendar({ headersOut, aggregationMs, ...behaviours[i] })));
}

export interface TestSetup {
  relays?: DevRelay[];
  calendars?: DevCalendar[];
  headersFile?: string;
  prefix?: string;
  overrides?: Record<string, unknown>;
}

/** Config for tests: no default file, no environment, fast timings, loopback witnesses, no anchor log unless `overrides` turn it on. */
export function testConfig(setup: TestSetup): Config {
  const relays = setup.relays ?? [];
  const calendars = setup.calendars ?? [];
  const base: Record<string, unknown> = {
    redis: { prefix: setup.prefix ?? uniquePrefix(), embedded: false },
    queue: { stalledIntervalMs: 2000 },
    nostr: {
      enabled: relays.length > 0,
      relays: relays.length > 0 ? relays.map((r) => r.url) : ['ws://127.0.0.1:1'],
      ratePerMinute: 100_000,
      backoffMs: 100,
      rateLimitBackoffMs: 100,
      backoffMaxMs: 1000,
      publishTimeoutMs: 2000,
      batchWindowMs: 200,
    },
    ots: {
      enabled: calendars.length > 0,
      calendars: calendars.length > 0 ? calendars.map((c) => c.url) : ['http://127.0.0.1:1'],
      minCalendars: 1,
      timeoutMs: 3000,
      batchWindowMs: 200,
      submitBackoffMs: 100,
      upgradeInitialMs: 200,
      upgradeMaxMs: 1000,
      network: 'regtest',
      headersFile: setup.headersFile ?? null,
      esploraUrl: null,
    },
    http: { enabled: false, port: 0 },
    // the anchor log is on by default; a test turns it on with a folder and key of its own
    log: { level: 'silent', enabled: false },
  };
  const merged = deepMerge(base, setup.overrides ?? {});
  return loadConfig({ env: {}, overrides: merged });
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    if (v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur)) {
      out[k] = deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>);
    } else {
      out[k] = v;
    }
  }
  return out;
}

export function startDaemon(config: Config, redisUrl: RedisTarget = SHARED_REDIS_URL, key: SigningKey = generateSecretKey()): Promise<Daemon> {
  const log = createLogger(process.env.AER1_TEST_LOG ?? 'silent');
  // log.enabled: the key in log.keyFile, made on first start as aer1-anchord does
  const daemon = new Daemon({ config, redisUrl, log, signingKey: config.nostr.enabled ? key : null, logSigner: logSignerFor(config, log) });
  return daemon.start().then(() => daemon);
}

/** A producer and a state reader on the daemon's Redis (or Redis Cluster), independent of any daemon instance. */
export class Issuer {
  readonly redis: RedisClient;
  readonly queue: Queue;
  /** Shard 0's store (with one shard, the state). */
  readonly store: AnchorStore;
  /** Every shard's state as one (redis.shards). */
  readonly state: ShardedStore;

  constructor(config: Config, redisUrl: RedisTarget = SHARED_REDIS_URL) {
    this.redis = connectRedis(redisUrl);
    this.redis.on('error', () => undefined);
    this.state = ShardedStore.open(this.redis, config.redis.prefix, config.redis.shards);
    this.store = this.state.shards[0]!;
    // the usual intake queue ({prefix}): with several shards the daemon routes its subjects
    this.queue = new Queue(config.queue.name, { connection: this.redis, prefix: new StateKeys(config.redis.prefix).bullPrefix });
  }

  async enqueue(data: unknown, key: string): Promise<void> {
    await this.queue.add(ANCHOR_JOB, data, { jobId: key, ...ANCHOR_JOB_OPTIONS });
  }

  async enqueueMany(items: Array<{ data: unknown; key: string }>): Promise<void> {
    for (let i = 0; i < items.length; i += 500) {
      await this.queue.addBulk(items.slice(i, i + 500).map(({ data, key }) => ({ name: ANCHOR_JOB, data, opts: { jobId: key, ...ANCHOR_JOB_OPTIONS } })));
    }
  }

  /** Count of subjects whose overall status is `status`. */
  async count(status: string): Promise<number> {
    return (await this.state.countByStatus())[status] ?? 0;
  }

  async witnessCount(witness: 'nostr' | 'ots', status: string): Promise<number> {
    return (await this.state.countByWitness([witness]))[witness]?.[status] ?? 0;
  }

  async close(): Promise<void> {
    await this.queue.close();
    await this.redis.quit().catch(() => undefined);
  }
}

export async function privateRedis(appendonly = true): Promise<EmbeddedRedis> {
  return startEmbeddedRedis({ dir: tempDir('redis'), appendonly });
}

/**
 * The built `aer1-anchord` as a child process, dying with this test process however that
 * ends: it runs with --stop-on-stdin-eof on a stdin pipe that only we hold, so when this
 * process exits, crashes or is SIGKILLed (a vitest worker torn down at a timeout) the pipe
 * closes and the daemon stops. A normal exit also SIGKILLs it at once.
 */
export function spawnAnchord(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): ChildProcess & { stdin: NonNullable<ChildProcess['stdin']> } {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchord.js'), ...args, '--stop-on-stdin-eof'], {
    cwd: opts.cwd,
    env: opts.env ?? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? opts.cwd },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const reap = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', reap);
  child.once('exit', () => process.off('exit', reap));
  // a daemon that exits first closes the pipe: writes are never made, but an EPIPE must not throw
  child.stdin!.on('error', () => undefined);
  return child as ChildProcess & { stdin: NonNullable<ChildProcess['stdin']> };
}

/** `aer1-anchord` as a child process (for SIGKILL and SIGTERM tests); needs a build. With redis.cluster set in `config`, `redisUrl` is not written (null). */
export function spawnDaemon(config: Config, redisUrl: string | null, keyFile: string): ChildProcess {
  const dir = tempDir('daemon');
  const file = join(dir, 'config.json');
  const url = config.redis.cluster.length > 0 ? null : redisUrl;
  writeFileSync(file, JSON.stringify({ ...config, redis: { ...config.redis, url }, nostr: { ...config.nostr, keyFile } }));
  return spawnAnchord(['--config', file], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir } });
}

export { stopChild };

/**
 * Runs `aer1-anchor ARGS` (the built CLI) without blocking the event loop, so loopback
 * servers in the test keep answering; killed after `timeoutMs`.
 */
export function runAnchorCli(args: readonly string[], opts: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/aer1-anchor.js'), ...args], { cwd: opts.cwd ?? REPO_ROOT, env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}
