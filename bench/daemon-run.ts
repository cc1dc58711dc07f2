/**
 * One measured run of the daemon: a fresh private Redis, `aer1-anchord` as a child, N
 * bare receipt subjects enqueued the way an issuer does — one job per subject (BullMQ
 * `addBulk` under the subject key) or bulk jobs (`{"subjects": [...]}`, up to
 * queue.maxSubjectsPerJob each, through the producer helper `enqueueAnchors`) — and the clock stopped when every subject is accepted on every relay
 * (Nostr witness confirmed, quorum = all relays) and held by the calendars (its OTS
 * batch submitted to m of n calendars: the witness is "pending" in the Bitcoin sense).
 * Optionally a regtest block is then mined and the run waits for Bitcoin confirmation;
 * optionally the proofs are exported. Along the way: Redis memory, the daemon's RSS, the
 * CPU time every process spent, and the Redis commands issued.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ANCHOR_JOB, nostrBatchQueueName, otsQueueName } from '../src/adapters/bullmq/names.js';
import { ANCHOR_JOB_OPTIONS, enqueueAnchors } from '../src/adapters/queue/producer.js';
import { AnchorStore } from '../src/adapters/state/anchor-store.js';
import { BatchStore, type BatchInfo } from '../src/adapters/state/batches.js';
import type { StateKeys, WitnessName } from '../src/adapters/state/keys.js';
import { ProofExporter } from '../src/adapters/proof/export.js';
import { RelayOutbox } from '../src/adapters/nostr/relay-outbox.js';
import { logDir } from '../src/adapters/config/config.js';
import { CHECKPOINTS_DIR, CheckpointHistory } from '../src/adapters/log/checkpoint-history.js';
import { LogKeys } from '../src/adapters/log/log-sequencer.js';
import { BENCH_PREFIX, commandStats, mineAll, procCpuMs, procMainThreadCpuMs, sleep, startDaemonChild, startRedis, tempDir, usedMemory, type DaemonChild } from './processes.js';
import { breakdownOf, keyClassifier, keySpaceUsage, memoryFigures, redisInfo, type KindUsage, type MemoryBreakdown, type MemoryFigures } from './memory.js';
import type { PeersInfo } from './peers.js';
import { load } from './report.js';

export type IntakeKind = 'single' | 'bulk';

export interface DaemonRunOptions {
  mode: 'batch' | 'envelope' | 'auto';
  n: number;
  /** One job per subject (default) or bulk jobs of queue.maxSubjectsPerJob subjects. */
  intake?: IntakeKind;
  peers: PeersInfo;
  /**
   * The dev calendars' aggregation round (ms): the clock starts at a uniformly random point of
   * it, as an issuer's burst meets a real calendar's round (its clock runs whatever arrives), so
   * runs one after another do not all meet the round at the same point of it.
   */
  calendarRoundMs?: number;
  /** Nostr and OTS batch window; null: the configuration's defaults. */
  windowMs: number | null;
  ratePerMinute: number;
  /** Hard limit of the timed part (enqueue → all pending); the run reports how far it got. */
  timeoutMs: number;
  /** Mine a block and wait for Bitcoin confirmation (bounded by confirmTimeoutMs). */
  confirm: boolean;
  confirmTimeoutMs: number;
  /** performance.now() past which the confirmation wait stops, whatever confirmTimeoutMs says. */
  confirmBy?: number;
  /** Export every subject's proof into a folder (standalone aer1-anchor-proof-v1 files). */
  exportProofs: boolean;
  /** The anchor log on: the goal then also asks every subject in a checkpoint. */
  log?: boolean;
  /** Retention on (with `log`: lean retirement): after confirmation, wait until every subject is retired and read memory again. */
  retention?: boolean;
  /**
   * First run N other subjects through the fresh daemon, to the same goal, before anything is
   * counted: the figures then describe a warm daemon (V8 has compiled its hot paths), and that
   * first burst's daemon CPU per subject is reported as `cpuCold` (not with `log`).
   */
  warmUp?: boolean;
}

/** With the anchor log on: when every subject was in a checkpoint, and each one's wait for it. */
export interface LogFigures {
  /** ms from the first enqueue until every subject was in a checkpoint (null: not reached). */
  loggedMs: number | null;
  checkpoints: number;
  /** Per subject: its acceptance (its record's `created`, ms) to the first checkpoint covering its index (that checkpoint file's mtime). */
  latencyMs: { p50: number; p95: number; max: number } | null;
}

