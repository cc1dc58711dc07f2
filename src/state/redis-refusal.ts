/**
 * Redis refusing or unreachable, as opposed to a command that is wrong: a full Redis under
 * `noeviction` (OOM), a replica or a failover (READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN),
 * a Redis still loading or blocked (LOADING, BUSY), a failed disk (MISCONF), or a dropped
 * connection. Such a failure passes once Redis takes writes again, so work that met it is
 * retried, never given up on.
 */
const REFUSALS: ReadonlyArray<[RegExp, RedisRefusal]> = [
  [/\bOOM\b|used memory > 'maxmemory'/, 'full'],
  [/^(?:ERR .*)?\b(?:READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOREPLICAS)\b/, 'read-only'],
  [/\b(?:LOADING|BUSY|MISCONF)\b/, 'busy'],
  [/Connection is closed|Stream isn't writeable|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|Reached the max retries per request|Command timed out/, 'unreachable'],
];

export type RedisRefusal = 'full' | 'read-only' | 'busy' | 'unreachable';

/** What kind of Redis refusal `err` is, or null for any other error. */
export function redisRefusal(err: unknown): RedisRefusal | null {
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : '';
  const code = (err as { code?: unknown } | null)?.code;
  for (const [pattern, kind] of REFUSALS) if (pattern.test(message) || (typeof code === 'string' && pattern.test(code))) return kind;
  return null;
}
