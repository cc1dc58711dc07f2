/**
 * `npm run bench [-- --json] [--quick]`: throughput, cost growth, the batching advantage
 * and verification speed, measured side by side on loopback — a private redis-server per
 * run, three dev relays and two dev calendars in a child of their own, `aer1-anchord` as
 * a child. Reports; never asserts. Batch mode is measured with both ways of intake at the
 * same N in the same run: bulk jobs (`{"subjects": [...]}`, what the targets are stated
 * for) and one job per subject; with the tuned batch window and with the configuration's
 * default windows; and against the naive collector at one same N. Bounded: the budgets
 * below are kept by the runner; when the budget runs short, repeats are skipped and the
 * largest run stops where it got to, and the output says so.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { configDefault } from '../src/adapters/config/schema.js';
import { daemonRun, type DaemonRunOptions, type DaemonRunResult, type IntakeKind } from './daemon-run.js';
import { naiveRun, type NaiveResult } from './naive.js';
import { killAllTracked, removeTempDir, startPeers, type Peers } from './processes.js';
import { figure, load, machine, median, round, table, type Figure } from './report.js';
import { firstProof, verifyDir, verifyOneCold } from './verify-run.js';
import { intakeRun, type IntakeRunResult } from './intake-run.js';
import { leanFigures, leanRuns } from './lean-run.js';
import { generateSecretKey } from '../src/core/nostr/keys.js';
import { envelopeEvent } from '../src/core/nostr/events.js';
import { canonicalJson } from '../src/core/aer1/canonical-json.js';

/** Subjects per bulk job (queue.maxSubjectsPerJob's default; the daemon runs use the daemon's own setting). */
const BULK_PER_JOB = configDefault('queue.maxSubjectsPerJob');

// the issue's targets (single Redis, 2-core machine), shown beside the figures
const TARGET_BULK_PER_S = 5_000;
const TARGET_SINGLE_PER_S = 2_500;
const TARGET_COMMANDS = 20;
const TARGET_BYTES_CONFIRMED = 1_024;
const TARGET_RSS_MB = 150;
const TARGET_RSS_AT = 100_000;
// issue 26: with the anchor log on
const TARGET_LOG_BULK_PER_S = 5_000;
const TARGET_CHECKPOINT_P95_MS = 2_000;

// stated in the usage text and docs/performance.md; measured, not hoped for
const FULL_BUDGET_S = 300;
const QUICK_BUDGET_S = 60;

const USAGE = `usage: npm run bench [-- [--json] [--quick] [--intake-only] [--intake-large] [--event-path] [--log] [--lean] [--round-ms MS] [--window-ms MS] [--naive-concurrency N]]
  --json               one JSON object per figure on stdout, nothing else (progress and the table go
                       to stderr; run it as \`npm run --silent bench -- --json\`, or npm prints its banner first)
  --quick              smaller N and a ${QUICK_BUDGET_S} s budget of measurement, for development; the full run's budget
                       is ${FULL_BUDGET_S} s. Add the build when sources changed (about 15 s) and a few seconds of start;
                       on a loaded machine repeats are dropped first and the output lists them
  --intake-only        only the intake comparison: single-subject jobs against bulk jobs
  --event-path         only the per-subject event path: batch, envelope and auto mode side by side, 3 rounds
                       (bulk jobs, N = envelope N), with the signing rate beside them
  --log                only the anchor log: batch mode, bulk jobs (N = 10,000, quick 2,000) with the log
                       off and on, alternating, 4 times each (quick: once); subjects/s (until every subject
                       is also in a checkpoint) and the wait from acceptance to the first checkpoint
  --lean               only lean retirement: batch mode, bulk jobs (N = 10,000, quick 2,000), the log on,
                       retention off and on, alternating, twice each (quick: once); Redis bytes (INFO
                       used_memory delta / N) a confirmed subject kept beside a retired one
  --intake-large       that comparison at N = 100,000 rather than 10,000 (about a minute more)
  --round-ms MS        dev calendars' aggregation round (default 1000, as the real server)
  --window-ms MS       the tuned batch window, Nostr and OTS (default 250); one run also uses the
                       configuration's defaults (nostr.batchWindowMs ${configDefault('nostr.batchWindowMs')}, ots.batchWindowMs ${configDefault('ots.batchWindowMs')})
  --naive-concurrency  subjects in flight in the naive baseline (default 32)`;

interface Plan {
  label: 'full' | 'quick';
  budgetMs: number;
  /** Batch mode, bulk and single-subject jobs at this N (tuned and default windows); the bulk run's proofs are the verification set. */
  batchN: number;
  envelopeN: number;
  /** --event-path: subjects per run (the bytes a subject keeps are read against a start-up state that moves by ±100 KB between runs). */
  eventPathN: number;
  /** The naive baseline and batch mode (bulk and single) at this N: one of `growth`. */
  naiveN: number;
  /** Cost-growth sizes, bulk jobs (batchN among them); the largest runs last, with what budget is left. */
  growth: number[];
  coldStarts: number;
  /** Subjects in the intake comparison (single-subject jobs against bulk jobs). */
  intakeN: number;
  /** Daemon RSS with this many subjects pending (bulk intake, witnesses held back). */
  pendingN: number;
}