/** Milliseconds of CPU per subject, by process. */
export interface CpuPerSubject {
  daemon: number | null;
  /** The daemon's main thread alone (event loop, JavaScript); the rest of `daemon` is V8's helper threads and libuv's pool. */
  daemonMain: number | null;
  redis: number | null;
  peers: number | null;
  /** The load generator (enqueue, polling) in the bench process. */
  bench: number;
}

export type { MemoryBreakdown } from './memory.js';

export interface CommandShare {
  command: string;
  callsPerSubject: number;
  usecPerSubject: number;
}

export interface DaemonRunResult {
  mode: 'batch' | 'envelope' | 'auto';
  n: number;
  intake: IntakeKind;
  /** Intake jobs enqueued. */
  jobs: number;
  /** The batch windows the daemon ran with (ms). */
  windows: { nostr: number; ots: number };
  /** Every subject reached the goal within the timeout. */
  finished: boolean;
  /** Subjects that reached the goal when the clock stopped. */
  done: number;
  /** Subjects accepted (in state) when the clock stopped. */
  accepted: number;
  /** Milestones in ms from the first enqueue. */
  enqueuedMs: number;
  acceptedMs: number | null;
  nostrMs: number | null;
  otsMs: number | null;
  wallMs: number;
  subjectsPerS: number;
  /**
   * Intake rate (subjects accepted per second) over each tenth of N that was reached: does
   * the rate fall as state grows?
   */
  intakePerTenth: number[];
  /** Nostr events published (per relay) and calendar submissions. */
  nostrEvents: number;
  otsBatches: number;
  memory: {
    beforeBytes: number;
    pendingBytes: number;
    /** Delta / subjects accepted, when every subject was pending (or when the clock stopped). */
    perPendingSubject: number;
    /** The same for heldMemory (used_memory less client buffers and the script cache). */
    perPendingSubjectHeld: number;
    /** The same less what the capped streams added (MemoryFigures.capped): what each subject keeps. */
    perPendingSubjectKept: number;
    confirmedBytes: number | null;
    perConfirmedSubject: number | null;
    /** With retention: INFO used_memory once every subject was retired (null when not asked or not reached). */
    retiredBytes: number | null;
    /** (retiredBytes - beforeBytes) / n. */
    perRetiredSubject: number | null;
    /** From confirmation until every subject was retired (ms). */
    retireMs: number | null;
    /** MEMORY STATS when retiredBytes was read: Redis's own tables and client buffers (bytes), the keys held. */
    retiredStats: { mainTable: number; clients: number; keys: number } | null;
    breakdown: MemoryBreakdown | null;
  };
  /** Daemon child memory: RSS when the clock stopped, and the peak (VmHWM) over the run. */
  daemonRssPendingBytes: number | null;
  daemonPeakRssBytes: number | null;
  cpu: CpuPerSubject;
  /**
   * With `warmUp`: the daemon's CPU per subject over the first burst of a fresh daemon (its
   * whole process, and its main thread), V8's compilation of the hot paths included; null otherwise.
   */
  cpuCold: { daemon: number | null; daemonMain: number | null } | null;
  /** Redis CPU (INFO cpu: used_cpu_sys + used_cpu_user delta) per subject, in ms, over the timed part. */
  redisInfoCpuMs: number;
  /** INFO commandstats over the timed part; `top` by server time (a script's includes its inner commands'), `byCalls` by calls. */
  redisCommands: { callsPerSubject: number; usecPerSubject: number; top: CommandShare[]; byCalls: CommandShare[] };
  /** From mining until every subject was confirmed (null when not asked or not reached). */
  confirmMs: number | null;
  confirmed: number;
  proofs: ProofExport | null;
  /** Load average when the clock stopped. */
  load: [number, number, number];
  log: LogFigures | null;
}

export interface ProofExport {
  dir: string;
  files: number;
  exportMs: number;
  /** ProofExporter on the plain AnchorStore, on a sample — see docs/performance.md. */
  plainSample: { n: number; ms: number } | null;
  confirmed: boolean;
  headersFile: string;
  distinctEvents: number;
}

/**
 * Subjects whose OTS batch is held by m calendars. The witness status alone cannot tell:
 * a subject is OTS "pending" from acceptance on; its batch gets `submitted = 1` once m
 * calendars answered. Batches are numbered 1.. by the batch sequence.
 */
/**
 * Counts subjects whose OTS batch the calendars hold (the batch's `submitted` flag). Batch ids
 * are `<sequence>-<nonce>`, so they are found through the subjects: the first subject (in
 * enqueue order) not yet seen in a batch names its batch, whose key list covers its members.
 */
