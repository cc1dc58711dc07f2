/**
 * How a crashed daemon's in-flight jobs come back (`queue.stalledIntervalMs`): every worker
 * holds its job's lock for `lockDuration` (renewed while it runs) and looks for expired
 * locks every `stalledInterval`; a job whose lock expired goes back to its queue.
 */
export interface StalledJobOptions {
  stalledInterval: number;
  lockDuration: number;
  maxStalledCount: number;
}

/**
 * Every job here is idempotent (accept, publish, submit, poll), so one caught in several
 * crashes is handed back each time; BullMQ's default (1) would fail and drop it on the second.
 */
export const MAX_STALLED_COUNT = 1000;

export function stalledJobOptions(stalledIntervalMs: number): StalledJobOptions {
  return { stalledInterval: stalledIntervalMs, lockDuration: Math.max(stalledIntervalMs, 5000), maxStalledCount: MAX_STALLED_COUNT };
}
