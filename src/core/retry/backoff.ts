/**
 * The one retry delay every retrying part of the daemon uses (relay publishes, calendar
 * submissions and upgrade polls, intake jobs Redis refused, relay rate-limit pauses,
 * webhook deliveries): exponential from `initialMs`, doubling per attempt, capped at
 * `maxMs`, then stretched by a random 0 to `jitter` (default 20%) so that many jobs failing
 * together do not come back together. Jitter only lengthens: a delay is never shorter than
 * its nominal value, so "wait at least N ms" (a relay's rate limit) and "keep retrying for
 * at least H ms" (a webhook's horizon, `attemptsForHorizon`) hold. Pure: no clock, no I/O.
 */

/** The default spread: a delay is its nominal value times 1.0 to 1.2. */
export const BACKOFF_JITTER = 0.2;

/** Doublings past this many attempts change nothing (the cap is reached long before). */
const MAX_DOUBLINGS = 40;

export interface BackoffOptions {
  /** Fraction the delay is stretched by at most (0: none); default BACKOFF_JITTER. */
  jitter?: number;
  /** Source of randomness in [0, 1) (tests pin it). */
  random?: () => number;
}

/** The delay without jitter after `attempt` failed attempts (1, 2, ...): initialMs·2^(attempt−1), at most maxMs. */
export function nominalBackoff(attempt: number, initialMs: number, maxMs: number): number {
  const doublings = Math.max(0, Math.min(Math.floor(attempt) - 1, MAX_DOUBLINGS));
  return Math.max(1, Math.min(maxMs, initialMs * 2 ** doublings));
}

/**
 * How long to wait after `attempt` failed attempts before the next one: attempt 1 waits
 * initialMs (to initialMs·(1+jitter)), attempt 2 twice that, ..., never more than
 * maxMs·(1+jitter). Whole milliseconds, at least 1.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, opts: BackoffOptions = {}): number {
  const jitter = Math.max(0, opts.jitter ?? BACKOFF_JITTER);
  const random = opts.random ?? Math.random;
  return Math.max(1, Math.round(nominalBackoff(attempt, initialMs, maxMs) * (1 + jitter * random())));
}

/**
 * The fewest attempts whose waits in between (nominal, so jitter only adds) add up to at
 * least `horizonMs`: retries keep going at least that long, the waits capped at maxMs.
 * At least 1 (horizon 0: one attempt, no retry).
 */
export function attemptsForHorizon(horizonMs: number, initialMs: number, maxMs: number): number {
  let waited = 0;
  let attempts = 1;
  // doubling phase: at most MAX_DOUBLINGS + 1 steps
  while (waited < horizonMs && nominalBackoff(attempts, initialMs, maxMs) < maxMs && attempts <= MAX_DOUBLINGS + 1) {
    waited += nominalBackoff(attempts, initialMs, maxMs);
    attempts += 1;
  }
  if (waited >= horizonMs) return attempts;
  // capped phase: every wait is maxMs (or the last doubling value when the loop stopped on the bound)
  const step = nominalBackoff(attempts, initialMs, maxMs);
  return attempts + Math.ceil((horizonMs - waited) / step);
}

/** Sum of the nominal waits before attempt `attempts` (what attemptsForHorizon measures). */
export function nominalRetrySpan(attempts: number, initialMs: number, maxMs: number): number {
  let total = 0;
  for (let a = 1; a < attempts && a <= 1_000_000; a++) total += nominalBackoff(a, initialMs, maxMs);
  return total;
}
