/**
 * What a Redis error says about Redis rather than about the request: out of memory under
 * `noeviction`, a read-only replica, unable to persist, busy or loading, unreachable, or not
 * answering in time. The HTTP API answers these 503 with `Retry-After`; anything else is a
 * fault of ours.
 */
export type RefusalKind = 'out_of_memory' | 'read_only' | 'not_persisting' | 'busy' | 'unavailable' | 'timeout';

export interface RedisRefusal {
  kind: RefusalKind;
  /** Redis answered and refused a write (as opposed to not answering at all). */
  writesRefused: boolean;
  /** One line for people: what Redis said or did, bounded, without a script's sha or line. */
  detail: string;
  /** The command may have reached Redis and be applied when it answers again (it timed out, or the connection dropped under it). */
  maybeApplied: boolean;
  /** When a client should try again. */
  retryAfterSeconds: number;
}

/** A refused write needs memory freed or an operator; a Redis that is away usually comes back in seconds. */
export const RETRY_AFTER_REFUSED_S = 10;
export const RETRY_AFTER_AWAY_S = 5;

const MAX_DETAIL = 200;

/** Redis reply prefixes that refuse the command because of the server's state. */
const REPLY_KINDS: ReadonlyArray<[RegExp, RefusalKind, boolean]> = [
  [/^OOM\b/, 'out_of_memory', true],
  [/^READONLY\b/, 'read_only', true],
  [/^MISCONF\b/, 'not_persisting', true],
  [/^NOREPLICAS\b/, 'not_persisting', true],
  [/^(BUSY|LOADING|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)\b/, 'busy', false],
];

/** A connection that could not be made (the command was never sent)... */
const NOT_SENT = [
  /\bECONNREFUSED\b|\bEHOSTUNREACH\b|\bENOTFOUND\b/,
  /^Cluster isn't ready/,
  /^Failed to refresh slots cache/,
  /^None of startup nodes is available/,
  /^Cluster is (disconnected|disconnecting|ended)\b/,
  /^Node is disconnected/,
  // a slot moving under a cluster client (resharding, failover): ioredis follows MOVED/ASK itself, so one that surfaces is a storm
  /^(MOVED|ASK) \d{1,5} /,
];
/** ...or that dropped while the command waited for its answer. */
const LOST = [/^Connection is closed/, /^Reached the max retries per request limit/, /\bECONNRESET\b|\bEPIPE\b|\bETIMEDOUT\b/];

/**
 * What ioredis and BullMQ put in front of Redis's own words: the cluster client's
 * "Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN …", a job scheduler's
 * "Failed to add repeatable job for next iteration: OOM …", and error class names.
 */
const WRAPPERS = [/^Too many Cluster redirections\. Last error: /, /^Failed to add repeatable job for next iteration: /, /^(?:ReplyError|RedisError|AbortError|ClusterAllFailedError|MaxRetriesPerRequestError|Error): /];

/** The message with its wrappers taken off, then the errors it carries (`lastNodeError`, `cause`, an AggregateError's `errors`): bounded. */
function messagesOf(err: unknown): string[] {
  const out: string[] = [];
  const queue: unknown[] = [err];
  for (let i = 0; i < queue.length && out.length < 8; i++) {
    const e = queue[i];
    if (!(e instanceof Error)) continue;
    let m = e.message;
    for (let round = 0; round < 4; round++) {
      const w = WRAPPERS.find((p) => p.test(m));
      if (!w) break;
      m = m.replace(w, '');
    }
    out.push(m);
    const carried = e as Error & { lastNodeError?: unknown; errors?: unknown };
    if (carried.lastNodeError !== undefined) queue.push(carried.lastNodeError);
    if (e.cause !== undefined) queue.push(e.cause);
    if (Array.isArray(carried.errors)) queue.push(...carried.errors.slice(0, 4));
  }
  return out;
}

function bounded(text: string): string {
  // a script's refusal names its sha and line: noise for the reader
  const line = text.split('\n')[0]!.replace(/\s*script: [0-9a-f]{40}, on @user_script:\d+\.?$/, '');
  return line.length > MAX_DETAIL ? `${line.slice(0, MAX_DETAIL)}…` : line;
}

/**
 * The one classifier of Redis refusals: Redis's reply words and the client's connection
 * words, found at the start of the message once ioredis's wrappers are taken off, or in an
 * error the message carries. Refusals of the server's state come before connection loss, so
 * "CLUSTERDOWN" under "Too many Cluster redirections" says busy, not unreachable.
 */
export function redisRefusal(err: unknown): RedisRefusal | null {
  const messages = messagesOf(err);
  for (const message of messages) {
    const detail = bounded(message);
    for (const [pattern, kind, writesRefused] of REPLY_KINDS) {
      if (pattern.test(message)) return { kind, writesRefused, detail, maybeApplied: false, retryAfterSeconds: writesRefused ? RETRY_AFTER_REFUSED_S : RETRY_AFTER_AWAY_S };
    }
  }
  for (const message of messages) {
    const detail = bounded(message);
    const away = { writesRefused: false, detail, retryAfterSeconds: RETRY_AFTER_AWAY_S };
    if (/^Command timed out/.test(message)) return { kind: 'timeout', maybeApplied: true, ...away };
    // ioredis's words for a fail-fast connection that is down say nothing to an operator
    if (/^Stream isn't writeable/.test(message)) return { kind: 'unavailable', maybeApplied: false, ...away, detail: 'not connected (the connection is down or being re-established)' };
    if (/^Reached the max retries per request limit/.test(message)) return { kind: 'unavailable', maybeApplied: true, ...away, detail: 'the connection dropped while a command waited for its answer' };
    if (NOT_SENT.some((p) => p.test(message))) return { kind: 'unavailable', maybeApplied: false, ...away };
    if (LOST.some((p) => p.test(message))) return { kind: 'unavailable', maybeApplied: true, ...away };
  }
  return null;
}

/** One sentence naming the refusal, for a 503's message and `/readyz`. */
export function describeRefusal(r: RedisRefusal, timeoutMs: number): string {
  switch (r.kind) {
    case 'out_of_memory':
      return `Redis refuses writes: it is out of memory (maxmemory reached, noeviction): ${r.detail}`;
    case 'read_only':
      return `Redis refuses writes: it is a read-only replica: ${r.detail}`;
    case 'not_persisting':
      return `Redis refuses writes: it cannot persist them: ${r.detail}`;
    case 'busy':
      return `Redis is busy and refuses commands for now: ${r.detail}`;
    case 'timeout':
      return `Redis did not answer within ${timeoutMs} ms (http.redisTimeoutMs)`;
    case 'unavailable':
      return `Redis is unreachable: ${r.detail}`;
  }
}