const FULL: Plan = { label: 'full', budgetMs: FULL_BUDGET_S * 1000, batchN: 10_000, envelopeN: 1_000, eventPathN: 3_000, naiveN: 1_000, growth: [1_000, 10_000, 100_000], coldStarts: 5, intakeN: 10_000, pendingN: 100_000 };
const QUICK: Plan = { label: 'quick', budgetMs: QUICK_BUDGET_S * 1000, batchN: 2_000, envelopeN: 200, eventPathN: 200, naiveN: 200, growth: [200, 2_000], coldStarts: 3, intakeN: 5_000, pendingN: 5_000 };
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
const intakeLabel = (kind: IntakeKind): string => (kind === 'bulk' ? `bulk jobs (${fmtN(BULK_PER_JOB)} subjects each)` : 'one job per subject');

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
      'event-path': { type: 'boolean' },
      log: { type: 'boolean' },
      lean: { type: 'boolean' },
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
    const base = { peers, calendarRoundMs: roundMs, windowMs, ratePerMinute, confirmTimeoutMs: 60_000 };
    if (values['event-path']) {
      // batch, envelope and auto mode side by side, bulk jobs each, the signing rate beside them;
      // 3 rounds (quick: 1), the modes taking turns, medians shown. Each run's fresh daemon first
      // takes N other subjects to the same goal (warmUp): the figures are the next N's, a warm
      // daemon's, and the first N's CPU is shown as the cold one. N = 3,000: what Redis holds
      // outside the keys at the start (its main dictionary, resized in steps, and allocations no
      // INFO field names) moves by about ±100 KB between runs, ±100 B a subject at N = 1,000
      const at = (mode: 'batch' | 'envelope' | 'auto'): Promise<Timed<DaemonRunResult>> =>
        timed(() => daemonRun({ ...base, mode, intake: 'bulk', n: plan.eventPathN, timeoutMs: 120_000, confirm: false, exportProofs: false, warmUp: true }));
      const side: Record<'batch' | 'envelope' | 'auto', DaemonRunResult[]> = { batch: [], envelope: [], auto: [] };
      for (let i = 0; i < (plan.label === 'full' ? 3 : 1); i++) {
        for (const mode of ['batch', 'envelope', 'auto'] as const) {
          const t = await at(mode);
          describeRun(t);
          side[mode].push(t.result);
        }
      }
      const figures = eventPathFigures(side.batch, side.envelope, side.auto, signingMs());
      const lines = [`aer1-anchor bench, the per-subject event path — ${new Date().toISOString()}`, `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}`, '', table(figures)];
      emit(figures, lines, values.json === true);
      return 0;
    }
    if (values.lean) {
      const runs = await leanRuns(base, plan.label === 'full' ? 10_000 : 2_000, plan.label === 'full' ? 2 : 1, (r, label) => progress(`${label}: N=${fmtN(r.n)}, ${r.memory.perConfirmedSubject !== null ? `${Math.round(r.memory.perConfirmedSubject)} B a confirmed subject` : r.memory.perRetiredSubject !== null ? `${Math.round(r.memory.perRetiredSubject)} B a retired subject` : 'NOT CONFIRMED or NOT RETIRED'}`));
      const figures = leanFigures(runs.kept, runs.retired);
      const lines = [`aer1-anchor bench, lean retirement — ${new Date().toISOString()}`, `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}`, '', table(figures)];
      emit(figures, lines, values.json === true);
      return 0;
    }
    if (values.log) {
      // log off and on alternating, so a change of load falls on both; 4 each, as each run waits
      // for a calendar round (a clock of 1 s, as the real server's) that falls anywhere in it
      const runs: Record<'off' | 'on', DaemonRunResult[]> = { off: [], on: [] };
      for (let i = 0; i < (plan.label === 'full' ? 4 : 1); i++) {
        for (const side of ['off', 'on'] as const) {
          const t = await timed(() => daemonRun({ ...base, mode: 'batch', intake: 'bulk', n: plan.batchN, timeoutMs: 120_000, confirm: false, exportProofs: false, log: side === 'on' }));
          describeRun(t);
          runs[side].push(t.result);
        }
      }
      const figures = logFigures(runs.off, runs.on);
      const lines = [`aer1-anchor bench, the anchor log — ${new Date().toISOString()}`, `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}`, '', table(figures)];
      emit(figures, lines, values.json === true);
      return 0;
    }
    /** Generous for a run of n at `perSecond`, never past the budget. */
    const limit = (n: number, perSecond: number, reserveMs = 0): number =>
      Math.max(10_000, Math.min(budget.remaining() - reserveMs - 8_000, (n / perSecond) * 1000 * 3 + 10_000));
    const batch = (n: number, intake: IntakeKind, extra: Partial<DaemonRunOptions> = {}): Promise<DaemonRunResult> =>
      daemonRun({ ...base, mode: 'batch', intake, n, timeoutMs: limit(n, 100), confirm: false, exportProofs: false, ...extra });
    const largest = Math.max(...plan.growth);
    const smaller = plan.growth.filter((n) => n !== plan.batchN && n !== largest).sort((a, b) => a - b);
    // time kept for the naive baseline, which runs after the largest size
    const naiveReserve = plan.label === 'quick' ? 11_000 : 40_000;

    /** Waiting for Bitcoin confirmation never eats into what later steps need. */
    const laterSteps = plan.label === 'quick' ? 25_000 : 90_000;
    const confirmBy = (): number => performance.now() + Math.max(5_000, budget.remaining() - naiveReserve - laterSteps);

    // 1. Batch mode at batchN, bulk jobs then one job per subject, tuned window, with Bitcoin
    //    confirmation; the bulk run's proofs are the verification set. On a very slow machine
    //    each stops at 20% of the budget and says how far it got.
    const mainTimeout = (): number => Math.min(limit(plan.batchN, 100, naiveReserve), plan.budgetMs * 0.2);
    const runs: Record<IntakeKind, Timed<DaemonRunResult>[]> = {
      bulk: [await timed(() => batch(plan.batchN, 'bulk', { timeoutMs: mainTimeout(), confirm: true, confirmBy: confirmBy(), exportProofs: true }))],
      single: [],
    };
    describeRun(runs.bulk[0]!);
    const proofs = runs.bulk[0]!.result.proofs;
    if (proofs) proofDirs.push(proofs.dir);
    runs.single.push(await timed(() => batch(plan.batchN, 'single', { timeoutMs: mainTimeout(), confirm: true, confirmBy: confirmBy() })));
    describeRun(runs.single[0]!);

    // 1b. The same bulk run with the configuration's default batch windows.
    const defaults = await timed(() => batch(plan.batchN, 'bulk', { windowMs: null, timeoutMs: Math.min(limit(plan.batchN, 100, naiveReserve), plan.budgetMs * 0.25) }));
    describeRun(defaults);

    // 2. Envelope mode, against the same peers, bulk jobs as the batch-mode figures it is set against.
    const envelope = (): Promise<DaemonRunResult> =>
      daemonRun({ ...base, mode: 'envelope', intake: 'bulk', n: plan.envelopeN, timeoutMs: limit(plan.envelopeN, 20, naiveReserve), confirm: false, exportProofs: false });
    const envRuns: Timed<DaemonRunResult>[] = [await timed(envelope)];
    describeRun(envRuns[0]!);

    // 2b. Auto mode (the default), same N: Redis commands per subject as the mode decides per cut.
    const autoRun = await timed(() => daemonRun({ ...base, mode: 'auto', intake: 'bulk', n: plan.envelopeN, timeoutMs: limit(plan.envelopeN, 20, naiveReserve), confirm: false, exportProofs: false }));
    describeRun(autoRun);

    // 3. Cost growth (bulk jobs), the smaller sizes; one job per subject at the naive baseline's N.
    const growthRuns = new Map<number, Timed<DaemonRunResult>[]>([[plan.batchN, runs.bulk]]);
    for (const n of smaller) {
      const run = await timed(() => batch(n, 'bulk', { confirm: true, confirmBy: confirmBy(), timeoutMs: limit(n, 100, naiveReserve) }));
      describeRun(run);
      growthRuns.set(n, [run]);
    }
    const singleAtNaive: Timed<DaemonRunResult>[] = plan.naiveN === plan.batchN ? runs.single : [];
    if (plan.naiveN !== plan.batchN) {
      const run = await timed(() => batch(plan.naiveN, 'single', { timeoutMs: limit(plan.naiveN, 100, naiveReserve) }));
      describeRun(run);
      singleAtNaive.push(run);
    }

    // 3b. Intake alone: single-subject jobs against bulk jobs, side by side; then the daemon's
    //     RSS with pendingN subjects pending (bulk intake, witnesses held back).
    const intake = await intakeFigures(plan.intakeN, peers, Math.max(20_000, Math.min(120_000, budget.remaining() - naiveReserve - 60_000)));
    if (plan.pendingN !== plan.intakeN) {
      const timeoutMs = Math.max(20_000, Math.min(120_000, budget.remaining() - naiveReserve - 40_000));
      // the full run also reads the daemon 60 s after acceptance, idle: the steady state of pending subjects
      const r = await intakeRun({ n: plan.pendingN, perJob: BULK_PER_JOB, peers, timeoutMs, idleMs: plan.label === 'quick' ? 0 : 60_000 });
      describeIntake(r);
      intake.push(pendingRssFigure(r));
    }

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
      progress(`batch N=${fmtN(largest)}, bulk jobs: ${sec(timeoutMs)} left for it`);
      const confirmBy = performance.now() + budget.remaining() - naiveReserve - 8_000;
      const run = await timed(() => batch(largest, 'bulk', { timeoutMs, confirm: true, confirmBy }));
      describeRun(run);
      growthRuns.set(largest, [run]);
    }

    // 6. The naive baseline, against the same peers (rate = done / time when time-limited).
    const naive = (): Promise<NaiveResult> =>
      naiveRun({ n: plan.naiveN, peers, concurrency: naiveConcurrency, timeoutMs: Math.max(5_000, Math.min(limit(plan.naiveN, 10), budget.remaining() - 3_000)) });
    const naiveRuns: Timed<NaiveResult>[] = [await timed(naive)];
    describeNaive(naiveRuns[0]!);

    // 7. Repeats of short runs, for medians of three, while the budget lasts: the main
    //    comparison first, then what the same-N ratio uses, then the rest.
    const skipped: string[] = [];
    const repeat = async <T>(label: string, list: Timed<T>[], wallOf: (r: T) => number, again: () => Promise<T>, describe: (t: Timed<T>) => void): Promise<void> => {
      while (list.length < 3) {
        const last = list[list.length - 1];
        if (!last) return;
        if (wallOf(last.result) >= SHORT_MS) return;
        if (last.totalMs * 1.3 + 2_000 > budget.remaining()) {
          skipped.push(`${label}: ${list.length} run${list.length > 1 ? 's' : ''}`);
          return;
        }
        const t = await timed(again);
        describe(t);
        list.push(t);
      }
    };
    const wall = (r: DaemonRunResult): number => r.wallMs;
    await repeat(`batch N=${fmtN(plan.batchN)}, bulk`, runs.bulk, wall, () => batch(plan.batchN, 'bulk'), describeRun);
    await repeat(`batch N=${fmtN(plan.batchN)}, one job per subject`, runs.single, wall, () => batch(plan.batchN, 'single'), describeRun);
    const bulkAtNaive = growthRuns.get(plan.naiveN) ?? [];
    if (plan.naiveN !== plan.batchN) {
      await repeat(`batch N=${fmtN(plan.naiveN)}, bulk`, bulkAtNaive, wall, () => batch(plan.naiveN, 'bulk'), describeRun);
      await repeat(`batch N=${fmtN(plan.naiveN)}, one job per subject`, singleAtNaive, wall, () => batch(plan.naiveN, 'single'), describeRun);
    }
    await repeat(`naive N=${fmtN(plan.naiveN)}`, naiveRuns, (r) => r.wallMs, naive, describeNaive);
    for (const n of smaller) if (n !== plan.naiveN) await repeat(`batch N=${fmtN(n)}, bulk`, growthRuns.get(n)!, wall, () => batch(n, 'bulk'), describeRun);
    await repeat(`envelope N=${fmtN(plan.envelopeN)}`, envRuns, wall, envelope, describeRun);

    const figures = [
      ...batchFigures(plan, peers, roundMs, runs, defaults.result),
      ...baselineFigures(plan, peers, roundMs, naiveConcurrency, { bulk: bulkAtNaive, single: singleAtNaive }, envRuns, naiveRuns, autoRun.result),
      ...(growthRuns.get(plan.envelopeN)?.[0] ? eventPathFigures([growthRuns.get(plan.envelopeN)![0]!.result], [envRuns[0]!.result], [autoRun.result], signingMs()) : []),
      ...growthFigures([...plan.growth].sort((a, b) => a - b), growthRuns, plan.batchN),
      ...intake,
      ...verifyFigures,
    ];
    const loadAtEnd = load();
    const elapsed = budget.elapsed();
    const lines = [
      `aer1-anchor bench (${plan.label}${plan.label === 'quick' ? ': smaller N than the full run' : ''}) — ${new Date().toISOString()}`,
      `machine: ${mc.cores} cores, ${mc.cpu}, Node ${mc.node}; load average at start ${loadAtStart.join(' ')}, at end ${loadAtEnd.join(' ')}`,
      `setup: private redis-server (no AOF) per run; ${peers.relays.length} dev relays + ${peers.calendars.length} dev calendars (round ${roundMs} ms) in one child process; aer1-anchord as a child; tuned batch window ${windowMs} ms (one run with the defaults, nostr ${fmtN(defaults.result.windows.nostr)} ms / ots ${fmtN(defaults.result.windows.ots)} ms); bulk jobs of ${fmtN(BULK_PER_JOB)} subjects (queue.maxSubjectsPerJob); nostr.ratePerMinute ${fmtN(ratePerMinute)}`,
      '',
      table(figures),
      '',
      skipped.length ? `repeats skipped to stay in the time budget (runs shorter than 10 s should be 3): ${skipped.join('; ')}` : 'every run shorter than 10 s was repeated to 3 runs (median shown)',
      `total ${sec(elapsed)} of a ${sec(plan.budgetMs)} budget`,
    ];
    emit(figures, lines, values.json === true);
    progress(`done in ${sec(elapsed)} (budget ${sec(plan.budgetMs)}); load average ${loadAtEnd.join(' ')}`);
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
 * per subject from INFO commandstats deltas (enqueue and intake phases), Redis CPU (INFO
 * cpu delta) and intake throughput from a full queue, side by side; and the daemon's RSS
 * with the N subjects of the bulk run pending.
 */
