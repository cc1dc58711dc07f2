/**
 * The embedded default: a private redis-server child supervised by the daemon, for a
 * newcomer with nothing configured. Append-only file on, `noeviction` (an anchoring
 * daemon must refuse writes rather than drop accepted subjects), loopback only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { redisAnswers } from './redis.js';

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
