/**
 * The benchmark's processes: a private redis-server per run (so `INFO memory` counts
 * only that run), the witnesses in a child of their own (bench/peers.ts), and
 * `aer1-anchord` as a child (so its RSS is its own). Every child is killed when the bench
 * exits, also on errors and signals.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RedisClient } from '../src/adapters/redis/connection.js';
import { loadConfig, type Config } from '../src/adapters/config/config.js';
import { startEmbeddedRedis, stopChild, type EmbeddedRedis } from '../src/daemon/embedded-redis.js';
import { nostrBatchQueueName, otsQueueName } from '../src/adapters/bullmq/names.js';
import { StateKeys } from '../src/adapters/state/keys.js';
import type { PeersInfo } from './peers.js';

/** The repository root (this file runs from dist/bench/). */
export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const DAEMON_BIN = join(REPO_ROOT, 'dist/src/cli/aer1-anchord.js');
export const VERIFY_BIN = join(REPO_ROOT, 'bin/aer1-verify-anchor.js');
const PEERS_JS = fileURLToPath(new URL('./peers.js', import.meta.url));

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();

/** Tracks a child so it is killed if the bench exits before stopping it. */
export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `aer1-bench-${label}-`));
  tempDirs.add(dir);
  return dir;
}

/** Last resort on exit: SIGKILL what is still running, remove temporary folders. */
export function killAllTracked(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
  tempDirs.clear();
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

// ---- Redis

export async function startRedis(): Promise<EmbeddedRedis> {
  const redis = await startEmbeddedRedis({ dir: tempDir('redis'), appendonly: false });
  track(redis.child);
  return redis;
}

/** `used_memory` from INFO memory, in bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  const m = /^used_memory:(\d+)/m.exec(info);
  if (!m) throw new Error('INFO memory has no used_memory line');
  return Number(m[1]);
}

// ---- Peers

export interface Peers extends PeersInfo {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts bench/peers.js and waits (bounded) for its JSON line. */
export async function startPeers(opts: { roundMs: number; relays?: number; calendars?: number }): Promise<Peers> {
  const headersFile = join(tempDir('headers'), 'headers.json');
  const child = track(
    spawn(process.execPath, [PEERS_JS, headersFile, String(opts.relays ?? 3), String(opts.calendars ?? 2), String(opts.roundMs)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() },
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const info = await new Promise<PeersInfo>((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`bench peers did not start within 30 s: ${stderr.trim()}`)), 30_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          res(JSON.parse(out.slice(0, nl)) as PeersInfo);
        } catch (err) {
          rej(new Error(`bench peers printed something else than JSON: ${(err as Error).message}`));
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`bench peers exited (code ${code}): ${stderr.trim()}`));
    });
  });
  return {
    ...info,
    child,
    stop: async () => {
      child.stdin?.end();
      await stopChild(child, 5000);
    },
  };
}