class OtsSubmissions {
  private submitted = 0;
  /** HGET, LRANGE and HMGET calls made here, through AnchorStore (subtracted from the daemon's command counts). */
  hgets = 0;
  lranges = 0;
  hmgets = 0;
  private next = 0;
  private readonly covered = new Set<string>();
  private readonly known = new Set<string>();
  private readonly open = new Set<string>();
  constructor(
    private readonly store: AnchorStore,
    private readonly keys: readonly string[],
  ) {}

  async count(): Promise<number> {
    for (let i = 0; i < 100 && this.next < this.keys.length; i++) {
      while (this.next < this.keys.length && this.covered.has(this.keys[this.next]!)) this.next++;
      const key = this.keys[this.next];
      if (key === undefined) break;
      const id = await this.store.subjects.batchOf(key, 'ots');
      this.hgets++;
      if (id === null) break;
      this.covered.add(key);
      if (this.known.has(id)) continue;
      this.known.add(id);
      this.open.add(id);
      const members = await this.store.batches.batchKeys('ots', id);
      this.lranges++;
      for (const m of members) this.covered.add(m);
    }
    if (this.open.size === 0) return this.submitted;
    const ids = [...this.open];
    this.hmgets += ids.length;
    const res = await Promise.all(ids.map((id) => this.store.batches.batchFields('ots', id, ['submitted', 'size'])));
    res.forEach((f, i) => {
      if (f.submitted === '1') {
        this.submitted += Number(f.size ?? 0);
        this.open.delete(ids[i]!);
      }
    });
    return this.submitted;
  }
}

function subject(): { data: { subject: 'receipt'; receipt_uuid: string; output_sha256: string }; key: string } {
  const receipt_uuid = randomUUID();
  return { data: { subject: 'receipt', receipt_uuid, output_sha256: randomBytes(32).toString('hex') }, key: receipt_uuid };
}

/**
 * An AnchorStore that keeps batches it has read: ProofExporter reads a subject's whole
 * batch hash (every digest in it) for each proof, which makes exporting a batch of size B
 * cost O(B) per proof. The bench caches it to export 10,000 proofs in bounded time.
 */
class BatchCache extends BatchStore {
  private readonly cache = new Map<string, BatchInfo | null>();
  override async getBatch(witness: WitnessName, id: string): Promise<BatchInfo | null> {
    const k = `${witness}:${id}`;
    if (this.cache.has(k)) return this.cache.get(k)!;
    const b = await super.getBatch(witness, id);
    if (this.cache.size > 64) this.cache.clear();
    this.cache.set(k, b);
    return b;
  }
}

class BatchCachingStore extends AnchorStore {
  override readonly batches: BatchStore = new BatchCache(this.redis, this.keys);
}

/** MEMORY STATS: the main key table's overhead, the normal clients' buffers, the keys held. */
async function memoryStats(redis: Redis): Promise<{ mainTable: number; clients: number; keys: number }> {
  const flat = (await redis.call('MEMORY', 'STATS')) as unknown[];
  const get = (name: string): unknown => flat[flat.indexOf(name) + 1];
  const db0 = get('db.0') as unknown[] | undefined;
  const mainTable = db0 ? Number(db0[db0.indexOf('overhead.hashtable.main') + 1] ?? 0) : 0;
  return { mainTable, clients: Number(get('clients.normal') ?? 0), keys: Number(get('keys.count') ?? 0) };
}

/** What state holds when a burst starts: subjects (accepted or not), Nostr confirmations, batch counters, signed events (auto mode). */
interface InState {
  accepted: number;
  nostr: number;
  nostrSeq: number;
  otsSeq: number;
  events: number;
}

/**
 * DaemonRunOptions.warmUp: `n` other subjects through the fresh daemon to the goal (accepted by
 * every relay, held by the calendars), then the daemon idle. Returns what state holds then and
 * that burst's daemon CPU per subject.
 */
