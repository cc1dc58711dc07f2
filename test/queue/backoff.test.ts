/**
 * The one backoff every retrying part of the daemon uses (src/core/retry/backoff.ts):
 * doubling from the first delay, capped, jitter that only lengthens, and the attempts a
 * retry horizon needs.
 */
import { describe, expect, it } from 'vitest';
import { attemptsForHorizon, backoffDelay, nominalBackoff, nominalRetrySpan } from '../../src/core/retry/backoff.js';

describe('backoffDelay', () => {
  it('waits twice as long after each failed attempt, up to the cap (no jitter)', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, 1000, 10_000, { jitter: 0 }))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
    // a huge attempt number neither overflows nor passes the cap
    expect(backoffDelay(10_000, 1000, 10_000, { jitter: 0 })).toBe(10_000);
  });

  it('stretches by 0 to 20% by default and never waits less than the nominal delay', () => {
    expect(backoffDelay(3, 1000, 60_000, { random: () => 0 })).toBe(4000);
    expect(backoffDelay(3, 1000, 60_000, { random: () => 0.999_999 })).toBe(4800);
    expect(backoffDelay(9, 1000, 60_000, { random: () => 0.5 })).toBe(66_000);
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(1 + (i % 12), 50, 2000);
      const nominal = nominalBackoff(1 + (i % 12), 50, 2000);
      expect(d).toBeGreaterThanOrEqual(nominal);
      expect(d).toBeLessThanOrEqual(Math.round(nominal * 1.2));
    }
  });
});

describe('attemptsForHorizon', () => {
  it('gives the fewest attempts whose waits reach the horizon', () => {
    // 1 + 2 + 4 + 8 = 15 s of waits between 5 attempts; 16 s needs a sixth
    expect(attemptsForHorizon(15_000, 1000, 60_000)).toBe(5);
    expect(attemptsForHorizon(16_000, 1000, 60_000)).toBe(6);
    expect(attemptsForHorizon(0, 1000, 60_000)).toBe(1);
    for (const [h, a, b] of [[3 * 86_400_000, 1000, 300_000], [120_000, 20, 200], [3_600_000, 10, 10]] as const) {
      const n = attemptsForHorizon(h, a, b);
      expect(nominalRetrySpan(n, a, b)).toBeGreaterThanOrEqual(h);
      expect(nominalRetrySpan(n - 1, a, b)).toBeLessThan(h);
    }
  });

  it('keeps a webhook retrying for 3 days with the default timings, where 8 attempts gave up after about 2 minutes', () => {
    // 1 + 2 + ... + 32 = 63 s over 7 attempts, then (259,200 − 63) / 60 s: 4,319 more
    expect(attemptsForHorizon(3 * 86_400_000, 1000, 60_000)).toBe(4326);
    // the old budget: 1 + 2 + 4 + 8 + 16 + 32 + 60 s
    expect(nominalRetrySpan(8, 1000, 60_000)).toBe(123_000);
  });
});