export async function mineAll(calendars: readonly string[]): Promise<void> {
  for (const url of calendars) {
    const res = await fetch(`${url}/mine`, { method: 'POST', signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw new Error(`POST ${url}/mine answered ${res.status}`);
    await res.arrayBuffer();
  }
}

// ---- The daemon

export interface BenchDaemonOptions {
  redisUrl: string;
  /** A Redis Cluster's startup nodes (redis.cluster); `redisUrl` is then not used. */
  redisCluster?: string[];
  peers: PeersInfo;
  mode: 'batch' | 'envelope' | 'auto';
  /** Nostr and OTS batch window (ms); null: the configuration's defaults (nostr.batchWindowMs, ots.batchWindowMs). */
  windowMs: number | null;
  ratePerMinute: number;
  /** Most subjects per Nostr event and per calendar submission (default: the daemon's). */
  batchMaxSize?: number;
  /** redis.shards (default 1). */
  shards?: number;
  /** Extra NODE_OPTIONS for the daemon child (e.g. a memory probe, --heapsnapshot-signal). */
  nodeOptions?: string;
  /** Extra environment for the daemon child. */
  env?: Record<string, string>;
  /** The anchor log on (log.enabled, default interval), its folder and key in the daemon's temp folder. */
  log?: boolean;
  /** Retention on: confirmed subjects retired at once (retention.confirmedAfterMs 1, a pass every 200 ms); with `log`, lean. */
  retention?: boolean;
}

export const BENCH_PREFIX = 'bench';

/** The daemon's configuration for a run: local witnesses, short windows and polls, no HTTP. */
export function benchConfig(o: BenchDaemonOptions & { keyFile: string; dir: string }): Config {
  return loadConfig({
    env: {},
    overrides: {
      redis: { ...(o.redisCluster ? { url: null, cluster: o.redisCluster } : { url: o.redisUrl }), prefix: BENCH_PREFIX, embedded: false, shards: o.shards ?? 1 },
      nostr: {
        enabled: true,
        mode: o.mode,
        relays: o.peers.relays,
        // every relay, as the benchmark reports (the daemon's default is a majority)
        quorum: o.peers.relays.length,
        ratePerMinute: o.ratePerMinute,
        keyFile: o.keyFile,
        publishTimeoutMs: 10_000,
        backoffMs: 200,
        backoffMaxMs: 2000,
        ...(o.windowMs !== null ? { batchWindowMs: o.windowMs } : {}),
        ...(o.batchMaxSize !== undefined ? { batchMaxSize: o.batchMaxSize } : {}),
      },
      ots: {
        enabled: true,
        calendars: o.peers.calendars,
        minCalendars: o.peers.calendars.length,
        ...(o.windowMs !== null ? { batchWindowMs: o.windowMs } : {}),
        ...(o.batchMaxSize !== undefined ? { batchMaxSize: o.batchMaxSize } : {}),
        submitBackoffMs: 200,
        upgradeInitialMs: 500,
        upgradeMaxMs: 2000,
        network: 'regtest',
        headersFile: o.peers.headersFile,
        esploraUrl: null,
      },
      http: { enabled: false, port: 0 },
      ...(o.retention ? { retention: { confirmedAfterMs: 1, intervalMs: 200, limit: 100_000 } } : {}),
      // off unless --log, so the figures of runs with and without it stay comparable
      log: { level: 'warn', enabled: o.log === true, ...(o.log ? { dir: join(o.dir, 'log'), keyFile: join(o.dir, 'log.key') } : {}) },
      queue: {
        ...(process.env.BENCH_QUEUE_CONCURRENCY ? { concurrency: Number(process.env.BENCH_QUEUE_CONCURRENCY) } : {}),
        ...(process.env.BENCH_MAX_SUBJECTS_IN_FLIGHT ? { maxSubjectsInFlight: Number(process.env.BENCH_MAX_SUBJECTS_IN_FLIGHT) } : {}),
      },
    },
  });
}

export interface DaemonChild {
  child: ChildProcess;
  config: Config;
  logFile: string;
  /** Current and peak resident set (bytes) from /proc/<pid>/status; null once gone. */
  memory(): { rss: number; hwm: number } | null;
  logTail(): string;
  stop(): Promise<void>;
}

/** `aer1-anchord --config FILE` as a child; resolves once its workers are registered in Redis. */
export async function startDaemonChild(o: BenchDaemonOptions, redis: RedisClient): Promise<DaemonChild> {
  const dir = tempDir('daemon');
  const config = benchConfig({ ...o, keyFile: join(dir, 'nostr.key'), dir });
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const logFile = join(dir, 'daemon.log');
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = track(
      // AER1_BENCH_DAEMON_NODE_ARGS: node flags for the daemon alone, e.g. `--cpu-prof --cpu-prof-dir=DIR` (docs/performance.md)
      spawn(process.execPath, [...(process.env.AER1_BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean), DAEMON_BIN, '--config', file], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, ...(o.nodeOptions ? { NODE_OPTIONS: o.nodeOptions } : {}), ...o.env },
        stdio: ['ignore', fd, fd],
      }),
    );
  } finally {
    closeSync(fd);
  }
  const logTail = (): string => {
    try {
      return readFileSync(logFile, 'utf8').slice(-2000).trim();
    } catch {
      return '';
    }
  };
  const daemon: DaemonChild = {
    child,
    config,
    logFile,
    memory: () => procMemory(child.pid),
    logTail,
    stop: () => stopChild(child, 20_000),
  };
  try {
    await waitForWorkers(config, redis, child, logTail);
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return daemon;
}

async function waitForWorkers(config: Config, redis: RedisClient, child: ChildProcess, logTail: () => string): Promise<void> {
  const base = config.queue.name;
  // the Nostr batch worker runs in every mode (auto and batch cut; envelope finishes leftovers)
  const names = [base, otsQueueName(base), nostrBatchQueueName(base)];
  // every shard's queues (redis.shards), and with several the usual intake queue's router
  const k = config.redis.shards;
  const prefixes = Array.from({ length: k }, (_, i) => StateKeys.forShard(config.redis.prefix, i, k).bullPrefix);
  const queues = [
    ...prefixes.flatMap((prefix) => names.map((n) => new Queue(n, { connection: redis, prefix }))),
    ...(k > 1 ? [new Queue(base, { connection: redis, prefix: new StateKeys(config.redis.prefix).bullPrefix })] : []),
  ];
  try {
    const deadline = Date.now() + 30_000;
    for (let i = 0; i < 600; i++) {
      if (child.exitCode !== null) throw new Error(`aer1-anchord exited at start (code ${child.exitCode}): ${logTail()}`);
      const counts = await Promise.all(queues.map((q) => q.getWorkersCount()));
      if (counts.every((c) => c > 0)) return;
      if (Date.now() > deadline) break;
      await sleep(50);
    }
    throw new Error(`aer1-anchord's workers did not register within 30 s: ${logTail()}`);
  } finally {
    // given a connection, a queue leaves it open when closed
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
  }
}

/** VmRSS and VmHWM of a process, in bytes (Linux /proc); null when unreadable. */
export function procMemory(pid: number | undefined): { rss: number; hwm: number } | null {
  if (pid === undefined) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

let clockTicks: number | null = null;

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat; null when unreadable. */
export function procCpuMs(pid: number | undefined, file = `/proc/${pid}/stat`): number | null {
  if (pid === undefined) return null;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  // fields after the command name, which is in parentheses and may hold spaces
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  if (clockTicks === null) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    clockTicks = Number(r.stdout.trim()) || 100;
  }
  return ((utime + stime) * 1000) / clockTicks;
}

/**
 * CPU time (user + system) in ms of a process's main thread alone (`/proc/<pid>/task/<pid>/stat`):
 * for Node, the event loop and JavaScript; what the process spends beyond it is V8's helper
 * threads (parallel and concurrent garbage collection, compilation) and libuv's pool. Null when
 * unreadable.
 */
export function procMainThreadCpuMs(pid: number | undefined): number | null {
  return procCpuMs(pid, `/proc/${pid}/task/${pid}/stat`);
}

/** Redis command statistics: calls and server time per command (INFO commandstats). */
export async function commandStats(redis: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const text = await redis.info('commandstats');
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}
