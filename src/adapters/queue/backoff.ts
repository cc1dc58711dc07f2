/** Exponential backoff with a cap and ±20% jitter: attempt 1 waits about `initialMs`. */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(maxMs, initialMs * 2 ** Math.max(0, Math.min(attempt - 1, 40)));
  const jitter = 0.8 + 0.4 * random();
  return Math.max(1, Math.round(Math.min(maxMs, exp * jitter)));
}
