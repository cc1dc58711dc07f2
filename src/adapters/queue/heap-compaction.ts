/**
 * A full garbage collection once an intake burst has drained. Taking in a bulk job keeps its
 * subjects (job data, claims, results) alive across many Redis round trips, so V8 promotes
 * them to the old generation, where they die; with the intake then idle nothing allocates and
 * nothing collects them: measured (bench/memory-run.ts), 100,000 subjects pending left the
 * daemon at ~270 MB resident for 30 s and more, ~140 MB after one full collection, with the
 * live heap (heapUsed) ~20 MB either way. So, when the intake has been quiet for a moment after
 * at least `minSubjects` subjects since the last one, one collection (a few tens of ms with that
 * little live). Node exposes it without `--expose-gc` the way jest-leak-detector does.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Worker } from 'bullmq';
import type { Logger } from 'pino';

/** Subjects taken in since the last collection before a quiet intake collects again. */
export const COMPACT_AFTER_SUBJECTS = 10_000;
/** How long the intake finishes no job before it counts as quiet. */
export const COMPACT_QUIET_MS = 500;

let collect: (() => void) | null | undefined;

/** The engine's full collection, or null when it cannot be had. */
export function fullGc(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return (collect = exposed);
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    collect = typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    collect = null;
  }
  return collect;
}

/** Two full collections now, when they can be had (what a quiet intake runs). */
export function compactNow(gc: (() => void) | null = fullGc()): boolean {
  if (!gc) return false;
  // twice: the first frees the dead old generation, the second compacts what is left and
  // gives the emptied pages back (measured: ~156 MB after one, ~148 MB after two at 100,000)
  gc();
  gc();
  return true;
}

/** Subjects a finished intake job carried: a bulk job's count, else 1. */
function subjectsOf(returnvalue: unknown): number {
  if (returnvalue !== null && typeof returnvalue === 'object' && 'bulk' in returnvalue && 'subjects' in returnvalue) {
    const n = (returnvalue as { subjects: unknown }).subjects;
    return typeof n === 'number' && n > 0 ? n : 1;
  }
  return 1;
}

/**
 * Collects once `worker` has finished no job for `quietMs` after at least `minSubjects`
 * subjects since the last collection; returns how many collections ran (for tests).
 */
export function compactAfterBursts(worker: Worker, log: Logger, opts: { minSubjects?: number; quietMs?: number; gc?: (() => void) | null } = {}): { collections(): number } {
  const minSubjects = opts.minSubjects ?? COMPACT_AFTER_SUBJECTS;
  const quietMs = opts.quietMs ?? COMPACT_QUIET_MS;
  const gc = opts.gc === undefined ? fullGc() : opts.gc;
  let since = 0;
  let runs = 0;
  let timer: NodeJS.Timeout | null = null;
  const quiet = (): void => {
    timer = null;
    if (since < minSubjects || !gc) return;
    since = 0;
    const t0 = performance.now();
    compactNow(gc);
    runs++;
    log.debug({ ms: Math.round(performance.now() - t0) }, 'intake quiet: full garbage collection');
  };
  const finished = (n: number): void => {
    since += n;
    if (timer) clearTimeout(timer);
    timer = setTimeout(quiet, quietMs);
    timer.unref();
  };
  if (gc) {
    worker.on('completed', (_job, returnvalue: unknown) => finished(subjectsOf(returnvalue)));
    worker.on('failed', () => finished(1));
    worker.on('closed', () => {
      if (timer) clearTimeout(timer);
      timer = null;
    });
  }
  return { collections: () => runs };
}
