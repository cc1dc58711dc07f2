/**
 * Auto mode's rule (docs/nostr.md): a cut gets one event per subject when it and the slowest
 * relay's backlog fit in what the relay's rate sends within the horizon; else one batch event.
 */
import { describe, expect, it } from 'vitest';
import { autoBudget, autoMode } from '../../../src/core/nostr/auto-mode.js';

describe('auto mode rule', () => {
  it('budgets the rate over the horizon, never below one event', () => {
    expect(autoBudget(6, 60_000)).toBe(6);
    expect(autoBudget(6, 10_000)).toBe(1);
    expect(autoBudget(1, 1000)).toBe(1);
    expect(autoBudget(30, 10_000)).toBe(5);
  });

  it('gives per-subject events up to the budget, a batch event beyond it', () => {
    const at = (cutSize: number, backlog: number) => autoMode({ cutSize, backlog, ratePerMinute: 6, horizonMs: 60_000 }).mode;
    expect(at(1, 0)).toBe('envelope');
    expect(at(6, 0)).toBe('envelope');
    expect(at(7, 0)).toBe('batch');
    expect(at(1, 5)).toBe('envelope');
    expect(at(1, 6)).toBe('batch');
    expect(at(5000, 0)).toBe('batch');
  });

  it('a quiet issuer at the rate stays per-subject: the queue never holds more than the budget', () => {
    // One subject per cut, the relay sending one event per cut interval: the backlog stays 0.
    expect(autoMode({ cutSize: 1, backlog: 0, ratePerMinute: 6, horizonMs: 60_000 })).toEqual({ mode: 'envelope', budget: 6 });
  });
});
