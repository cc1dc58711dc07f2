/**
 * How a crashed daemon's in-flight jobs come back (`queue.stalledIntervalMs`): every worker
 * holds its job's lock for `lockDuration` (renewed while it runs) and looks for expired
 * locks every `stalledInterval`; a job whose lock expired goes back to its queue.
 */
export interface StalledJobOptions {
  stalledInterval: number;
  lockDuration: number;
}

export function stalledJobOptions(stalledIntervalMs: number): StalledJobOptions {
  return { stalledInterval: stalledIntervalMs, lockDuration: Math.max(stalledIntervalMs, 5000) };
}
