/**
 * Auto mode's rule (docs/nostr.md): a cut gets one event per subject when it fits in what
 * the relays' rate sends within the horizon, on top of the larger of the slowest relay's
 * backlog and the events already queued within the horizon; else one batch event.
 */
import { describe, expect, it } from 'vitest';
import { autoBudget, autoMode } from '../../../src/core/nostr/auto-mode.js';

describe('auto mode rule', () => {
  it('budgets the rate over the horizon, never below one event', () => {
    expect(autoBudget(6, 60_000)).toBe(6);
    expect(autoBudget(6, 10_000)).toBe(1);
    expect(autoBudget(1, 1000)).toBe(1);
    expect(autoBudget(200, 3000)).toBe(10);
  });

  it('gives per-subject events up to the budget, a batch event beyond it', () => {
    const at = (cutSize: number, backlog: number, recent: number) => autoMode({ cutSize, backlog, recent, ratePerMinute: 6, horizonMs: 60_000 }).mode;
    expect(at(1, 0, 0)).toBe('envelope');
    expect(at(6, 0, 0)).toBe('envelope');
    expect(at(7, 0, 0)).toBe('batch');
    expect(at(5000, 0, 0)).toBe('batch');
    // a relay still holding 5 events, or 5 sent within the last minute, leaves room for one
    expect(at(1, 5, 0)).toBe('envelope');
    expect(at(2, 5, 0)).toBe('batch');
    expect(at(1, 0, 5)).toBe('envelope');
    expect(at(1, 0, 6)).toBe('batch');
    // what is queued within the horizon is mostly what is waiting: the larger counts, not the sum
    expect(autoMode({ cutSize: 1, backlog: 4, recent: 5, ratePerMinute: 6, horizonMs: 60_000 })).toEqual({ mode: 'envelope', budget: 6, load: 5 });
  });
});
