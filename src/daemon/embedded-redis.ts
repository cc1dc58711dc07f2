/**
 * The embedded default: a private redis-server child supervised by the daemon, for a
 * newcomer with nothing configured. Append-only file on, `noeviction` (an anchoring
 * daemon must refuse writes rather than drop accepted subjects), loopback only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { UsageError } from '../core/errors/errors.js';
import { redisAnswers } from '../adapters/redis/connection.js';

export const INSTALL_HINT = 'install redis-server (Debian/Ubuntu: apt-get install redis-server) or set REDIS_URL';

export function redisServerInstalled(bin = 'redis-server'): boolean {
  const r = spawnSync(bin, ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

export interface EmbeddedRedis {
  url: string;
  port: number;
  dir: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export interface EmbeddedRedisOptions {
  dir: string;
  port?: number;
  /** Append-only persistence (default on). */
  appendonly?: boolean;
  bin?: string;
}

/** Starts redis-server on loopback and waits (bounded) until it answers. */
export async function startEmbeddedRedis(opts: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const bin = opts.bin ?? 'redis-server';
  if (!redisServerInstalled(bin)) throw new UsageError(`no Redis answers and redis-server is not installed: ${INSTALL_HINT}`, 'no_redis');
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const port = opts.port ?? (await freePort());
  const args = [
    '--bind', '127.0.0.1',
    '--port', String(port),
    '--dir', dir,
    '--appendonly', opts.appendonly === false ? 'no' : 'yes',
    '--appendfsync', 'everysec',
    '--save', '',
    '--maxmemory-policy', 'noeviction',
    '--protected-mode', 'yes',
    '--daemonize', 'no',
    '--logfile', '',
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2000);
  });
  const deadline = Date.now() + 10_000;
  for (let i = 0; i < 200 && Date.now() < deadline; i++) {
    if (child.exitCode !== null) throw new UsageError(`redis-server exited at start (code ${child.exitCode}): ${stderr.trim()}`, 'no_redis');
    if (await redisAnswers('127.0.0.1', port, 200)) {
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        dir,
        child,
        stop: () => stopChild(child),
      };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new UsageError(`redis-server did not answer on 127.0.0.1:${port} within 10 s`, 'no_redis');
}

export function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) return res();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      res();
    });
    child.kill('SIGTERM');
  });
}

/** Written in the data folder while the daemon's redis-server runs there; read by the CLI. */
export const EMBEDDED_REDIS_FILE = 'aer1-redis.json';
/** Held (created exclusively) while a daemon finds, stops or starts the folder's redis-server. */
const START_LOCK_FILE = 'aer1-redis.lock';

export interface EmbeddedRedisRecord {
  url: string;
  port: number;
  pid: number;
  dir: string;
  startedAt: string;
}

/** The daemon's view of the folder's one redis-server: started now, or found still running. */
export interface DaemonRedis {
  url: string;
  port: number;
  pid: number;
  dir: string;
  /** True when a server left running by an earlier daemon (e.g. one SIGKILLed) was reused. */
  reused: boolean;
  /** Stops the server (it writes its append-only file out) and removes the record. */
  stop(): Promise<void>;
}