async function warmUpBurst(
  n: number,
  timeoutMs: number,
  mode: DaemonRunOptions['mode'],
  daemon: DaemonChild,
  redis: Redis,
  store: AnchorStore,
  intakeQueue: Queue,
  enqueueAll: (list: ReadonlyArray<ReturnType<typeof subject>>) => Promise<number>,
): Promise<{ base: InState; cold: NonNullable<DaemonRunResult['cpuCold']> }> {
  const k = store.keys;
  const warm = Array.from({ length: n }, subject);
  const pid = daemon.child.pid;
  const c0 = { daemon: procCpuMs(pid), daemonMain: procMainThreadCpuMs(pid) };
  await enqueueAll(warm);
  const ots = new OtsSubmissions(store, warm.map((x) => x.key));
  const work = [nostrBatchQueueName(daemon.config.queue.name), otsQueueName(daemon.config.queue.name)].map((name) => new Queue(name, { connection: redis, prefix: k.bullPrefix }));
  const outbox = new RelayOutbox(store.events, daemon.config.nostr.relays);
  try {
    const deadline = performance.now() + timeoutMs;
    for (let i = 0; i < Math.ceil(timeoutMs / 20) + 10 && performance.now() <= deadline; i++) {
      const [c, w] = await Promise.all([store.indexes.countByStatus(), store.indexes.countByWitness(['nostr', 'ots'])]);
      if ((c.rejected ?? 0) > 0 || (w.nostr?.failed ?? 0) > 0 || (w.ots?.failed ?? 0) > 0) throw new Error(`warm-up: subjects refused or failed; daemon log: ${daemon.logTail()}`);
      // the goal reached and the daemon idle (auto mode signs the subjects' own events after their batch's)
      if ((w.nostr?.confirmed ?? 0) >= n && (await ots.count()) >= n && (await idle(redis, k, [intakeQueue, ...work], outbox))) {
        const base = { accepted: Object.values(c).reduce((a, b) => a + b, 0), nostr: w.nostr?.confirmed ?? 0, nostrSeq: await batchSeq(redis, k, 'nostr'), otsSeq: await batchSeq(redis, k, 'ots'), events: mode === 'auto' ? await nostrEventCount(redis, k) : 0 };
        const c1 = { daemon: procCpuMs(pid), daemonMain: procMainThreadCpuMs(pid) };
        return { base, cold: { daemon: cpuPerSubject(c0.daemon, c1.daemon, n), daemonMain: cpuPerSubject(c0.daemonMain, c1.daemonMain, n) } };
      }
      await sleep(20);
    }
    throw new Error(`warm-up: not done within ${timeoutMs} ms; daemon log: ${daemon.logTail()}`);
  } finally {
    await Promise.all(work.map((q) => q.close()));
  }
}

/** CPU ms per subject between two readings of a process's CPU (null when either could not be read). */
function cpuPerSubject(before: number | null, after: number | null, subjects: number): number | null {
  return before === null || after === null ? null : (after - before) / subjects;
}

/** A witness's batch counter (0 if a layout keeps it otherwise: the figures then say 0 events). */
async function batchSeq(redis: Redis, k: StateKeys, w: WitnessName): Promise<number> {
  return Number((await redis.get(k.batchSeq(w)).catch(() => null)) ?? 0);
}

/**
 * Whether the daemon has nothing to do but wait: no job waiting or running on the intake, Nostr
 * and OTS queues (an OTS poll scheduled for later does not count), no event in a relay outbox,
 * and no Nostr batch cut over a quarter of a second.
 */
async function idle(redis: Redis, k: StateKeys, queues: readonly Queue[], outbox: RelayOutbox): Promise<boolean> {
  const busy = async (): Promise<boolean> => {
    for (const q of queues) {
      const counts = await q.getJobCounts('waiting', 'active', 'prioritized', 'paused');
      if (Object.values(counts).some((v) => v > 0)) return true;
    }
    return [...(await outbox.sizes()).values()].some((v) => v > 0);
  };
  const seq0 = await redis.get(k.batchSeq('nostr'));
  if (await busy()) return false;
  await sleep(250);
  return !(await busy()) && (await redis.get(k.batchSeq('nostr'))) === seq0;
}

/** Commands only the bench sends while polling; left out of the per-subject counts. */
const BENCH_ONLY_COMMANDS = new Set(['zcard', 'info', 'config|resetstat', 'config']);

