/**
 * `node dist/bench/cluster-run.js [--n N] [--json]`: what one deployment costs Redis on a
 * standalone redis-server and on a local 3-master Redis Cluster (redis.cluster) with 1, 2
 * and 3 shards (redis.shards), with the same daemon, witnesses and N subjects (batch mode,
 * to confirmed; the issuer adds each subject to its shard's queue, shardOf). Redis CPU is read
 * from `INFO cpu` (used_cpu_sys + used_cpu_user) and commands from `INFO commandstats` on
 * every node before and after, and reported per subject, in total and per node: with one
 * shard one master does all the work; with K shards K masters share it
 * (docs/architecture.md, "Shards"). Reports; never asserts. Bounded: each run gives up
 * after --timeout-ms (default 120 s).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { ANCHOR_JOB } from '../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS } from '../src/adapters/queue/producer.js';
import { StateKeys } from '../src/adapters/state/keys.js';
import { shardOf } from '../src/core/shard/shard.js';
import { connectRedis, type RedisTarget } from '../src/adapters/redis/connection.js';
import { askNode, startLocalCluster } from './local-cluster.js';
import { BENCH_PREFIX, killAllTracked, mineAll, sleep, startDaemonChild, startPeers, startRedis, type Peers } from './processes.js';
import { load, machine } from './report.js';

interface RunResult {
  redis: 'standalone' | 'cluster';
  shards: number;
  n: number;
  finished: boolean;
  confirmed: number;
  wallMs: number;
  /** Redis CPU (sys + user) per subject, in microseconds, per node (port) and in total. */
  cpuUsPerSubject: { total: number; nodes: Record<string, number> };
  /** Redis commands (INFO commandstats calls) per subject, summed over the nodes. */
  commandsPerSubject: number;
  /** Confirmed subjects per second, from the first enqueue to the last confirmation. */
  perSecond: number;
  /** Keys on each node at the end. */
  keys: Record<string, number>;
}

async function commandCalls(port: number): Promise<number> {
  const info = String(await askNode(port, 'INFO', 'commandstats'));
  let calls = 0;
  for (const m of info.matchAll(/calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

async function cpuSeconds(port: number): Promise<number> {
  const info = String(await askNode(port, 'INFO', 'cpu'));
  const get = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return get('used_cpu_sys') + get('used_cpu_user');
}

async function run(kind: 'standalone' | 'cluster', shards: number, n: number, peers: Peers, timeoutMs: number): Promise<RunResult> {
  const cluster = kind === 'cluster' ? await startLocalCluster() : null;
  const single = kind === 'standalone' ? await startRedis() : null;
  const ports = cluster ? cluster.ports : [single!.port];
  const target: RedisTarget = cluster ? { cluster: cluster.urls } : single!.url;
  const redis = connectRedis(target);
  redis.on('error', () => undefined);
  const daemon = await startDaemonChild({ redisUrl: single?.url ?? '', ...(cluster ? { redisCluster: cluster.urls } : {}), peers, mode: 'batch', windowMs: 250, ratePerMinute: 100_000, shards }, redis);
  const keys = Array.from({ length: shards }, (_, i) => StateKeys.forShard(BENCH_PREFIX, i, shards));
  const queues = keys.map((k) => new Queue(daemon.config.queue.name, { connection: redis, prefix: k.bullPrefix }));
  try {
    await Promise.all(queues.map((q) => q.waitUntilReady()));
    const before = await Promise.all(ports.map(cpuSeconds));
    const callsBefore = await Promise.all(ports.map(commandCalls));
    const t0 = Date.now();
    for (let i = 0; i < n; i += 500) {
      const chunk = Array.from({ length: Math.min(500, n - i) }, () => ({ subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: randomBytes(32).toString('hex') }));
      for (let s = 0; s < shards; s++) {
        const mine = chunk.filter((data) => shardOf(data.receipt_uuid, shards) === s);
        if (mine.length > 0) await queues[s]!.addBulk(mine.map((data) => ({ name: ANCHOR_JOB, data, opts: { jobId: data.receipt_uuid, ...ANCHOR_JOB_OPTIONS } })));
      }
    }
    let confirmed = 0;
    const deadline = t0 + timeoutMs;
    for (let i = 0; i < Math.ceil(timeoutMs / 200) + 1 && Date.now() < deadline; i++) {
      confirmed = (await Promise.all(keys.map((k) => redis.zcard(k.byStatus('confirmed'))))).reduce((a, b) => a + b, 0);
      if (confirmed >= n) break;
      await mineAll(peers.calendars);
      await sleep(200);
    }
    const wallMs = Date.now() - t0;
    const after = await Promise.all(ports.map(cpuSeconds));
    const callsAfter = await Promise.all(ports.map(commandCalls));
    const nodes: Record<string, number> = {};
    ports.forEach((p, i) => (nodes[String(p)] = Math.round(((after[i]! - before[i]!) * 1e6) / n)));
    const counts: Record<string, number> = {};
    for (const p of ports) counts[String(p)] = Number(await askNode(p, 'DBSIZE'));
    const calls = callsAfter.reduce((a, b) => a + b, 0) - callsBefore.reduce((a, b) => a + b, 0);
    return {
      redis: kind,
      shards,
      n,
      finished: confirmed >= n,
      confirmed,
      wallMs,
      cpuUsPerSubject: { total: Object.values(nodes).reduce((a, b) => a + b, 0), nodes },
      commandsPerSubject: Math.round((calls / n) * 10) / 10,
      perSecond: Math.round((confirmed / wallMs) * 1000),
      keys: counts,
    };
  } finally {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    await daemon.stop();
    redis.disconnect();
    await cluster?.stop();
    await single?.stop();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: 'string', default: '2000' }, json: { type: 'boolean' }, 'timeout-ms': { type: 'string', default: '120000' } }, strict: true });
  const n = Number(values.n);
  const timeoutMs = Number(values['timeout-ms']);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new Error(`--n must be an integer 1–100000, got ${values.n}`);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > 600_000) throw new Error(`--timeout-ms must be an integer 1000–600000, got ${values['timeout-ms']}`);
  const peers = await startPeers({ roundMs: 250 });
  try {
    const results: RunResult[] = [];
    for (const [kind, shards] of [['standalone', 1], ['cluster', 1], ['cluster', 2], ['cluster', 3]] as const) results.push(await run(kind, shards, n, peers, timeoutMs));
    if (values.json) {
      for (const r of results) process.stdout.write(`${JSON.stringify({ ...r, machine: machine(), load: load() })}\n`);
      return;
    }
    for (const r of results) {
      const perNode = Object.entries(r.cpuUsPerSubject.nodes).map(([p, us]) => `${p}: ${us} µs (${r.keys[p]} keys)`).join(', ');
      process.stdout.write(`${r.redis}, ${r.shards} shard${r.shards === 1 ? '' : 's'}: ${r.confirmed}/${r.n} confirmed in ${r.wallMs} ms (${r.perSecond}/s)${r.finished ? '' : ' (not finished)'}; Redis per subject ${r.cpuUsPerSubject.total} µs CPU, ${r.commandsPerSubject} commands — ${perNode}\n`);
    }
    process.stdout.write(`load ${load().join(' ')}\n`);
  } finally {
    await peers.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`cluster bench: ${(err as Error).message}\n`);
  killAllTracked();
  process.exitCode = 1;
});
