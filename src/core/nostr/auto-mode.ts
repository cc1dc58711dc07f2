/**
 * Auto mode (SPEC §4.1, docs/nostr.md "Auto mode"): at each batch cut, one event per
 * subject while the relays' rate budget allows it, else one batch event for the cut.
 * Pure: the caller reads the relay queues' backlog and records the decision.
 */

export type NostrEventMode = 'envelope' | 'batch';

export interface AutoModeInput {
  /** Subjects in the cut. */
  cutSize: number;
  /** Events still to send on the slowest relay (the longest publish queue). */
  backlog: number;
  /** nostr.ratePerMinute: events each relay is sent per minute. */
  ratePerMinute: number;
  /** nostr.autoHorizonMs: how far ahead the budget looks. */
  horizonMs: number;
}

/** Events one relay can be sent within the horizon at its rate; never less than one. */
export function autoBudget(ratePerMinute: number, horizonMs: number): number {
  return Math.max(1, Math.floor((ratePerMinute * horizonMs) / 60_000));
}

/**
 * `envelope` when the cut's per-subject events, queued behind the slowest relay's backlog,
 * can all be sent within the horizon (cutSize + backlog <= budget); else `batch`.
 */
export function autoMode(input: AutoModeInput): { mode: NostrEventMode; budget: number } {
  const budget = autoBudget(input.ratePerMinute, input.horizonMs);
  return { mode: input.cutSize + input.backlog <= budget ? 'envelope' : 'batch', budget };
}