export async function daemonRun(o: DaemonRunOptions): Promise<DaemonRunResult> {
  const redisServer = await startRedis();
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  let daemon: DaemonChild | null = null;
  let queue: Queue | null = null;
  try {
    daemon = await startDaemonChild({ redisUrl: redisServer.url, peers: o.peers, mode: o.mode, windowMs: o.windowMs, ratePerMinute: o.ratePerMinute, log: o.log, retention: o.retention }, redis);
    const store = new AnchorStore(redis, BENCH_PREFIX);
    const k = store.keys;
    queue = new Queue(daemon.config.queue.name, { connection: redis, prefix: k.bullPrefix });
    await queue.waitUntilReady();
    const subjects = Array.from({ length: o.n }, subject);
    const intake: IntakeKind = o.intake ?? 'single';
    const perJob = daemon.config.queue.maxSubjectsPerJob;
    const limits = { maxJobBytes: daemon.config.limits.maxJobBytes };
    /** Enqueues `list` as an issuer would (single jobs, or the producer helper's bulk jobs); returns the jobs made. */
    const enqueueAll = async (list: ReadonlyArray<ReturnType<typeof subject>>): Promise<number> => {
      let made = 0;
      if (intake === 'single') {
        for (let i = 0; i < list.length; i += 500) {
          await queue!.addBulk(list.slice(i, i + 500).map(({ data, key }) => ({ name: ANCHOR_JOB, data, opts: { jobId: key, ...ANCHOR_JOB_OPTIONS } })));
          made += Math.min(500, list.length - i);
        }
        return made;
      }
      // the producer helper, as an issuer with many subjects uses it: validated, checked against state, split into jobs of perJob
      const step = perJob * 5;
      for (let i = 0; i < list.length; i += step) {
        const out = await enqueueAnchors(queue!, store.subjects, list.slice(i, i + step).map((x) => x.data), limits, { maxSubjectsPerJob: perJob });
        const refused = out.find((r) => 'error' in r);
        if (refused && 'error' in refused) throw new Error(`enqueueAnchors refused a subject: ${refused.error.code} ${refused.error.message}`);
        made += new Set(out.map((r) => ('job' in r ? r.job : ''))).size;
      }
      return made;
    };
    // what is already in state when the counted burst starts
    let base: InState = { accepted: 0, nostr: 0, nostrSeq: 0, otsSeq: 0, events: 0 };
    let cpuCold: DaemonRunResult['cpuCold'] = null;
    if (o.warmUp) {
      if (o.log) throw new Error('daemonRun: warmUp is not made for the anchor log run');
      ({ base, cold: cpuCold } = await warmUpBurst(o.n, o.timeoutMs, o.mode, daemon, redis, store, queue, enqueueAll));
    }
    const classify = keyClassifier(BENCH_PREFIX, daemon.config.queue.name);
    const keysBefore = (await keySpaceUsage(redis, classify)).kinds;
    const memoryBefore = await memoryFigures(redis);
    const beforeBytes = memoryBefore.used;
    let peakRss = 0;
    const sampleRss = (): number | null => {
      const m = daemon?.memory() ?? null;
      if (m) peakRss = Math.max(peakRss, m.hwm, m.rss);
      return m ? m.rss : null;
    };
    // before the counters start: the wait is nobody's cost
    if (o.calendarRoundMs) await sleep(Math.random() * o.calendarRoundMs);
    const pids = { daemon: daemon.child.pid, redis: redisServer.child.pid, peers: o.peers.pid };
    const cpu0 = { daemon: procCpuMs(pids.daemon), daemonMain: procMainThreadCpuMs(pids.daemon), redis: procCpuMs(pids.redis), peers: procCpuMs(pids.peers), bench: process.cpuUsage() };
    await redis.config('RESETSTAT');
    const redisCpu0 = (await redisInfo(redis)).cpuMs;

    const t0 = performance.now();
    const at = (): number => performance.now() - t0;
    let enqueuedMs = -1;
    let enqueueError: unknown = null;
    let jobs = 0;
    const enqueue = (async () => {
      jobs = await enqueueAll(subjects);
      enqueuedMs = at();
    })().catch((err: unknown) => {
      enqueueError = err;
    });

    let acceptedMs: number | null = null;
    let nostrMs: number | null = null;
    let otsMs: number | null = null;
    let loggedMs: number | null = o.log ? null : 0;
    const logPublished = new LogKeys(k.base).published;
    let done = 0;
    let accepted = 0;
    let polls = 0;
    const progress: Array<[number, number]> = [];
    const ots = new OtsSubmissions(store, subjects.map((x) => x.key));
    const deadline = t0 + o.timeoutMs;
    const maxPolls = Math.ceil(o.timeoutMs / 20) + 10;
    for (let i = 0; i < maxPolls; i++) {
      // the counts the daemon keeps (two HMGETs, subtracted from the command counts below)
      const [c, w, logged] = await Promise.all([store.indexes.countByStatus(), store.indexes.countByWitness(['nostr', 'ots']), o.log ? redis.get(logPublished) : null]);
      const nostrOk = (w.nostr?.confirmed ?? 0) - base.nostr;
      const nostrFailed = w.nostr?.failed ?? 0;
      const otsFailed = w.ots?.failed ?? 0;
      polls++;
      const all = Object.values(c).reduce((a, b) => a + b, 0) - base.accepted;
      const rejected = c.rejected ?? 0;
      const submitted = await ots.count();
      const now = at();
      accepted = all!;
      if (acceptedMs === null && all! >= o.n) acceptedMs = now;
      if (nostrMs === null && nostrOk! >= o.n) nostrMs = now;
      if (otsMs === null && submitted >= o.n) otsMs = now;
      if (loggedMs === null && Number(logged ?? 0) >= o.n) loggedMs = now;
      done = Math.min(nostrOk!, submitted);
      progress.push([now, accepted]);
      if (rejected! > 0 || nostrFailed! > 0 || otsFailed! > 0) {
        throw new Error(`subjects refused or failed: rejected ${rejected}, nostr failed ${nostrFailed}, ots failed ${otsFailed}; daemon log: ${daemon.logTail()}`);
      }
      if (enqueueError) throw enqueueError;
      if (nostrMs !== null && otsMs !== null && loggedMs !== null) break;
      if (performance.now() > deadline) break;
      if (i % 5 === 0) sampleRss();
      await sleep(20);
    }
    const wallMs = at();
    const loadNow = load();
    const finished = nostrMs !== null && otsMs !== null && loggedMs !== null;
    const rssPending = sampleRss();
    const cpu1 = { daemon: procCpuMs(pids.daemon), daemonMain: procMainThreadCpuMs(pids.daemon), redis: procCpuMs(pids.redis), peers: procCpuMs(pids.peers), bench: process.cpuUsage(cpu0.bench) };
    const stats = await commandStats(redis);
    const redisCpu1 = (await redisInfo(redis)).cpuMs;
    const memoryPending = await memoryFigures(redis);
    const pendingBytes = memoryPending.used;
    if (!finished) {
      // stop producing: the rest of the run's figures describe what got in
      await queue.pause().catch(() => undefined);
    }
    await enqueue;
    const nostrEvents = (await batchSeq(redis, k, 'nostr')) - base.nostrSeq;
    const otsBatches = (await batchSeq(redis, k, 'ots')) - base.otsSeq;
    const counted = Math.max(1, finished ? o.n : done);
    const perSubjectCpu = (a: number | null, b: number | null): number | null => cpuPerSubject(a, b, counted);
    const cpu: CpuPerSubject = {
      daemon: perSubjectCpu(cpu0.daemon, cpu1.daemon),
      daemonMain: perSubjectCpu(cpu0.daemonMain, cpu1.daemonMain),
      redis: perSubjectCpu(cpu0.redis, cpu1.redis),
      peers: perSubjectCpu(cpu0.peers, cpu1.peers),
      bench: (cpu1.bench.user + cpu1.bench.system) / 1000 / counted,
    };
    const own: Record<string, number> = { hget: ots.hgets, lrange: ots.lranges, hmget: ots.hmgets + 2 * polls, ...(o.log ? { get: polls } : {}) };
    const cmds = [...stats]
      .filter(([name]) => !BENCH_ONLY_COMMANDS.has(name))
      .map(([name, v]): [string, { calls: number; usec: number }] => [name, { calls: Math.max(0, v.calls - (own[name] ?? 0)), usec: v.usec }]);
    const share = ([command, v]: [string, { calls: number; usec: number }]): CommandShare => ({ command, callsPerSubject: v.calls / counted, usecPerSubject: v.usec / counted });
    const redisCommands = {
      callsPerSubject: cmds.reduce((a, [, v]) => a + v.calls, 0) / counted,
      usecPerSubject: cmds.reduce((a, [, v]) => a + v.usec, 0) / counted,
      top: [...cmds].sort((a, b) => b[1].usec - a[1].usec).slice(0, 6).map(share),
      byCalls: [...cmds].sort((a, b) => b[1].calls - a[1].calls).slice(0, 8).map(share),
    };

    let confirmMs: number | null = null;
    let confirmedBytes: number | null = null;
    let confirmed = 0;
    if (finished && o.confirm) {
      const c0 = performance.now();
      await mineAll(o.peers.calendars);
      const cDeadline = Math.min(c0 + o.confirmTimeoutMs, o.confirmBy ?? Infinity);
      for (let i = 0; i < Math.ceil(o.confirmTimeoutMs / 50) + 10; i++) {
        confirmed = (await store.indexes.countByStatus()).confirmed ?? 0;
        if (confirmed >= o.n) {
          confirmMs = performance.now() - c0;
          break;
        }
        if (performance.now() > cDeadline) break;
        if (i % 5 === 0) sampleRss();
        await sleep(50);
      }
      if (confirmMs !== null && !o.retention) {
        // let the last upgrade jobs and the events stream settle before reading memory
        await sleep(200);
        confirmedBytes = await usedMemory(redis);
      }
    }
    let retiredBytes: number | null = null;
    let retireMs: number | null = null;
    let retiredStats: DaemonRunResult['memory']['retiredStats'] = null;
    if (confirmMs !== null && o.retention) {
      // confirmed subjects leave idx:st:confirmed as they are retired; `retired` counts them
      const r0 = performance.now();
      for (let i = 0; i < Math.ceil(o.confirmTimeoutMs / 50) + 10 && performance.now() - r0 < o.confirmTimeoutMs; i++) {
        if (Number((await redis.hget(k.meta, 'retired')) ?? 0) >= o.n) {
          retireMs = performance.now() - r0;
          break;
        }
        await sleep(50);
      }
      if (retireMs !== null) {
        // the pass that emptied the last batches drops their key lists; let it end
        await sleep(600);
        retiredBytes = await usedMemory(redis);
        retiredStats = await memoryStats(redis);
      }
    }
    sampleRss();
    const breakdown = await memoryBreakdown(redis, store, classify, keysBefore, Math.max(1, accepted), memoryBefore).catch((err: unknown) => {
      process.stderr.write(`bench: memory breakdown not taken: ${(err as Error).message}\n`);
      return null;
    });

    const log = o.log ? { loggedMs, ...(await checkpointLatency(store, logDir(daemon.config), subjects.map((x) => x.key))) } : null;
    let proofs: ProofExport | null = null;
    if (finished && o.exportProofs) proofs = await exportProofs(redis, daemon, subjects.map((s) => s.key), o.peers, confirmMs !== null);

    return {
      mode: o.mode,
      n: o.n,
      intake,
      jobs,
      windows: { nostr: daemon.config.nostr.batchWindowMs, ots: daemon.config.ots.batchWindowMs },
      finished,
      done,
      accepted,
      enqueuedMs: enqueuedMs >= 0 ? enqueuedMs : wallMs,
      acceptedMs,
      nostrMs,
      otsMs,
      wallMs,
      subjectsPerS: (finished ? o.n : done) / (wallMs / 1000),
      intakePerTenth: intakePerTenth(progress, o.n),
      nostrEvents: o.mode === 'batch' ? nostrEvents : o.mode === 'envelope' ? o.n : (await nostrEventCount(redis, k)) - base.events,
      otsBatches,
      memory: {
        beforeBytes,
        pendingBytes,
        perPendingSubject: (pendingBytes - beforeBytes) / Math.max(1, accepted),
        perPendingSubjectHeld: (memoryPending.held - memoryBefore.held) / Math.max(1, accepted),
        perPendingSubjectKept: (memoryPending.held - memoryPending.capped - (memoryBefore.held - memoryBefore.capped)) / Math.max(1, accepted),
        confirmedBytes,
        perConfirmedSubject: confirmedBytes === null ? null : (confirmedBytes - beforeBytes) / o.n,
        retiredBytes,
        perRetiredSubject: retiredBytes === null ? null : (retiredBytes - beforeBytes) / o.n,
        retireMs,
        retiredStats,
        breakdown,
      },
      daemonRssPendingBytes: rssPending,
      daemonPeakRssBytes: peakRss || null,
      cpu,
      cpuCold,
      redisInfoCpuMs: (redisCpu1 - redisCpu0) / counted,
      redisCommands,
      confirmMs,
      confirmed,
      proofs,
      load: loadNow,
      log,
    };
  } finally {
    await queue?.close().catch(() => undefined);
    await daemon?.stop();
    await redis.quit().catch(() => undefined);
    await redisServer.stop();
  }
}