export function readEmbeddedRedisRecord(dir: string): EmbeddedRedisRecord | null {
  try {
    const r = JSON.parse(readFileSync(join(resolve(dir), EMBEDDED_REDIS_FILE), 'utf8')) as Partial<EmbeddedRedisRecord>;
    if (typeof r.url !== 'string' || !Number.isInteger(r.port) || !Number.isInteger(r.pid) || typeof r.dir !== 'string') return null;
    return r as EmbeddedRedisRecord;
  } catch {
    return null;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Pids of the redis-server processes whose working folder is `dir` (redis-server changes
 * into its `--dir`, and rewrites its command line, so the folder is read from /proc/PID/cwd).
 * Empty where there is no /proc.
 */
export function redisServersIn(dir: string): number[] {
  const target = resolve(dir);
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of entries) {
    if (!/^[0-9]+$/.test(name) || !isRedisServer(Number(name))) continue;
    try {
      if (readlinkSync(`/proc/${name}/cwd`) === target) pids.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Whether the pid is a redis-server (by /proc/PID/comm); where there is no /proc, whether it runs. */
function isRedisServer(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'redis-server';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync('/proc') && processAlive(pid);
  }
}

/** The pid and data folder the Redis on this port reports, or null when it does not answer. */
async function identify(port: number): Promise<{ pid: number; dir: string } | null> {
  if (!(await redisAnswers('127.0.0.1', port, 500))) return null;
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const info = await client.info('server');
    const dirReply = (await client.config('GET', 'dir')) as string[];
    const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
    return Number.isInteger(pid) && typeof dirReply[1] === 'string' ? { pid, dir: dirReply[1] } : null;
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone (bounded). */
async function terminate(pid: number, graceMs = 5000): Promise<void> {
  const signal = (s: NodeJS.Signals): void => {
    try {
      process.kill(pid, s);
    } catch {
      // already gone
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  for (let i = 0; i < 400 && processAlive(pid); i++) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      if (Date.now() > deadline + 2000) break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Creates the start lock exclusively; takes over one whose holder is dead; waits (bounded) for a live one. */
async function takeStartLock(dir: string): Promise<() => void> {
  const file = join(dir, START_LOCK_FILE);
  const deadline = Date.now() + 15_000;
  for (let i = 0; i < 1000; i++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeFileSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(readFileOr(file).trim());
    if (!Number.isInteger(holder) || holder <= 0 || !processAlive(holder)) {
      rmSync(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new UsageError(`another process (pid ${holder}) is starting the redis-server of ${dir}; ${file} is its lock`, 'no_redis');
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new UsageError(`could not take ${file}`, 'no_redis');
}

function readFileOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * The daemon's embedded Redis: one redis-server per data folder, ever. Under a start lock
 * in the folder, a server recorded in `aer1-redis.json` that still answers with this pid
 * and this folder is reused; any other redis-server working in the folder is stopped;
 * then a new one is started and recorded.
 */
export async function openEmbeddedRedis(opts: EmbeddedRedisOptions): Promise<DaemonRedis> {
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const recordFile = join(dir, EMBEDDED_REDIS_FILE);
  const release = await takeStartLock(dir);
  try {
    const record = readEmbeddedRedisRecord(dir);
    if (record && processAlive(record.pid)) {
      const seen = await identify(record.port);
      if (seen && seen.pid === record.pid && resolve(seen.dir) === dir) {
        return { url: record.url, port: record.port, pid: record.pid, dir, reused: true, stop: () => stopRecorded(record.pid, recordFile) };
      }
    }
    // a server working in the folder that cannot be reused (hung, or unrecorded) must not run beside a new one
    for (const pid of redisServersIn(dir)) await terminate(pid);
    const started = await startEmbeddedRedis({ ...opts, dir });
    const pid = started.child.pid ?? 0;
    const fresh: EmbeddedRedisRecord = { url: started.url, port: started.port, pid, dir, startedAt: new Date().toISOString() };
    // a SIGKILLed daemon leaves the server running; the next start finds it through this file
    writeFileSync(recordFile, `${JSON.stringify(fresh)}\n`, { mode: 0o600 });
    return {
      url: started.url,
      port: started.port,
      pid,
      dir,
      reused: false,
      stop: async () => {
        await started.stop();
        rmSync(recordFile, { force: true });
      },
    };
  } finally {
    release();
  }
}

async function stopRecorded(pid: number, recordFile: string): Promise<void> {
  // the pid was checked at start; a server that died since may have handed its pid on
  if (isRedisServer(pid)) await terminate(pid);
  rmSync(recordFile, { force: true });
}
