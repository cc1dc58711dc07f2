/**
 * `npm run bench [-- --json] [--quick]`: throughput, cost growth, the batching advantage
 * and verification speed, measured side by side on loopback — a private redis-server per
 * run, three dev relays and two dev calendars in a child of their own, `aer1-anchord` as
 * a child. Reports; never asserts. Bounded: the full run stays under 5 minutes, `--quick`
 * under 1; when the budget runs short, repeats are skipped and the largest run stops
 * where it got to, and the output says so.
 */
import { parseArgs } from 'node:util';
import { daemonRun, type DaemonRunOptions, type DaemonRunResult } from './daemon-run.js';
import { naiveRun, type NaiveResult } from './naive.js';
import { killAllTracked, removeTempDir, startPeers, type Peers } from './processes.js';
import { figure, load, machine, median, round, table, type Figure } from './report.js';
import { firstProof, verifyDir, verifyOneCold } from './verify-run.js';
import { intakeRun, type IntakeRunResult } from './intake-run.js';

/** Subjects per bulk job in the intake comparison (queue.maxSubjectsPerJob's default). */
const BULK_PER_JOB = 1000;

const USAGE = `usage: npm run bench [-- [--json] [--quick] [--intake-only] [--intake-large] [--round-ms MS] [--window-ms MS] [--naive-concurrency N]]
  --json               one JSON object per figure on stdout, nothing else (progress and the table go
                       to stderr; run it as \`npm run --silent bench -- --json\`, or npm prints its banner first)
  --quick              smaller N and a 45 s budget (under a minute with the build), for development
  --intake-only        only the intake comparison: single-subject jobs against bulk jobs
  --intake-large       that comparison at N = 100,000 rather than 10,000 (about a minute more)
  --round-ms MS        dev calendars' aggregation round (default 1000, as the real server)
  --window-ms MS       the daemon's batch window, Nostr and OTS (default 250)
  --naive-concurrency  subjects in flight in the naive baseline (default 32)`;

interface Plan {
  label: 'full' | 'quick';
  budgetMs: number;
  /** Batch-mode throughput N; also a cost-growth point and the verification set. */
  batchN: number;
  envelopeN: number;
  naiveN: number;
  /** Cost-growth sizes (batchN among them); the largest runs last, with what budget is left. */
  growth: number[];
  coldStarts: number;
  /** Subjects in the intake comparison (single-subject jobs against bulk jobs). */
  intakeN: number;
}

// budgets leave room for the `tsc` build `npm run bench` runs first (about 15 s of CPU)
const FULL: Plan = { label: 'full', budgetMs: 265_000, batchN: 10_000, envelopeN: 1_000, naiveN: 1_000, growth: [1_000, 10_000, 100_000], coldStarts: 5, intakeN: 10_000 };
const QUICK: Plan = { label: 'quick', budgetMs: 45_000, batchN: 1_000, envelopeN: 200, naiveN: 100, growth: [200, 1_000, 2_000], coldStarts: 3, intakeN: 2_000 };
/** A run shorter than this is repeated up to 3 times, budget permitting. */
const SHORT_MS = 10_000;
const MB = 1024 * 1024;

