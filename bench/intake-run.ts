/**
 * Intake on its own: what it costs Redis to take N subjects from the queue into state, one
 * subject per job (today's single-subject jobs) against bulk jobs (`{"subjects": [...]}`,
 * queue.maxSubjectsPerJob per job). A fresh private Redis and `aer1-anchord` child per run,
 * its batchers held back (a day's window, batches larger than N) so no witness work runs.
 * Two phases, each measured by `INFO commandstats` deltas (calls, not wall time):
 * enqueue (the issuer's side, with the intake queue paused), then intake (queue resumed →
 * every subject accepted). Throughput is N over the intake phase. With every subject pending
 * (accepted, no witness work started) the daemon child's VmRSS is read, then again a second
 * later: the daemon's resident memory with N subjects pending.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ANCHOR_JOB } from '../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS, bulkJobId } from '../src/adapters/queue/producer.js';
import { StateKeys } from '../src/adapters/state/keys.js';
import type { PeersInfo } from './peers.js';
import { BENCH_PREFIX, commandStats, sleep, startDaemonChild, startRedis, type BenchDaemonOptions, type DaemonChild } from './processes.js';
import { redisInfo } from './memory.js';
import { load } from './report.js';

export interface IntakeRunOptions {
  n: number;
  /** Subjects per bulk job; 1 = single-subject jobs (the job id is the subject key). */
  perJob: number;
  peers: PeersInfo;
  timeoutMs: number;
  /** Passed on to the daemon child (a memory probe, say). */
  daemon?: Pick<BenchDaemonOptions, 'nodeOptions' | 'env'>;
  /** Called with every subject pending, before the RSS figure is taken (memory-run). */
  atPending?: (daemon: DaemonChild) => Promise<void>;
  /**
   * Also read VmRSS this long after acceptance, the intake idle (V8's memory reducer gives
   * a burst's garbage back after some seconds of idleness): the steady state of subjects
   * that stay pending for hours. 0 (default): only the reading 1 s after.
   */
  idleMs?: number;
}

export interface CommandCount {
  callsPerSubject: number;
  top: Array<{ command: string; callsPerSubject: number }>;
}

export interface IntakeRunResult {
  n: number;
  perJob: number;
  finished: boolean;
  accepted: number;
  enqueueMs: number;
  intakeMs: number;
  subjectsPerS: number;
  enqueue: CommandCount;
  intake: CommandCount;
  /** Redis CPU (INFO cpu delta) per subject over the intake phase, ms. */
  redisCpuMs: number;
  /** Daemon VmRSS (bytes) when every subject was pending, a second later, and the peak (VmHWM) so far; null when not all got in. */
  rss: { atAccepted: number; settled: number; peak: number; idle?: { ms: number; rss: number } } | null;
  load: [number, number, number];
}

// commands the bench itself sends while polling and measuring
const BENCH_ONLY = new Set(['zcard', 'info', 'config|resetstat', 'config']);
const DAY_MS = 86_400_000;

function counts(stats: Map<string, { calls: number }>, n: number): CommandCount {
  const rows = [...stats].filter(([name]) => !BENCH_ONLY.has(name));
  return {
    callsPerSubject: rows.reduce((a, [, v]) => a + v.calls, 0) / n,
    top: rows
      .sort((a, b) => b[1].calls - a[1].calls)
      .slice(0, 6)
      .map(([command, v]) => ({ command, callsPerSubject: v.calls / n })),
  };
}

export async function intakeRun(o: IntakeRunOptions): Promise<IntakeRunResult> {
  const server = await startRedis();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  let daemon: DaemonChild | null = null;
  let queue: Queue | null = null;
  try {
    daemon = await startDaemonChild({ redisUrl: server.url, peers: o.peers, mode: 'batch', windowMs: DAY_MS, ratePerMinute: 100_000, batchMaxSize: o.n + 1, ...o.daemon }, redis);
    const k = new StateKeys(BENCH_PREFIX);
    queue = new Queue(daemon.config.queue.name, { connection: redis, prefix: k.bullPrefix });
    await queue.waitUntilReady();
    await queue.pause();
    const subjects = Array.from({ length: o.n }, () => ({ subject: 'receipt' as const, receipt_uuid: randomUUID(), output_sha256: randomBytes(32).toString('hex') }));

    await redis.config('RESETSTAT');
    const t0 = performance.now();
    if (o.perJob === 1) {
      for (let i = 0; i < subjects.length; i += 500) {
        await queue.addBulk(subjects.slice(i, i + 500).map((data) => ({ name: ANCHOR_JOB, data, opts: { jobId: data.receipt_uuid, ...ANCHOR_JOB_OPTIONS } })));
      }
    } else {
      const jobs = [];
      for (let i = 0; i < subjects.length; i += o.perJob) {
        const chunk = subjects.slice(i, i + o.perJob);
        jobs.push({ name: ANCHOR_JOB, data: { subjects: chunk }, opts: { jobId: bulkJobId(chunk.map((s) => ({ key: s.receipt_uuid, fingerprint: s.output_sha256 }))), ...ANCHOR_JOB_OPTIONS } });
      }
      for (let i = 0; i < jobs.length; i += 20) await queue.addBulk(jobs.slice(i, i + 20));
    }
    const enqueueMs = performance.now() - t0;
    const enqueue = counts(await commandStats(redis), o.n);

    await redis.config('RESETSTAT');
    const cpu0 = (await redisInfo(redis)).cpuMs;
    const t1 = performance.now();
    await queue.resume();
    let accepted = 0;
    const deadline = t1 + o.timeoutMs;
    for (let i = 0; i < Math.ceil(o.timeoutMs / 20) + 10; i++) {
      accepted = (await redis.zcard(k.byStatus('pending'))) + (await redis.zcard(k.byStatus('rejected')));
      if (accepted >= o.n || performance.now() > deadline) break;
      if (daemon.child.exitCode !== null) throw new Error(`aer1-anchord exited (code ${daemon.child.exitCode}): ${daemon.logTail()}`);
      await sleep(20);
    }
    const intakeMs = performance.now() - t1;
    const intake = counts(await commandStats(redis), Math.max(1, accepted));
    const redisCpuMs = ((await redisInfo(redis)).cpuMs - cpu0) / Math.max(1, accepted);
    let rss: IntakeRunResult['rss'] = null;
    if (accepted >= o.n && o.atPending) await o.atPending(daemon);
    const m0 = daemon.memory();
    if (accepted >= o.n && m0) {
      // a second of settling (timers, GC) with nothing left to take in, then the figure
      await sleep(1000);
      const m1 = daemon.memory() ?? m0;
      rss = { atAccepted: m0.rss, settled: m1.rss, peak: Math.max(m0.hwm, m1.hwm) };
      if (o.idleMs && o.idleMs > 1000) {
        await sleep(o.idleMs - 1000);
        const m2 = daemon.memory() ?? m1;
        rss.idle = { ms: o.idleMs, rss: m2.rss };
        rss.peak = Math.max(rss.peak, m2.hwm);
      }
    }
    const rejected = await redis.zcard(k.byStatus('rejected'));
    if (rejected > 0) throw new Error(`${rejected} subjects refused; daemon log: ${daemon.logTail()}`);
    return { n: o.n, perJob: o.perJob, finished: accepted >= o.n, accepted, enqueueMs, intakeMs, subjectsPerS: (accepted / intakeMs) * 1000, enqueue, intake, redisCpuMs, rss, load: load() };
  } finally {
    await queue?.close().catch(() => undefined);
    await daemon?.stop();
    await redis.quit().catch(() => undefined);
    await server.stop();
  }
}
