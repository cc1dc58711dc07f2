/**
 * Auto mode (SPEC §4.1, docs/nostr.md "Auto mode"): at each batch cut, one event per
 * subject while the relays' rate budget allows it, else one batch event for the cut.
 * Pure: the caller reads the relay queues and records the decision.
 */

export type NostrEventMode = 'envelope' | 'batch';

export interface AutoModeInput {
  /** Subjects in the cut. */
  cutSize: number;
  /** Events still to send on the slowest relay (the longest publish queue). */
  backlog: number;
  /** Events queued for the relays within the last horizon (sent or not): the budget they used. */
  recent: number;
  /** nostr.ratePerMinute: events each relay is sent per minute. */
  ratePerMinute: number;
  /** nostr.autoHorizonMs: the window the budget covers. */
  horizonMs: number;
}

/** Events one relay can be sent within the horizon at its rate; never less than one. */
export function autoBudget(ratePerMinute: number, horizonMs: number): number {
  return Math.max(1, Math.floor((ratePerMinute * horizonMs) / 60_000));
}

/**
 * `envelope` when the cut's per-subject events fit in the budget on top of what the relays
 * already have to carry: the larger of the slowest relay's backlog and the events queued
 * within the last horizon (cutSize + max(backlog, recent) <= budget); else `batch`.
 */
export function autoMode(input: AutoModeInput): { mode: NostrEventMode; budget: number; load: number } {
  const budget = autoBudget(input.ratePerMinute, input.horizonMs);
  const load = Math.max(input.backlog, input.recent);
  return { mode: input.cutSize + load <= budget ? 'envelope' : 'batch', budget, load };
}
