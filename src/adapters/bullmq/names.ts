/** Queue and job names: the intake queue issuers use, and the daemon's internal work queues. */

/** The job name issuers use on the intake queue (SPEC section 7). */
export const ANCHOR_JOB = 'anchor';

export function nostrBatchQueueName(base: string): string {
  return `${base}-nostr`;
}

export function otsQueueName(base: string): string {
  return `${base}-ots`;
}

/** The reconciler's queue: one job scheduler, one pass at a time across daemons. */
export function reconcileQueueName(base: string): string {
  return `${base}-reconcile`;
}

/** One delivery queue per webhook, named by its hook id (a hash of the URL: no credential or query in a key). */
export function webhookQueueName(base: string, hookId: string): string {
  return `${base}-wh-${hookId}`;
}

/** Retention's queue: one job scheduler, one pass at a time across daemons. */
export function retentionQueueName(base: string): string {
  return `${base}-retention`;
}

/** Relay upkeep's queue: one job scheduler, one pass at a time across daemons. */
export function upkeepQueueName(base: string): string {
  return `${base}-upkeep`;
}
