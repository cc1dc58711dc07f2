/**
 * A local Redis Cluster of three masters (no replicas) on free loopback ports, in a temp
 * folder: for the cluster bench and the cluster tests (test/helpers/redis-cluster.ts).
 * `stop()` ends the three redis-server children; `kill(port)` SIGKILLs one.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, stopChild } from '../src/daemon/embedded-redis.js';

export interface LocalCluster {
  dir: string;
  ports: number[];
  /** `redis://127.0.0.1:<port>` of each master, for redis.cluster. */
  urls: string[];
  children: ChildProcess[];
  /** The master serving `key`'s slot (its port). */
  ownerOf(key: string): Promise<number>;
  /** SIGKILLs the master on `port` (a node lost); `stop()` still reaps the rest. */
  kill(port: number): Promise<void>;
  /** Starts the master on `port` again from its own folder (its nodes.conf, and its append-only file with `appendonly`). */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

/** A port whose cluster-bus twin (port + 10000) is free too. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await freePort();
    if (p + 10000 < 65536 && !taken.has(p) && !taken.has(p + 10000) && (await portFree(p + 10000))) return p;
  }
  throw new Error('no free port pair for a cluster node');
}

/** One command to one node, on a connection of its own (not a cluster client). */
export async function askNode(port: number, ...args: string[]): Promise<unknown> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await r.call(args[0]!, ...args.slice(1));
  } finally {
    r.disconnect();
  }
}

/** Polls `check` every `everyMs` until true; throws naming `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < Math.ceil(timeoutMs / everyMs) + 1; i++) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export interface LocalClusterOptions {
  /** Each node keeps an append-only file (so a killed master restarts with its data). Default off. */
  appendonly?: boolean;
  /** cluster-node-timeout: how long a silent master takes to be marked failed (Redis's default 15,000). */
  nodeTimeoutMs?: number;
}

export async function startLocalCluster(dir = mkdtempSync(join(tmpdir(), 'aer1-cluster-')), opts: LocalClusterOptions = {}): Promise<LocalCluster> {
  const taken = new Set<number>();
  const nodes: Array<{ port: number; child: ChildProcess }> = [];
  const args = (port: number): string[] => [
    '--bind', '127.0.0.1', '--port', String(port), '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir, '--save', '',
    '--appendonly', opts.appendonly ? 'yes' : 'no', '--appendfilename', `appendonly-${port}.aof`, '--appenddirname', `aof-${port}`, '--dbfilename', `dump-${port}.rdb`,
    ...(opts.nodeTimeoutMs !== undefined ? ['--cluster-node-timeout', String(opts.nodeTimeoutMs)] : []),
  ];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => stopChild(n.child)));
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await clusterPort(taken);
      taken.add(port).add(port + 10000);
      const child = spawn('redis-server', args(port), { stdio: 'ignore' });
      nodes.push({ port, child });
    }
    for (const n of nodes) await until(`cluster node ${n.port} up`, async () => (await askNode(n.port, 'PING')) === 'PONG', 10_000, 50);
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    for (const n of nodes) await until(`node ${n.port}: cluster_state ok`, async () => String(await askNode(n.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), 20_000, 100);
  } catch (err) {
    await stop();
    throw err;
  }
  const ports = nodes.map((n) => n.port);
  return {
    dir,
    ports,
    urls: ports.map((p) => `redis://127.0.0.1:${p}`),
    get children() {
      return nodes.map((n) => n.child);
    },
    async ownerOf(key: string): Promise<number> {
      const slot = Number(await askNode(ports[0]!, 'CLUSTER', 'KEYSLOT', key));
      const ranges = (await askNode(ports[0]!, 'CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
      const range = ranges.find(([a, b]) => slot >= a && slot <= b);
      if (!range) throw new Error(`no master serves slot ${slot}`);
      return Number(range[2][1]);
    },
    async kill(port: number): Promise<void> {
      const n = nodes.find((x) => x.port === port);
      if (!n || n.child.exitCode !== null || n.child.signalCode !== null) return;
      const exited = new Promise((r) => n.child.once('exit', r));
      n.child.kill('SIGKILL');
      await exited;
    },
    async restart(port: number): Promise<void> {
      const n = nodes.find((x) => x.port === port);
      if (!n || (n.child.exitCode === null && n.child.signalCode === null)) throw new Error(`cluster node ${port} is still running`);
      n.child = spawn('redis-server', args(port), { stdio: 'ignore' });
      await until(`cluster node ${port} up again`, async () => (await askNode(port, 'PING')) === 'PONG', 20_000, 50);
    },
    stop,
  };
}
