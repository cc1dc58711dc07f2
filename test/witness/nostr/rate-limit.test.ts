import { describe, expect, it } from 'vitest';
import { RateLimitWaitError, TokenBucket } from '../../../src/witness/nostr/rate-limit.js';

/** A fake clock with fake timers: `sleep` schedules, `runTimers` moves time to each in order. */
function fakeClock(start = 1_000_000) {
  let t = start;
  const sleeps: number[] = [];
  const timers: Array<{ at: number; fire: () => void }> = [];
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        sleeps.push(ms);
        timers.push({ at: t + ms, fire: resolve });
      }),
    /** Fires every scheduled timer in time order (bounded), letting awaiting code run between. */
    async runTimers() {
      for (let i = 0; i < 100 && timers.length > 0; i++) {
        timers.sort((a, b) => a.at - b.at);
        const next = timers.shift()!;
        t = Math.max(t, next.at);
        next.fire();
        await new Promise((r) => setImmediate(r));
      }
    },
    sleeps,
  };
}

describe('TokenBucket', () => {
  it('lets a burst through at once, then one token per interval', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ ratePerMinute: 6, burst: 3, now: clock.now });
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([0, 0, 0]);
    expect(bucket.tryTake()).toBe(10_000);
    clock.advance(4_000);
    expect(bucket.tryTake()).toBe(6_000);
    clock.advance(6_000);
    expect(bucket.tryTake()).toBe(0);
    expect(bucket.tryTake()).toBe(10_000);
  });

  it('never holds more than the burst after a quiet spell', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ ratePerMinute: 60, burst: 2, now: clock.now });
    clock.advance(3_600_000);
    expect(bucket.tokens).toBe(2);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([0, 0, 1_000]);
  });

  it('queues takers first come first served by reserving tokens', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ ratePerMinute: 12, burst: 1, now: clock.now, sleep: clock.sleep });
    await bucket.take();
    // three waiters reserve the next three tokens: 5 s, 10 s, 15 s from now
    const order: number[] = [];
    const started = clock.now();
    const waits = [3, 1, 2].map((n) => ({ n, p: bucket.take() }));
    for (const w of waits) void w.p.then(() => order.push(w.n));
    expect(clock.sleeps).toEqual([5_000, 10_000, 15_000]);
    expect(bucket.tryTake()).toBe(20_000); // a newcomer queues behind all three
    await clock.runTimers();
    await Promise.all(waits.map((w) => w.p));
    expect(order).toEqual([3, 1, 2]);
    expect(clock.now() - started).toBe(15_000);
    expect(bucket.tryTake()).toBe(5_000);
  });

  it('refuses a wait longer than the limit without reserving', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ ratePerMinute: 1, burst: 1, now: clock.now, sleep: clock.sleep, maxWaitMs: 30_000 });
    await bucket.take();
    await expect(bucket.take()).rejects.toBeInstanceOf(RateLimitWaitError);
    await expect(bucket.take({ maxWaitMs: 1_000 })).rejects.toThrow(/next token in 60000 ms, over the 1000 ms wait limit/);
    expect(bucket.tryTake()).toBe(60_000);
    clock.advance(60_000);
    expect(bucket.tryTake()).toBe(0);
  });

  it('gives the reservation back when the wait is aborted', async () => {
    const clock = fakeClock();
    let release: (() => void) | undefined;
    const bucket = new TokenBucket({
      ratePerMinute: 60,
      burst: 1,
      now: clock.now,
      sleep: () => new Promise<void>((resolve) => (release = resolve)),
    });
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take({ signal: ac.signal });
    expect(bucket.tryTake()).toBe(2_000); // behind the waiter
    ac.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    expect(bucket.tryTake()).toBe(1_000);
    release?.();
  });

  it('refuses nonsense settings', () => {
    expect(() => new TokenBucket({ ratePerMinute: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucket({ ratePerMinute: Number.NaN, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucket({ ratePerMinute: 6, burst: 0 })).toThrow(RangeError);
    expect(() => new TokenBucket({ ratePerMinute: 6, burst: 1.5 })).toThrow(RangeError);
  });

  it('waits on the real clock by default (short rate)', async () => {
    const bucket = new TokenBucket({ ratePerMinute: 60_000, burst: 1 });
    await bucket.take();
    await expect(bucket.take()).resolves.toBeUndefined(); // a real 1 ms timer
  });
});