function progress(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

function intFlag(v: string | undefined, fallback: number, name: string, min: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

const fmtN = (n: number): string => n.toLocaleString('en-US');
const sec = (ms: number | null): string => (ms === null || !Number.isFinite(ms) ? '—' : `${(ms / 1000).toFixed(1)} s`);
const ms1 = (x: number | null): string => (x === null ? '?' : x.toFixed(2));

class Budget {
  private readonly start = performance.now();
  constructor(readonly totalMs: number) {}
  elapsed(): number {
    return performance.now() - this.start;
  }
  remaining(): number {
    return this.totalMs - this.elapsed();
  }
}

interface Timed<T> {
  result: T;
  /** Including setup and teardown (a fresh Redis and daemon per run). */
  totalMs: number;
}

async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  const t0 = performance.now();
  const result = await fn();
  return { result, totalMs: performance.now() - t0 };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    allowPositionals: false,
    options: {
      json: { type: 'boolean' },
      quick: { type: 'boolean' },
      'round-ms': { type: 'string' },
      'window-ms': { type: 'string' },
      'naive-concurrency': { type: 'string' },
      'intake-only': { type: 'boolean' },
      'intake-large': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const plan = { ...(values.quick ? QUICK : FULL) };
  if (values['intake-large']) plan.intakeN = 100_000;
  const roundMs = intFlag(values['round-ms'], 1000, 'round-ms', 0);
  const windowMs = intFlag(values['window-ms'], 250, 'window-ms', 10);
  const naiveConcurrency = intFlag(values['naive-concurrency'], 32, 'naive-concurrency', 1);
  // the config schema caps nostr.ratePerMinute at 100,000 (about 1,667 events/s per relay)
  const ratePerMinute = 100_000;
  const budget = new Budget(plan.budgetMs);
  const mc = machine();
  const loadAtStart = load();
  progress(`${plan.label} run on ${mc.cores} cores (${mc.cpu}), Node ${mc.node}, load average ${loadAtStart.join(' ')}; budget ${sec(plan.budgetMs)}`);

  const peers: Peers = await startPeers({ roundMs });
  progress(`peers: ${peers.relays.length} relays, ${peers.calendars.length} calendars (round ${roundMs} ms) in pid ${peers.pid}`);
  const proofDirs: string[] = [];
  try {
    if (values['intake-only']) {
      const figures = await intakeFigures(plan.intakeN, peers, 600_000);
      const lines = [`aer1-anchor bench, intake only — ${new Date().toISOString()}`, `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}`, '', table(figures)];
      emit(figures, lines, values.json === true);
      return 0;
    }
    const base = { peers, windowMs, ratePerMinute, confirmTimeoutMs: 60_000 };
    /** Generous for a run of n at `perSecond`, never past the budget. */
    const limit = (n: number, perSecond: number, reserveMs = 0): number =>
      Math.max(10_000, Math.min(budget.remaining() - reserveMs - 8_000, (n / perSecond) * 1000 * 3 + 10_000));
    const batch = (n: number, extra: Partial<DaemonRunOptions> = {}): Promise<DaemonRunResult> =>
      daemonRun({ ...base, mode: 'batch', n, timeoutMs: limit(n, 100), confirm: false, exportProofs: false, ...extra });
    const largest = Math.max(...plan.growth);
    const smaller = plan.growth.filter((n) => n !== plan.batchN && n !== largest).sort((a, b) => a - b);
    // time kept for the naive baseline, which runs after the largest size
    const naiveReserve = plan.label === 'quick' ? 9_000 : 35_000;

    /** Waiting for Bitcoin confirmation never eats into what later steps need. */
    const laterSteps = plan.label === 'quick' ? 8_000 : 30_000;
    const confirmBy = (): number => performance.now() + Math.max(5_000, budget.remaining() - naiveReserve - laterSteps);

    // 1. Batch mode at batchN, with Bitcoin confirmation and the proofs for verification;
    //    on a very slow machine it stops at 40% of the budget and says how far it got.
    const mainTimeout = Math.min(limit(plan.batchN, 100, naiveReserve), plan.budgetMs * 0.4);
    const batchRuns: Timed<DaemonRunResult>[] = [await timed(() => batch(plan.batchN, { timeoutMs: mainTimeout, confirm: true, confirmBy: confirmBy(), exportProofs: true }))];
    describeRun(batchRuns[0]!);
    const proofs = batchRuns[0]!.result.proofs;
    if (proofs) proofDirs.push(proofs.dir);

    // 2. Envelope mode, against the same peers.
    const envelope = (): Promise<DaemonRunResult> =>
      daemonRun({ ...base, mode: 'envelope', n: plan.envelopeN, timeoutMs: limit(plan.envelopeN, 20, naiveReserve), confirm: false, exportProofs: false });
    const envRuns: Timed<DaemonRunResult>[] = [await timed(envelope)];
    describeRun(envRuns[0]!);

    // 2b. Auto mode (the default), same N: Redis commands per subject as the mode decides per cut.
    const autoRun = await timed(() => daemonRun({ ...base, mode: 'auto', n: plan.envelopeN, timeoutMs: limit(plan.envelopeN, 20, naiveReserve), confirm: false, exportProofs: false }));
    describeRun(autoRun);

    // 3. Cost growth, the smaller sizes.
    const growthRuns = new Map<number, Timed<DaemonRunResult>[]>([[plan.batchN, batchRuns]]);
    for (const n of smaller) {
      const run = await timed(() => batch(n, { confirm: true, confirmBy: confirmBy(), timeoutMs: limit(n, 100, naiveReserve) }));
      describeRun(run);
      growthRuns.set(n, [run]);
    }

    // 3b. Intake alone: single-subject jobs against bulk jobs, side by side.
    const intake = await intakeFigures(plan.intakeN, peers, Math.max(20_000, Math.min(120_000, budget.remaining() - naiveReserve - 60_000)));

    // 4. Verification of the batch-mode proofs, and single-proof cold starts.
    const verifyFigures: Figure[] = [];
    if (proofs) {
      const headers = proofs.confirmed ? proofs.headersFile : null;
      const v = await verifyDir(proofs.dir, headers, Math.max(20_000, budget.remaining() - 10_000));
      progress(`verify --dir: ${fmtN(v.files)} proofs in ${sec(v.wallMs)}: ${v.summary}`);
      const file = firstProof(proofs.dir);
      const cold: number[] = [];
      for (let i = 0; i < plan.coldStarts; i++) cold.push(await verifyOneCold(file, headers, 30_000));
      progress(`verify one proof, cold: ${cold.map((ms) => Math.round(ms)).join(', ')} ms`);
      const what = `${proofs.confirmed ? 'Bitcoin-confirmed (regtest headers file)' : 'OTS pending'}; ${fmtN(proofs.files)} proofs share ${proofs.distinctEvents} batch events; one process, its start included`;
      verifyFigures.push(
        figure('verify --dir, batch-mode proofs', 'proofs/s', [v.proofsPerS], { n: v.files, target: { op: '>=', bound: 2000 }, note: what, load: v.load }),
        figure('verify one proof, cold start', 's', cold.map((ms) => ms / 1000), { n: 1, target: { op: '<=', bound: 0.5 }, digits: 3, note: 'a new node process per proof', load: v.load }),
        figure('proof export, batches cached (bench)', 'proofs/s', [proofs.files / (proofs.exportMs / 1000)], {
          n: proofs.files,
          note: 'ProofExporter over an AnchorStore that caches batch hashes; files written',
        }),
      );
      if (proofs.plainSample) {
        verifyFigures.push(
          figure('proof export, ProofExporter as is', 'proofs/s', [proofs.plainSample.n / (proofs.plainSample.ms / 1000)], {
            n: proofs.plainSample.n,
            note: `reads the whole batch hash (every digest) per proof: cost grows with batch size (~${fmtN(Math.round(proofs.files / Math.max(1, proofs.distinctEvents)))} per batch here)`,
          }),
        );
      }
      removeTempDir(proofs.dir);
      proofDirs.length = 0;
    }

    // 5. The largest size, once, with what is left but the naive baseline's share; it stops
    //    where it got to when its time runs out.
    if (largest !== plan.batchN) {
      const timeoutMs = Math.max(10_000, budget.remaining() - naiveReserve - 12_000);
      progress(`batch N=${fmtN(largest)}: ${sec(timeoutMs)} left for it`);
      const confirmBy = performance.now() + budget.remaining() - naiveReserve - 8_000;
      const run = await timed(() => batch(largest, { timeoutMs, confirm: true, confirmBy }));
      describeRun(run);
      growthRuns.set(largest, [run]);
    }

    // 6. The naive baseline, against the same peers (rate = done / time when time-limited).
    const naive = (): Promise<NaiveResult> =>
      naiveRun({ n: plan.naiveN, peers, concurrency: naiveConcurrency, timeoutMs: Math.max(15_000, Math.min(limit(plan.naiveN, 10), budget.remaining() - 6_000)) });
    const naiveRuns: Timed<NaiveResult>[] = [await timed(naive)];
    describeNaive(naiveRuns[0]!);

    // 7. Repeats of short runs, for medians of three, while the budget lasts.
    const skipped: string[] = [];
    const repeat = async <T>(label: string, runs: Timed<T>[], wallOf: (r: T) => number, again: () => Promise<T>, describe: (t: Timed<T>) => void): Promise<void> => {
      while (runs.length < 3) {
        const last = runs[runs.length - 1]!;
        if (wallOf(last.result) >= SHORT_MS) return;
        if (last.totalMs * 1.3 + 2_000 > budget.remaining()) {
          skipped.push(`${label}: ${runs.length} run${runs.length > 1 ? 's' : ''}`);
          return;
        }
        const t = await timed(again);
        describe(t);
        runs.push(t);
      }
    };
    for (const n of smaller) await repeat(`batch N=${fmtN(n)}`, growthRuns.get(n)!, (r) => r.wallMs, () => batch(n), describeRun);
    await repeat(`batch N=${fmtN(plan.batchN)}`, batchRuns, (r) => r.wallMs, () => batch(plan.batchN), describeRun);
    await repeat(`envelope N=${fmtN(plan.envelopeN)}`, envRuns, (r) => r.wallMs, envelope, describeRun);
    await repeat(`naive N=${fmtN(plan.naiveN)}`, naiveRuns, (r) => r.wallMs, naive, describeNaive);

    const figures = [
      ...throughputFigures(plan, peers, roundMs, naiveConcurrency, batchRuns, envRuns, naiveRuns, autoRun.result),
      ...growthFigures([...plan.growth].sort((a, b) => a - b), growthRuns),
      ...intake,
      ...verifyFigures,
    ];
    const loadAtEnd = load();
    const elapsed = budget.elapsed();
    const lines = [
      `aer1-anchor bench (${plan.label}${plan.label === 'quick' ? ': smaller N than the full run' : ''}) — ${new Date().toISOString()}`,
      `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}, at end ${loadAtEnd.join(' ')}`,
      `setup: private redis-server (no AOF) per run; ${peers.relays.length} dev relays + ${peers.calendars.length} dev calendars (round ${roundMs} ms) in one child process; aer1-anchord as a child; batch window ${windowMs} ms; nostr.ratePerMinute ${fmtN(ratePerMinute)}`,
      '',
      table(figures),
      '',
      skipped.length ? `repeats skipped to stay in the time budget (runs shorter than 10 s should be 3): ${skipped.join('; ')}` : 'every run shorter than 10 s was repeated to 3 runs (median shown)',
      `total ${sec(elapsed)}`,
    ];
    emit(figures, lines, values.json === true);
    progress(`done in ${sec(elapsed)}; load average ${loadAtEnd.join(' ')}`);
    return 0;
  } finally {
    await peers.stop();
    for (const d of proofDirs) removeTempDir(d);
  }
}

/** Figures for tools on stdout (one JSON object a line, nothing else) and the table on stderr; or the table on stdout. */
function emit(figures: Figure[], lines: string[], json: boolean): void {
  if (json) {
    for (const f of figures) process.stdout.write(`${JSON.stringify(f)}\n`);
    process.stderr.write(`${lines.join('\n')}\n`);
  } else {
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

/**
 * Intake alone, at N: one subject per job against bulk jobs of BULK_PER_JOB. Redis commands
 * per subject from INFO commandstats deltas (enqueue and intake phases), and intake
 * throughput from a full queue, side by side.
 */
async function intakeFigures(n: number, peers: Peers, timeoutMs: number): Promise<Figure[]> {
  const runs: Record<'single' | 'bulk', IntakeRunResult> = {
    single: await intakeRun({ n, perJob: 1, peers, timeoutMs }),
    bulk: await intakeRun({ n, perJob: BULK_PER_JOB, peers, timeoutMs }),
  };
  const out: Figure[] = [];
  const label = { single: 'single-subject jobs', bulk: `bulk jobs of ${fmtN(BULK_PER_JOB)}` };
  const top = (c: IntakeRunResult['intake']): string => c.top.slice(0, 5).map((t) => `${t.command} ${t.callsPerSubject.toFixed(2)}`).join(', ');
  for (const mode of ['single', 'bulk'] as const) {
    const r = runs[mode];
    const partial = r.finished ? '' : `; DID NOT FINISH: ${fmtN(r.accepted)} of ${fmtN(r.n)} accepted in ${sec(r.intakeMs)}`;
    progress(`intake, ${label[mode]}, N=${fmtN(n)}: ${Math.round(r.subjectsPerS)} subjects/s (enqueue ${sec(r.enqueueMs)}, intake ${sec(r.intakeMs)}); Redis calls/subject: enqueue ${r.enqueue.callsPerSubject.toFixed(2)}, intake ${r.intake.callsPerSubject.toFixed(2)}${partial}`);
    out.push(
      figure(`intake, ${label[mode]}: Redis commands per subject`, 'calls', [r.enqueue.callsPerSubject + r.intake.callsPerSubject], {
        n,
        load: r.load,
        digits: 2,
        note: `INFO commandstats deltas, scripts' inner commands included: enqueue ${r.enqueue.callsPerSubject.toFixed(2)} (${top(r.enqueue)}), intake ${r.intake.callsPerSubject.toFixed(2)} (${top(r.intake)})${partial}`,
      }),
      figure(`intake throughput, ${label[mode]}`, 'subjects/s', [r.subjectsPerS], {
        n,
        load: r.load,
        note: `queue full (enqueued in ${sec(r.enqueueMs)} with the queue paused) → every subject accepted in state, batchers held back; aer1-anchord child, private redis-server${partial}`,
      }),
    );
  }
  out.push(
    figure('intake throughput, bulk / single', '×', runs.single.subjectsPerS > 0 ? [runs.bulk.subjectsPerS / runs.single.subjectsPerS] : [], { n, digits: 2, note: 'same N, same machine, run one after the other' }),
    figure('intake Redis commands, single / bulk', '×', [(runs.single.enqueue.callsPerSubject + runs.single.intake.callsPerSubject) / Math.max(1e-9, runs.bulk.enqueue.callsPerSubject + runs.bulk.intake.callsPerSubject)], { n, digits: 2 }),
  );
  return out;
}

function throughputFigures(
  plan: Plan,
  peers: Peers,
  roundMs: number,
  naiveConcurrency: number,
  batchRuns: Timed<DaemonRunResult>[],
  envRuns: Timed<DaemonRunResult>[],
  naiveRuns: Timed<NaiveResult>[],
  auto: DaemonRunResult,
): Figure[] {
  const rates = (runs: Timed<DaemonRunResult>[]): number[] => runs.filter((r) => r.result.finished).map((r) => r.result.subjectsPerS);
  const naiveRates = naiveRuns.map((r) => r.result.subjectsPerS).filter((x) => x > 0);
  const batchRate = median(rates(batchRuns));
  const envRate = median(rates(envRuns));
  const naiveRate = median(naiveRates);
  const b0 = batchRuns[0]!.result;
  const e0 = envRuns[0]!.result;
  const n0 = naiveRuns[0]!.result;
  const relays = peers.relays.length;
  const cals = peers.calendars.length;
  const unfinished = (r: DaemonRunResult): string => (r.finished ? '' : `; DID NOT FINISH: ${fmtN(r.done)} of ${fmtN(r.n)} in ${sec(r.wallMs)}`);
  const naiveNote = n0.finished ? '' : `; time-limited: ${fmtN(n0.done)} of ${fmtN(n0.n)} done in ${sec(n0.wallMs)}, rate = done / time`;
  const out: Figure[] = [
    figure('throughput, batch mode', 'subjects/s', rates(batchRuns), {
      n: plan.batchN,
      load: b0.load,
      target: { op: '>=', bound: 2000 },
      note: `enqueue → accepted by all ${relays} relays and held by ${cals}/${cals} calendars; ${b0.nostrEvents} events, ${b0.otsBatches} calendar submissions; run 1: enqueued ${sec(b0.enqueuedMs)}, accepted ${sec(b0.acceptedMs)}, Nostr ${sec(b0.nostrMs)}, OTS ${sec(b0.otsMs)}${unfinished(b0)}`,
    }),
    figure('throughput, envelope mode', 'subjects/s', rates(envRuns), {
      n: plan.envelopeN,
      load: e0.load,
      note: `one signed event per subject (${fmtN(plan.envelopeN * relays)} publishes); run 1: accepted ${sec(e0.acceptedMs)}, Nostr ${sec(e0.nostrMs)}, OTS ${sec(e0.otsMs)}${plan.envelopeN !== plan.batchN ? `; measured at N=${fmtN(plan.envelopeN)}, not ${fmtN(plan.batchN)}, to stay in the time budget` : ''}${unfinished(e0)}`,
    }),
    figure('throughput, naive collector', 'subjects/s', naiveRates, {
      n: plan.naiveN,
      load: n0.load,
      note: `one event (to ${relays} relays) + one submission (to ${cals} calendars) per subject, ${naiveConcurrency} in flight, calendar round ${roundMs} ms; median per subject: Nostr ${Math.round(n0.medianNostrMs)} ms, calendars ${Math.round(n0.medianOtsMs)} ms${plan.naiveN !== plan.batchN ? `; measured at N=${fmtN(plan.naiveN)}, not ${fmtN(plan.batchN)}` : ''}${naiveNote}`,
    }),
    figure('ratio batch / naive', '×', batchRate !== null && naiveRate ? [batchRate / naiveRate] : [], {
      n: plan.batchN,
      target: { op: '>=', bound: 50 },
      note: plan.naiveN !== plan.batchN ? `of throughputs measured at different N (batch ${fmtN(plan.batchN)}, naive ${fmtN(plan.naiveN)})` : 'both at the same N',
    }),
    figure('ratio envelope / naive', '×', envRate !== null && naiveRate ? [envRate / naiveRate] : [], {
      n: plan.envelopeN,
      note: plan.envelopeN !== plan.naiveN ? `of throughputs measured at different N (envelope ${fmtN(plan.envelopeN)}, naive ${fmtN(plan.naiveN)})` : `both at N=${fmtN(plan.naiveN)}`,
    }),
  ];
  out.push(
    figure('auto mode: Redis commands per subject', 'calls', [auto.redisCommands.callsPerSubject], {
      n: auto.n,
      load: auto.load,
      note: `${fmtN(auto.nostrEvents)} signed events for ${fmtN(auto.n)} subjects (auto decides per cut); most: ${auto.redisCommands.top
        .slice(0, 4)
        .map((t) => `${t.command} ${t.callsPerSubject.toFixed(1)}×`)
        .join(', ')}${unfinished(auto)}`,
    }),
  );
  for (const [label, r] of [['batch', b0], ['envelope', e0]] as const) {
    const c = r.cpu;
    const total = (c.daemon ?? 0) + (c.redis ?? 0) + (c.peers ?? 0) + c.bench;
    const cores = machine().cores;
    out.push(
      figure(`${label} mode: CPU per subject`, 'ms', [total], {
        n: r.n,
        load: r.load,
        digits: 3,
        note: `daemon ${ms1(c.daemon)}, redis-server ${ms1(c.redis)}, relays+calendars ${ms1(c.peers)}, load generator ${ms1(c.bench)} (run 1)`,
      }),
      figure(`${label} mode: CPU-bound ceiling on ${cores} idle cores`, 'subjects/s', total > 0 ? [(cores * 1000) / total] : [], {
        n: r.n,
        load: r.load,
        note: `derived: ${cores} cores × 1000 ms / CPU ms per subject — what these processes could do with the machine to themselves`,
      }),
      figure(`${label} mode: Redis commands per subject`, 'calls', [r.redisCommands.callsPerSubject], {
        n: r.n,
        load: r.load,
        note: `${Math.round(r.redisCommands.usecPerSubject)} µs of Redis time per subject; most: ${r.redisCommands.top
          .slice(0, 4)
          .map((t) => `${t.command} ${t.callsPerSubject.toFixed(1)}× ${Math.round(t.usecPerSubject)} µs`)
          .join(', ')}`,
      }),
    );
  }
  return out;
}

function growthFigures(sizes: number[], runs: Map<number, Timed<DaemonRunResult>[]>): Figure[] {
  const out: Figure[] = [];
  for (const n of sizes) {
    const all = runs.get(n);
    if (!all?.length) continue;
    const r0 = all[0]!.result;
    const fin = all.filter((r) => r.result.finished);
    const partial = r0.finished ? '' : ` (stopped at the time limit: ${fmtN(r0.done)} of ${fmtN(n)} done, ${fmtN(r0.accepted)} accepted in ${sec(r0.wallMs)})`;
    const label = `batch N=${fmtN(n)}`;
    out.push(
      figure(`${label}: wall time`, 's', fin.map((r) => r.result.wallMs / 1000), { n, digits: 2, load: r0.load, note: `enqueue → all accepted by the relays and held by the calendars${partial}` }),
      figure(`${label}: throughput`, 'subjects/s', r0.finished ? fin.map((r) => r.result.subjectsPerS) : [r0.subjectsPerS], {
        n,
        load: r0.load,
        note: `${n >= 5_000 && r0.intakePerTenth.length ? `intake per tenth of N (accepted/s): ${r0.intakePerTenth.map((x) => (Number.isFinite(x) ? Math.round(x) : '—')).join(' ')}` : ''}${r0.finished ? '' : '; partial: done / time at the limit'}`,
      }),
      figure(`${label}: Redis per pending subject`, 'bytes', [r0.memory.perPendingSubject], {
        n,
        load: r0.load,
        digits: 0,
        note: `INFO used_memory delta / subjects accepted, when the clock stopped${r0.finished ? '' : ' (queued jobs not yet accepted included)'}`,
      }),
    );
    const b = r0.memory.breakdown;
    const parts = b
      ? `; ${Object.entries(b.perSubject)
          .map(([k, v]) => `${k} ${fmtN(v)}`)
          .join(', ')} (${b.historyEntries.toFixed(1)} history entries per subject, ${fmtN(b.streamEntries)} stream entries)`
      : '';
    if (r0.memory.perConfirmedSubject !== null) {
      out.push(
        figure(`${label}: Redis per confirmed subject`, 'bytes', [r0.memory.perConfirmedSubject], {
          n,
          load: r0.load,
          target: { op: '<=', bound: 2048 },
          digits: 0,
          note: `after a regtest block was mined and all were confirmed (${sec(r0.confirmMs)} after mining)${parts}`,
        }),
      );
    } else {
      out.push(
        figure(`${label}: Redis per confirmed subject`, 'bytes', [], {
          n,
          target: { op: '<=', bound: 2048 },
          note: `${r0.finished ? (r0.confirmMs === null && r0.confirmed > 0 ? `confirmation did not finish in time (${fmtN(r0.confirmed)} confirmed)` : 'not measured (time budget)') : 'not measured: the run stopped at the time limit'}${parts}`,
        }),
      );
    }
    out.push(
      figure(`${label}: daemon RSS, all pending`, 'MB', r0.daemonRssPendingBytes === null ? [] : [r0.daemonRssPendingBytes / MB], {
        n,
        load: r0.load,
        target: n >= 100_000 && r0.finished ? { op: '<=', bound: 200 } : null,
        note: `VmRSS of the aer1-anchord child when the clock stopped${r0.finished ? '' : ` (${fmtN(r0.accepted)} subjects in state${r0.accepted < n ? `, not ${fmtN(n)}` : ''}${n >= 100_000 ? ': the target of 200 MB at 100,000 is not evaluated' : ''})`}`,
      }),
      figure(`${label}: daemon peak RSS`, 'MB', r0.daemonPeakRssBytes === null ? [] : [r0.daemonPeakRssBytes / MB], { n, load: r0.load, note: 'VmHWM of the aer1-anchord child over the run' }),
    );
  }
  const first = runs.get(sizes[0]!)?.[0]?.result;
  for (const n of sizes.slice(1)) {
    const r = runs.get(n)?.[0]?.result;
    if (!first?.finished || !r) continue;
    const timeRatio = r.wallMs / Math.max(1, r.finished ? r.n : r.done) / (first.wallMs / first.n);
    const memRatio = r.memory.perPendingSubject / first.memory.perPendingSubject;
    const partial = r.finished ? '' : ' (partial run)';
    out.push(
      figure(`growth ${fmtN(first.n)} → ${fmtN(n)}: time per subject`, '× smallest', [timeRatio], {
        n,
        digits: 2,
        note: `${timeRatio > 1.2 ? 'WORSE than linear (over 20% more time per subject)' : 'linear or better'}${partial}; the smallest N pays the fixed windows and calendar round over fewer subjects`,
      }),
      figure(`growth ${fmtN(first.n)} → ${fmtN(n)}: Redis per subject`, '× smallest', [memRatio], { n, digits: 2, note: `${memRatio > 1.2 ? 'WORSE than linear' : 'linear or better'}${partial}` }),
    );
  }
  return out;
}

function describeRun(t: Timed<DaemonRunResult>): void {
  const r = t.result;
  const tail = r.finished ? '' : ` — NOT FINISHED: ${fmtN(r.done)} of ${fmtN(r.n)} (${fmtN(r.accepted)} accepted)`;
  const conf = r.confirmMs !== null ? `; confirmed ${sec(r.confirmMs)} after mining` : r.confirmed ? `; ${fmtN(r.confirmed)} confirmed` : '';
  const c = r.cpu;
  progress(
    `${r.mode} N=${fmtN(r.n)}: ${sec(r.wallMs)} = ${Math.round(r.subjectsPerS)} subjects/s (enqueued ${sec(r.enqueuedMs)}, accepted ${sec(r.acceptedMs)}, nostr ${sec(r.nostrMs)}, ots ${sec(r.otsMs)}; ` +
      `${r.nostrEvents} events, ${r.otsBatches} calendar batches; CPU ms/subject daemon ${ms1(c.daemon)} redis ${ms1(c.redis)} peers ${ms1(c.peers)} bench ${ms1(c.bench)}; ` +
      `${r.redisCommands.callsPerSubject.toFixed(1)} Redis calls/subject; Redis ${Math.round(r.memory.perPendingSubject)} B/subject; RSS ${r.daemonRssPendingBytes === null ? '?' : Math.round(r.daemonRssPendingBytes / MB)} MB${conf}; ${sec(t.totalMs)} with setup)${tail}`,
  );
}

function describeNaive(t: Timed<NaiveResult>): void {
  const r = t.result;
  progress(
    `naive N=${fmtN(r.n)}: ${sec(r.wallMs)} = ${round(r.subjectsPerS, 1)} subjects/s (${fmtN(r.done)} done, ${r.failed} failed${r.firstFailure ? `: ${r.firstFailure}` : ''}; median Nostr ${Math.round(r.medianNostrMs)} ms, calendars ${Math.round(r.medianOtsMs)} ms)`,
  );
}

let exiting = false;
const bail = (signal: NodeJS.Signals): void => {
  if (exiting) return;
  exiting = true;
  process.stderr.write(`bench: ${signal}: stopping every child\n`);
  killAllTracked();
  process.exit(130);
};
process.once('SIGINT', bail);
process.once('SIGTERM', bail);
process.on('exit', killAllTracked);

main().then(
  (code) => {
    process.exitCode = code;
    // every child is stopped by now; do not wait on a stray handle
    setTimeout(() => process.exit(code), 500).unref();
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${(err as Error).message}\n`);
    killAllTracked();
    process.exit(1);
  },
);