async function intakeFigures(n: number, peers: Peers, timeoutMs: number): Promise<Figure[]> {
  const runs: Record<IntakeKind, IntakeRunResult> = {
    single: await intakeRun({ n, perJob: 1, peers, timeoutMs }),
    bulk: await intakeRun({ n, perJob: BULK_PER_JOB, peers, timeoutMs }),
  };
  const out: Figure[] = [];
  const label = { single: 'single-subject jobs', bulk: `bulk jobs of ${fmtN(BULK_PER_JOB)}` };
  const top = (c: IntakeRunResult['intake']): string => c.top.slice(0, 5).map((t) => `${t.command} ${t.callsPerSubject.toFixed(2)}`).join(', ');
  for (const mode of ['single', 'bulk'] as const) {
    const r = runs[mode];
    describeIntake(r);
    const partial = r.finished ? '' : `; DID NOT FINISH: ${fmtN(r.accepted)} of ${fmtN(r.n)} accepted in ${sec(r.intakeMs)}`;
    out.push(
      figure(`intake, ${label[mode]}: Redis commands per subject`, 'calls', [r.enqueue.callsPerSubject + r.intake.callsPerSubject], {
        n,
        load: r.load,
        digits: 2,
        note: `INFO commandstats deltas, scripts' inner commands included: enqueue ${r.enqueue.callsPerSubject.toFixed(2)} (${top(r.enqueue)}), intake ${r.intake.callsPerSubject.toFixed(2)} (${top(r.intake)}); Redis CPU ${Math.round(r.redisCpuMs * 1000)} µs per subject in the intake phase (INFO cpu)${partial}`,
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
    pendingRssFigure(runs.bulk),
  );
  return out;
}

/** The daemon's RSS with an intake run's N subjects pending; the target is evaluated at 100,000 only. */
function pendingRssFigure(r: IntakeRunResult): Figure {
  const at = r.n >= TARGET_RSS_AT;
  const idle = r.rss?.idle;
  return figure(`daemon RSS, ${fmtN(r.n)} subjects pending${idle ? `, ${Math.round(idle.ms / 1000)} s idle` : ''}`, 'MB', r.rss ? [(idle?.rss ?? r.rss.settled) / MB] : [], {
    n: r.n,
    load: r.load,
    target: at ? { op: '<', bound: TARGET_RSS_MB } : null,
    note: r.rss
      ? `VmRSS of aer1-anchord ${idle ? `${Math.round(idle.ms / 1000)} s after all ${fmtN(r.n)} were accepted (${Math.round(r.rss.settled / MB)} MB 1 s after)` : `1 s after all ${fmtN(r.n)} were accepted`} from bulk jobs of ${fmtN(r.perJob)}, witnesses held back (a day's window): ${Math.round(r.rss.atAccepted / MB)} MB at acceptance, peak (VmHWM) ${Math.round(r.rss.peak / MB)} MB${at ? '' : `; the target (< ${TARGET_RSS_MB} MB) is for ${fmtN(TARGET_RSS_AT)} pending, not evaluated at this N`}`
      : `not measured: ${fmtN(r.accepted)} of ${fmtN(r.n)} got in within the time limit`,
  });
}

function describeIntake(r: IntakeRunResult): void {
  const partial = r.finished ? '' : ` — NOT FINISHED: ${fmtN(r.accepted)} of ${fmtN(r.n)}`;
  const rss = r.rss ? `; daemon RSS ${Math.round(r.rss.settled / MB)} MB with all pending (peak ${Math.round(r.rss.peak / MB)} MB)` : '';
  progress(
    `intake, ${r.perJob === 1 ? 'single-subject jobs' : `bulk jobs of ${fmtN(r.perJob)}`}, N=${fmtN(r.n)}: ${Math.round(r.subjectsPerS)} subjects/s (enqueue ${sec(r.enqueueMs)}, intake ${sec(r.intakeMs)}); Redis calls/subject: enqueue ${r.enqueue.callsPerSubject.toFixed(2)}, intake ${r.intake.callsPerSubject.toFixed(2)}; Redis CPU ${Math.round(r.redisCpuMs * 1000)} µs/subject${rss}${partial}`,
  );
}

const unfinished = (r: DaemonRunResult): string => (r.finished ? '' : `; DID NOT FINISH: ${fmtN(r.done)} of ${fmtN(r.n)} in ${sec(r.wallMs)}`);
const rates = (list: Timed<DaemonRunResult>[]): number[] => list.filter((r) => r.result.finished).map((r) => r.result.subjectsPerS);
const topCommands = (r: DaemonRunResult, k = 4): string =>
  r.redisCommands.top
    .slice(0, k)
    .map((t) => `${t.command} ${t.callsPerSubject.toFixed(1)}× ${Math.round(t.usecPerSubject)} µs`)
    .join(', ');
const mostCalled = (r: DaemonRunResult, k = 6): string =>
  r.redisCommands.byCalls
    .slice(0, k)
    .map((t) => `${t.command} ${t.callsPerSubject.toFixed(2)}`)
    .join(', ');

/** "subject hash 616, history 344, …, outside keys … 120 (1.0 history entries per subject, 4,000 stream entries)" */
function breakdownNote(r: DaemonRunResult): string {
  const b = r.memory.breakdown;
  if (!b) return '';
  const parts = Object.entries(b.perSubject).map(([kind, bytes]) => `${kind} ${fmtN(bytes)}`);
  const extra = [b.historyEntries === null ? null : `${b.historyEntries.toFixed(1)} history entries per subject`, b.streamEntries === null ? null : `${fmtN(b.streamEntries)} stream entries`, b.truncated ? 'key listing stopped at its bound' : null].filter((x) => x !== null);
  return `; MEMORY USAGE by kind of key, per subject: ${parts.join(', ')}${extra.length ? ` (${extra.join(', ')})` : ''}`;
}

function perConfirmedFigure(name: string, r: DaemonRunResult, target: boolean, withBreakdown: boolean): Figure {
  const t = target ? { op: '<=' as const, bound: TARGET_BYTES_CONFIRMED } : null;
  if (r.memory.perConfirmedSubject !== null) {
    return figure(name, 'bytes', [r.memory.perConfirmedSubject], {
      n: r.n,
      load: r.load,
      target: t,
      digits: 0,
      note: `INFO used_memory delta / N after a regtest block was mined and all were confirmed (${sec(r.confirmMs)} after mining)${withBreakdown ? breakdownNote(r) : ''}`,
    });
  }
  const why = r.finished ? (r.confirmMs === null && r.confirmed > 0 ? `confirmation did not finish in time (${fmtN(r.confirmed)} confirmed)` : 'not measured (time budget)') : 'not measured: the run stopped at the time limit';
  return figure(name, 'bytes', [], { n: r.n, target: t, note: `${why}${withBreakdown ? breakdownNote(r) : ''}` });
}

/** Batch mode at batchN: bulk jobs and one job per subject side by side, then the default windows. */
function batchFigures(plan: Plan, peers: Peers, roundMs: number, runs: Record<IntakeKind, Timed<DaemonRunResult>[]>, defaults: DaemonRunResult): Figure[] {
  const out: Figure[] = [];
  const relays = peers.relays.length;
  const cals = peers.calendars.length;
  const cores = machine().cores;
  for (const kind of ['bulk', 'single'] as const) {
    const list = runs[kind];
    const r = list[0]!.result;
    const label = intakeLabel(kind);
    const bulk = kind === 'bulk';
    const c = r.cpu;
    const total = (c.daemon ?? 0) + (c.redis ?? 0) + (c.peers ?? 0) + c.bench;
    const forBulk = bulk ? '' : ' (the targets are stated for bulk intake)';
    out.push(
      figure(`throughput, batch mode, ${label}`, 'subjects/s', rates(list), {
        n: plan.batchN,
        load: r.load,
        target: { op: '>=', bound: bulk ? TARGET_BULK_PER_S : TARGET_SINGLE_PER_S },
        note: `enqueue (${fmtN(r.jobs)} jobs) → accepted by all ${relays} relays and held by ${cals}/${cals} calendars; paid once per run: the ${r.windows.nostr} ms window and the ${roundMs} ms calendar round; ${r.nostrEvents} events, ${r.otsBatches} calendar submissions; run 1: enqueued ${sec(r.enqueuedMs)}, accepted ${sec(r.acceptedMs)}, Nostr ${sec(r.nostrMs)}, OTS ${sec(r.otsMs)}${unfinished(r)}`,
      }),
      figure(`batch mode, ${label}: Redis commands per subject`, 'calls', [r.redisCommands.callsPerSubject], {
        n: r.n,
        load: r.load,
        target: bulk ? { op: '<=', bound: TARGET_COMMANDS } : null,
        note: `INFO commandstats deltas over the timed part, enqueue included, scripts' inner commands included, the bench's polling left out${forBulk}; most called: ${mostCalled(r)}`,
      }),
      figure(`batch mode, ${label}: Redis CPU per subject`, 'µs', [r.redisInfoCpuMs * 1000], {
        n: r.n,
        load: r.load,
        digits: 0,
        note: `INFO cpu (used_cpu_sys + used_cpu_user) delta over the timed part / N, the bench's polling included; most time (commandstats, a script's time includes its inner commands'): ${topCommands(r)}`,
      }),
      figure(`batch mode, ${label}: CPU per subject`, 'ms', [total], {
        n: r.n,
        load: r.load,
        digits: 3,
        note: `all processes: daemon ${ms1(c.daemon)}, redis-server ${ms1(c.redis)}, relays+calendars ${ms1(c.peers)}, load generator ${ms1(c.bench)} (/proc, run 1)`,
      }),
      figure(`batch mode, ${label}: CPU-bound ceiling on ${cores} idle cores`, 'subjects/s', total > 0 ? [(cores * 1000) / total] : [], {
        n: r.n,
        load: r.load,
        note: `derived: ${cores} cores × 1000 ms / CPU ms per subject — what these processes could do with the machine to themselves`,
      }),
      perConfirmedFigure(`batch mode, ${label}: Redis per confirmed subject`, r, bulk, true),
    );
  }
  const bulkRate = median(rates(runs.bulk));
  const singleRate = median(rates(runs.single));
  const b0 = runs.bulk[0]!.result;
  const s0 = runs.single[0]!.result;
  out.push(
    figure('batch mode throughput, bulk / one job per subject', '×', bulkRate !== null && singleRate ? [bulkRate / singleRate] : [], { n: plan.batchN, digits: 2, note: 'same N, same run, tuned window' }),
    figure('batch mode Redis commands, one job per subject / bulk', '×', [s0.redisCommands.callsPerSubject / Math.max(1e-9, b0.redisCommands.callsPerSubject)], { n: plan.batchN, digits: 2 }),
  );
  const w = `nostr ${fmtN(defaults.windows.nostr)} ms, ots ${fmtN(defaults.windows.ots)} ms`;
  out.push(
    figure(`throughput, batch mode, bulk jobs, default windows (${w})`, 'subjects/s', defaults.finished ? [defaults.subjectsPerS] : [defaults.subjectsPerS], {
      n: defaults.n,
      load: defaults.load,
      note: `the configuration's batch windows (src/adapters/config/schema.ts) instead of ${b0.windows.nostr} ms; a cut waits for its window unless batchMaxSize (nostr ${fmtN(configDefault('nostr.batchMaxSize'))}, ots ${fmtN(configDefault('ots.batchMaxSize'))}) fills first; ${defaults.nostrEvents} events, ${defaults.otsBatches} calendar submissions; accepted ${sec(defaults.acceptedMs)}, Nostr ${sec(defaults.nostrMs)}, OTS ${sec(defaults.otsMs)}${unfinished(defaults)}${defaults.finished ? '' : ' (rate = done / time)'}`,
    }),
    figure(`batch mode, bulk jobs, default windows: Redis commands per subject`, 'calls', [defaults.redisCommands.callsPerSubject], {
      n: defaults.n,
      load: defaults.load,
      note: `against ${b0.redisCommands.callsPerSubject.toFixed(1)} with the ${b0.windows.nostr} ms window; Redis CPU ${Math.round(defaults.redisInfoCpuMs * 1000)} µs per subject (${Math.round(b0.redisInfoCpuMs * 1000)} µs); most called: ${mostCalled(defaults)}`,
    }),
  );
  return out;
}

/** Envelope and auto mode, and the naive baseline against batch mode at the naive baseline's N. */
function baselineFigures(
  plan: Plan,
  peers: Peers,
  roundMs: number,
  naiveConcurrency: number,
  atNaive: Record<IntakeKind, Timed<DaemonRunResult>[]>,
  envRuns: Timed<DaemonRunResult>[],
  naiveRuns: Timed<NaiveResult>[],
  auto: DaemonRunResult,
): Figure[] {
  const naiveRates = naiveRuns.map((r) => r.result.subjectsPerS).filter((x) => x > 0);
  const envRate = median(rates(envRuns));
  const naiveRate = median(naiveRates);
  const e0 = envRuns[0]!.result;
  const n0 = naiveRuns[0]!.result;
  const relays = peers.relays.length;
  const cals = peers.calendars.length;
  const naiveNote = n0.finished ? '' : `; time-limited: ${fmtN(n0.done)} of ${fmtN(n0.n)} done in ${sec(n0.wallMs)}, rate = done / time`;
  const out: Figure[] = [
    figure('throughput, envelope mode', 'subjects/s', rates(envRuns), {
      n: plan.envelopeN,
      load: e0.load,
      note: `one signed event per subject (${fmtN(plan.envelopeN * relays)} publishes), bulk jobs; run 1: accepted ${sec(e0.acceptedMs)}, Nostr ${sec(e0.nostrMs)}, OTS ${sec(e0.otsMs)}${unfinished(e0)}`,
    }),
    figure('throughput, naive collector', 'subjects/s', naiveRates, {
      n: plan.naiveN,
      load: n0.load,
      note: `one event (to ${relays} relays) + one submission (to ${cals} calendars) per subject, ${naiveConcurrency} in flight, calendar round ${roundMs} ms; median per subject: Nostr ${Math.round(n0.medianNostrMs)} ms, calendars ${Math.round(n0.medianOtsMs)} ms${naiveNote}`,
    }),
  ];
  for (const kind of ['bulk', 'single'] as const) {
    const list = atNaive[kind];
    const rate = median(rates(list));
    out.push(
      figure(`throughput, batch mode, ${intakeLabel(kind)}, N=${fmtN(plan.naiveN)}`, 'subjects/s', rates(list), {
        n: plan.naiveN,
        load: list[0]?.result.load,
        note: `at the naive baseline's N${list[0] ? unfinished(list[0].result) : ''}`,
      }),
      figure(`ratio batch mode (${kind === 'bulk' ? 'bulk jobs' : 'one job per subject'}) / naive, same N`, '×', rate !== null && naiveRate ? [rate / naiveRate] : [], {
        n: plan.naiveN,
        target: kind === 'bulk' ? { op: '>=', bound: 50 } : null,
        note: `both at N=${fmtN(plan.naiveN)}, medians${n0.finished ? '' : ` (the naive baseline time-limited: ${fmtN(n0.done)} of ${fmtN(n0.n)} done, rate = done / time)`}; batch mode pays its window and the calendar round once however small N is, so the ratio grows with N`,
      }),
    );
  }
  out.push(
    figure('ratio envelope / naive', '×', envRate !== null && naiveRate ? [envRate / naiveRate] : [], {
      n: plan.envelopeN,
      note: plan.envelopeN !== plan.naiveN ? `of throughputs measured at different N (envelope ${fmtN(plan.envelopeN)}, naive ${fmtN(plan.naiveN)})` : `both at N=${fmtN(plan.naiveN)}`,
    }),
    figure('auto mode: Redis commands per subject', 'calls', [auto.redisCommands.callsPerSubject], {
      n: auto.n,
      load: auto.load,
      note: `${fmtN(auto.nostrEvents)} signed events for ${fmtN(auto.n)} subjects (auto decides per cut), bulk jobs; most: ${auto.redisCommands.top
        .slice(0, 4)
        .map((t) => `${t.command} ${t.callsPerSubject.toFixed(1)}×`)
        .join(', ')}${unfinished(auto)}`,
    }),
  );
  const c = e0.cpu;
  const total = (c.daemon ?? 0) + (c.redis ?? 0) + (c.peers ?? 0) + c.bench;
  const cores = machine().cores;
  out.push(
    figure('envelope mode: CPU per subject', 'ms', [total], {
      n: e0.n,
      load: e0.load,
      digits: 3,
      note: `daemon ${ms1(c.daemon)}, redis-server ${ms1(c.redis)}, relays+calendars ${ms1(c.peers)}, load generator ${ms1(c.bench)} (run 1)`,
    }),
    figure(`envelope mode: CPU-bound ceiling on ${cores} idle cores`, 'subjects/s', total > 0 ? [(cores * 1000) / total] : [], {
      n: e0.n,
      load: e0.load,
      note: `derived: ${cores} cores × 1000 ms / CPU ms per subject`,
    }),
    figure('envelope mode: Redis commands per subject', 'calls', [e0.redisCommands.callsPerSubject], {
      n: e0.n,
      load: e0.load,
      note: `Redis CPU ${Math.round(e0.redisInfoCpuMs * 1000)} µs per subject (INFO cpu); most called: ${mostCalled(e0, 4)}; most time: ${topCommands(e0, 3)}`,
    }),
  );
  return out;
}

/** Envelope-mode targets per subject (issue 25): daemon CPU, Redis calls, Redis bytes. */
const EVENT_PATH_TARGETS = { daemonCpuMs: 1.5, calls: 30, bytes: 1536 } as const;

/** What one BIP-340 envelope event costs to build and sign here, in ms (the fastest of 5 rounds of 200, after a warm-up round). */
function signingMs(): number {
  const key = generateSecretKey();
  const rounds: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) {
      const canonical = canonicalJson({ anchored_at: '2026-01-01T00:00:00Z', receipt_uuid: `bench-${r}-${i}` });
      envelopeEvent({ canonical, digestHex: createHash('sha256').update(canonical).digest('hex'), kind: 3099 }, key);
    }
    if (r > 0) rounds.push((performance.now() - t0) / 200);
  }
  return Math.min(...rounds);
}

/** The per-subject event path (envelope and auto mode) beside batch mode, bulk jobs each, in one run. */
/** The anchor log off and on, side by side (runs of one N, bulk jobs, batch mode). */
function logFigures(off: readonly DaemonRunResult[], on: readonly DaemonRunResult[]): Figure[] {
  const n = on[0]?.n ?? null;
  const last = on.at(-1)?.load;
  const rate = (rs: readonly DaemonRunResult[]): number[] => rs.filter((r) => r.finished).map((r) => r.subjectsPerS);
  const lat = (q: 'p50' | 'p95'): number[] => on.flatMap((r) => (r.log?.latencyMs ? [r.log.latencyMs[q]] : []));
  const offRate = median(rate(off));
  const onRate = median(rate(on));
  const unfinishedNote = [...off, ...on].some((r) => !r.finished) ? `; ${[...off, ...on].filter((r) => !r.finished).length} run(s) NOT FINISHED, left out` : '';
  const checkpoints = on.map((r) => r.log?.checkpoints ?? 0).join(', ');
  return [
    figure('anchor log off: throughput, bulk jobs', 'subjects/s', rate(off), { n, load: off.at(-1)?.load, note: `accepted, on every relay and held by the calendars${unfinishedNote}` }),
    figure('anchor log on: throughput, bulk jobs', 'subjects/s', rate(on), { n, load: last, target: { op: '>=', bound: TARGET_LOG_BULK_PER_S }, note: 'the same, and every subject in a signed checkpoint' }),
    figure('anchor log on / off: throughput', '×', offRate && onRate ? [onRate / offRate] : [], { n, digits: 2, note: 'medians, same run' }),
    figure('anchor log on: throughput to the relays and calendars only', 'subjects/s', on.filter((r) => r.finished).map((r) => r.n / (Math.max(r.nostrMs!, r.otsMs!) / 1000)), {
      n,
      load: last,
      note: 'the goal of the run with the log off (not waiting for the last checkpoint)',
    }),
    figure('anchor log: acceptance → first checkpoint covering it, p50', 'ms', lat('p50'), { n, load: last, digits: 0, note: `log.checkpointIntervalMs ${configDefault('log.checkpointIntervalMs')}; ${checkpoints} checkpoints` }),
    figure('anchor log: acceptance → first checkpoint covering it, p95', 'ms', lat('p95'), { n, load: last, digits: 0, target: { op: '<=', bound: TARGET_CHECKPOINT_P95_MS }, note: `max ${on.map((r) => r.log?.latencyMs?.max ?? '—').join(', ')} ms; the record's created to the kept note's mtime` }),
  ];
}

/** A median in ms, or — when there is none. */
function fmtMs(v: number | null): string {
  return v === null ? '—' : `${v.toFixed(2)} ms`;
}

/** The runs' daemon CPU per subject (the whole process, or its main thread; warm, or over a fresh daemon's first burst), runs without a reading left out. */
function daemonCpu(rs: readonly DaemonRunResult[], part: 'daemon' | 'daemonMain' = 'daemon', phase: 'warm' | 'cold' = 'warm'): number[] {
  return rs.flatMap((x) => {
    const v = phase === 'warm' ? x.cpu[part] : (x.cpuCold?.[part] ?? null);
    return v === null ? [] : [v];
  });
}

/** What a fresh daemon's first burst costs beyond a warm one's, in all (ms of CPU): median cold less median warm, times N. */
function coldExtraMs(rs: readonly DaemonRunResult[]): number | null {
  const [cold, warm] = [median(daemonCpu(rs, 'daemon', 'cold')), median(daemonCpu(rs))];
  return cold === null || warm === null ? null : (cold - warm) * rs[0]!.n;
}

function eventPathFigures(batch: readonly DaemonRunResult[], envelope: readonly DaemonRunResult[], auto: readonly DaemonRunResult[], signMs: number): Figure[] {
  const out: Figure[] = [];
  const row = (label: string, rs: readonly DaemonRunResult[], targets: boolean): void => {
    const r = rs[0]!;
    const note = `N=${fmtN(r.n)}, bulk jobs, ${fmtN(r.nostrEvents)} signed events${unfinished(r)}`;
    const cpu = daemonCpu(rs);
    const held = rs.map((x) => x.memory.perPendingSubjectHeld);
    const kept = rs.map((x) => x.memory.perPendingSubjectKept);
    // the breakdown of the run whose bytes are the median's (or nearest it)
    const mid = [...rs].sort((x, y) => x.memory.perPendingSubjectKept - y.memory.perPendingSubjectKept)[Math.floor((rs.length - 1) / 2)]!;
    out.push(
      figure(`event path, ${label}: throughput`, 'subjects/s', rs.map((x) => x.subjectsPerS), { n: r.n, load: r.load, note }),
      figure(`event path, ${label}: daemon CPU per subject`, 'ms', cpu, {
        n: r.n,
        load: r.load,
        digits: 3,
        target: targets ? { op: '<=', bound: EVENT_PATH_TARGETS.daemonCpuMs } : null,
        note: `${targets ? `bound: signing, ${signMs.toFixed(3)} ms a signature here (${fmtN(Math.round(1000 / Math.max(signMs, 1e-6)))}/s)` : note}${r.cpuCold !== null ? `; a warm daemon: the ${fmtN(r.n)} subjects after its first ${fmtN(r.n)}` : '; a fresh daemon'}; of it the main thread ${fmtMs(median(daemonCpu(rs, 'daemonMain')))}, the rest V8's helper threads (garbage collection, compilation) and libuv's pool; runs ${cpu.map((v) => v.toFixed(2)).join(', ')}`,
      }),
      ...(rs.some((x) => x.cpuCold !== null)
        ? [
            figure(`event path, ${label}: daemon CPU per subject, cold`, 'ms', daemonCpu(rs, 'daemon', 'cold'), {
              n: r.n,
              load: r.load,
              digits: 3,
              note: `the first ${fmtN(r.n)} subjects of a fresh daemon, V8 compiling its hot paths as they go (a one-off of each start: about ${coldExtraMs(rs) === null ? '—' : `${(coldExtraMs(rs)! / 1000).toFixed(1)} s`} of CPU more than warm); of it the main thread ${fmtMs(median(daemonCpu(rs, 'daemonMain', 'cold')))}; runs ${daemonCpu(rs, 'daemon', 'cold').map((v) => v.toFixed(2)).join(', ')}`,
            }),
          ]
        : []),
      figure(`event path, ${label}: Redis calls per subject`, 'calls', rs.map((x) => x.redisCommands.callsPerSubject), {
        n: r.n,
        load: r.load,
        target: targets ? { op: '<=', bound: EVENT_PATH_TARGETS.calls } : null,
        note: `most called: ${mostCalled(r, 4)}`,
      }),
      figure(`event path, ${label}: Redis per subject`, 'bytes', kept, {
        n: r.n,
        load: r.load,
        digits: 0,
        target: targets ? { op: '<=', bound: EVENT_PATH_TARGETS.bytes } : null,
        note: `what each subject keeps: INFO used_memory less client buffers, the script cache and the capped streams (MEMORY USAGE of the change stream and BullMQ's event streams: they stop growing at their caps), delta / subjects, when every subject was accepted by every relay; runs ${kept.map((b) => fmtN(Math.round(b))).join(', ')}${breakdownNote(mid)}`,
      }),
      figure(`event path, ${label}: Redis per subject, with the capped streams`, 'bytes', held, {
        n: r.n,
        load: r.load,
        digits: 0,
        note: `the same with the change stream and BullMQ's event streams as they filled over this run (the change stream holds the last ~100,000 subject events, then stops growing); runs ${held.map((b) => fmtN(Math.round(b))).join(', ')}`,
      }),
      figure(`event path, ${label}: Redis per subject, whole used_memory`, 'bytes', rs.map((x) => x.memory.perPendingSubject), {
        n: r.n,
        load: r.load,
        digits: 0,
        note: 'INFO used_memory delta / subjects at the same moment, client buffers and the script cache included',
      }),
    );
  };
  row('batch mode', batch, false);
  row('envelope mode', envelope, true);
  row('auto mode', auto, false);
  const [envCpu, batchCpu] = [median(daemonCpu(envelope)), median(daemonCpu(batch))];
  out.push(
    figure('event path: signing rate (the bound of envelope mode)', 'signatures/s', signMs > 0 ? [1000 / signMs] : [], {
      n: 1000,
      note: `one envelope event built and BIP-340 signed in the bench process: ${signMs.toFixed(3)} ms`,
    }),
    figure('event path: envelope / batch daemon CPU per subject', '×', envCpu !== null && batchCpu ? [envCpu / batchCpu] : [], { n: envelope[0]!.n, digits: 1, note: 'medians, same run' }),
  );
  return out;
}

/** Cost growth with N, bulk jobs. */
function growthFigures(sizes: number[], runs: Map<number, Timed<DaemonRunResult>[]>, batchN: number): Figure[] {
  const out: Figure[] = [];
  for (const n of sizes) {
    const all = runs.get(n);
    if (!all?.length) continue;
    const r0 = all[0]!.result;
    const fin = all.filter((r) => r.result.finished);
    const partial = r0.finished ? '' : ` (stopped at the time limit: ${fmtN(r0.done)} of ${fmtN(n)} done, ${fmtN(r0.accepted)} accepted in ${sec(r0.wallMs)})`;
    const label = `batch N=${fmtN(n)}, bulk`;
    out.push(
      figure(`${label}: wall time`, 's', fin.map((r) => r.result.wallMs / 1000), { n, digits: 2, load: r0.load, note: `enqueue → all accepted by the relays and held by the calendars${partial}` }),
      figure(`${label}: throughput`, 'subjects/s', r0.finished ? fin.map((r) => r.result.subjectsPerS) : [r0.subjectsPerS], {
        n,
        load: r0.load,
        target: n >= 10_000 ? { op: '>=', bound: TARGET_BULK_PER_S } : null,
        note: `${n >= 5_000 && r0.intakePerTenth.length ? `intake per tenth of N (accepted/s): ${r0.intakePerTenth.map((x) => (Number.isFinite(x) ? Math.round(x) : '—')).join(' ')}` : ''}${r0.finished ? '' : '; partial: done / time at the limit'}`,
      }),
      figure(`${label}: Redis per pending subject`, 'bytes', [r0.memory.perPendingSubject], {
        n,
        load: r0.load,
        digits: 0,
        note: `INFO used_memory delta / subjects accepted, when the clock stopped${r0.finished ? '' : ' (queued jobs not yet accepted included)'}`,
      }),
      perConfirmedFigure(`${label}: Redis per confirmed subject`, r0, true, n !== batchN),
      figure(`${label}: daemon RSS, all held by the witnesses`, 'MB', r0.daemonRssPendingBytes === null ? [] : [r0.daemonRssPendingBytes / MB], {
        n,
        load: r0.load,
        note: `VmRSS of the aer1-anchord child when the clock stopped (every subject sent, OTS pending); the RSS target is read with the witnesses held back: "daemon RSS, N subjects pending"${r0.finished ? '' : ` (${fmtN(r0.accepted)} subjects in state)`}`,
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
    // What one more confirmed subject costs: the two runs' deltas apart, over the subjects apart.
    // Each run starts on a fresh Redis, so what both pay once (the script cache, Redis's tables,
    // BullMQ's capped event streams) cancels; the per-N figures above carry it.
    if (first.memory.perConfirmedSubject !== null && r.memory.perConfirmedSubject !== null && r.finished) {
      const marginal = (r.memory.perConfirmedSubject * r.n - first.memory.perConfirmedSubject * first.n) / (r.n - first.n);
      out.push(
        figure(`growth ${fmtN(first.n)} → ${fmtN(n)}: Redis per confirmed subject, marginal`, 'bytes', [marginal], {
          n,
          digits: 0,
          target: { op: '<=', bound: TARGET_BYTES_CONFIRMED },
          note: `(confirmed delta at ${fmtN(n)} − at ${fmtN(first.n)}) / ${fmtN(n - first.n)}: the fixed costs both runs pay once cancel`,
        }),
      );
    }
  }
  return out;
}

function describeRun(t: Timed<DaemonRunResult>): void {
  const r = t.result;
  const tail = r.finished ? '' : ` — NOT FINISHED: ${fmtN(r.done)} of ${fmtN(r.n)} (${fmtN(r.accepted)} accepted)`;
  const conf = r.confirmMs !== null ? `; confirmed ${sec(r.confirmMs)} after mining, ${Math.round(r.memory.perConfirmedSubject ?? 0)} B/confirmed subject` : r.confirmed ? `; ${fmtN(r.confirmed)} confirmed` : '';
  const c = r.cpu;
  const how = r.mode === 'batch' ? `, ${r.intake === 'bulk' ? `bulk (${fmtN(r.jobs)} jobs)` : 'one job per subject'}, window ${r.windows.nostr}/${r.windows.ots} ms` : '';
  const logged = r.log ? `, logged ${sec(r.log.loggedMs)} (${r.log.checkpoints} checkpoints, acceptance → checkpoint p50 ${r.log.latencyMs?.p50 ?? '—'} p95 ${r.log.latencyMs?.p95 ?? '—'} ms)` : '';
  progress(
    `${r.mode}${how} N=${fmtN(r.n)}: ${sec(r.wallMs)} = ${Math.round(r.subjectsPerS)} subjects/s (enqueued ${sec(r.enqueuedMs)}, accepted ${sec(r.acceptedMs)}, nostr ${sec(r.nostrMs)}, ots ${sec(r.otsMs)}${logged}; ` +
      `${r.nostrEvents} events, ${r.otsBatches} calendar batches; CPU ms/subject daemon ${ms1(c.daemon)} redis ${ms1(c.redis)} peers ${ms1(c.peers)} bench ${ms1(c.bench)}; ` +
      `${r.redisCommands.callsPerSubject.toFixed(1)} Redis calls/subject, Redis CPU ${Math.round(r.redisInfoCpuMs * 1000)} µs/subject; Redis ${Math.round(r.memory.perPendingSubject)} B/subject; RSS ${r.daemonRssPendingBytes === null ? '?' : Math.round(r.daemonRssPendingBytes / MB)} MB${conf}; ${sec(t.totalMs)} with setup)${tail}`,
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