/**
 * Each logged subject's wait from acceptance to the first checkpoint covering it: its index
 * from the log's index in Redis, its acceptance time from its record, the checkpoint's time
 * from the mtime of its kept note (`checkpoints/<size>`, written as it was signed).
 */
async function checkpointLatency(store: AnchorStore, dir: string, keys: readonly string[]): Promise<Omit<LogFigures, 'loggedMs'>> {
  const history = new CheckpointHistory(dir);
  const signedAt = new Map(history.sizesAfter(-1, 10_000_000).map((size) => [size, statSync(join(dir, CHECKPOINTS_DIR, String(size))).mtimeMs]));
  const logKeys = new LogKeys(store.keys.base);
  const waits: number[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const chunk = keys.slice(i, i + 1000);
    const [records, idx] = await Promise.all([store.subjects.getRecords(chunk), store.redis.hmget(logKeys.index, ...chunk)]);
    records.forEach((r, j) => {
      const index = idx[j] === null || idx[j] === undefined ? -1 : Number(idx[j]);
      // the first kept size above the index
      const covering = index >= 0 ? history.sizesAfter(index, 1)[0] : undefined;
      if (r && covering !== undefined) waits.push(signedAt.get(covering)! - r.createdMs);
    });
  }
  waits.sort((a, b) => a - b);
  const at = (q: number): number => Math.round(waits[Math.min(waits.length - 1, Math.ceil(q * waits.length) - 1)]!);
  return { checkpoints: signedAt.size, latencyMs: waits.length === 0 ? null : { p50: at(0.5), p95: at(0.95), max: at(1) } };
}

/** Subjects accepted per second over each tenth of n that was reached. */
function intakePerTenth(progress: ReadonlyArray<[number, number]>, n: number): number[] {
  if (n < 100) return [];
  const timeAt = (count: number): number | null => progress.find(([, a]) => a >= count)?.[0] ?? null;
  const out: number[] = [];
  let t0 = 0;
  for (let i = 1; i <= 10; i++) {
    const t1 = timeAt((n * i) / 10);
    if (t1 === null) break;
    out.push(t1 > t0 ? n / 10 / ((t1 - t0) / 1000) : NaN);
    t0 = t1;
  }
  return out;
}

/** Auto mode: the signed events in state (one per subject of a cut decided envelope, one per batch otherwise). */
async function nostrEventCount(redis: Redis, k: AnchorStore['keys']): Promise<number> {
  let n = 0;
  let cursor = '0';
  for (let i = 0; i < 10_000; i++) {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${k.base}:ev:*`, 'COUNT', 1000);
    n += batch.length;
    cursor = next;
    if (cursor === '0') break;
  }
  return n;
}

/**
 * Where the Redis memory went, per subject accepted: every key classified by kind
 * (bench/memory.ts) and MEMORY USAGE summed per kind, less what the same kinds held before
 * the run; the script cache's growth (INFO used_memory_scripts) and the clients' buffers'
 * (CLIENT LIST tot-mem, memoryFigures) are rows of their own; "outside keys" is the used_memory delta (read
 * just before the listing) less the keys', the scripts' and the clients'. Plus the
 * state-change stream's length and the history entries per subject, where the layout has them.
 */
async function memoryBreakdown(redis: Redis, store: AnchorStore, classify: (name: string) => string, before: Map<string, KindUsage>, subjects: number, memoryBefore: MemoryFigures): Promise<MemoryBreakdown> {
  const k = store.keys;
  const now = await memoryFigures(redis);
  const deltaBytes = now.used - memoryBefore.used;
  const scriptBytes = now.scripts - memoryBefore.scripts;
  const clientBytes = now.clients - memoryBefore.clients;
  const { kinds, truncated } = await keySpaceUsage(redis, classify);
  // looked up by name, so a layout without a per-prefix stream or per-subject history lists still runs
  const named = k as unknown as { events?: unknown; history?: unknown };
  const streamEntries = typeof named.events === 'string' ? await redis.xlen(named.events).catch(() => null) : null;
  let historyEntries: number | null = null;
  try {
    let sample: string[] = [];
    for (const st of ['confirmed', 'partial', 'pending']) if (sample.length === 0) sample = (await redis.call('ZRANDMEMBER', k.byStatus(st), '50')) as string[];
    const history = typeof named.history === 'function' ? (named.history as (key: string) => string).bind(k) : null;
    const lens = history ? await Promise.all(sample.map((s) => redis.llen(history(s)))) : [];
    if (lens.length > 0) historyEntries = lens.reduce((a, b) => a + b, 0) / lens.length;
  } catch {
    // histories are not lists in this layout
  }
  return { ...breakdownOf(before, kinds, subjects, deltaBytes, scriptBytes, clientBytes), streamEntries, historyEntries, truncated };
}

async function exportProofs(redis: Redis, daemon: DaemonChild, keys: readonly string[], peers: PeersInfo, confirmed: boolean): Promise<ProofExport> {
  const dir = tempDir('proofs');
  const sources = { relays: daemon.config.nostr.relays, calendars: daemon.config.ots.calendars };
  // ProofExporter as it is, on a small sample: its cost per proof grows with the batch size
  const plain = new ProofExporter(new AnchorStore(redis, BENCH_PREFIX), sources);
  const sampleN = Math.min(200, keys.length);
  const p0 = performance.now();
  for (const key of keys.slice(0, sampleN)) await plain.export(key);
  const plainMs = performance.now() - p0;

  const exporter = new ProofExporter(new BatchCachingStore(redis, BENCH_PREFIX), sources);
  const events = new Set<string>();
  const t0 = performance.now();
  let i = 0;
  for (const key of keys) {
    const proof = await exporter.export(key);
    if (!proof) throw new Error(`no proof for subject ${key}`);
    if (proof.nostr?.event) events.add(proof.nostr.event.id);
    writeFileSync(join(dir, `${String(i++).padStart(6, '0')}.json`), JSON.stringify(proof));
  }
  return {
    dir,
    files: keys.length,
    exportMs: performance.now() - t0,
    plainSample: { n: sampleN, ms: plainMs },
    confirmed,
    headersFile: peers.headersFile,
    distinctEvents: events.size,
  };
}
