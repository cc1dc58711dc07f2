/**
 * A token bucket for per-relay write limits (public relays accept a handful of
 * events per minute per key). Clock and sleep are injectable so tests run on a
 * fake clock; no timers are held when nobody waits.
 */

export interface TokenBucketOptions {
  /** Tokens added per minute (> 0). */
  ratePerMinute: number;
  /** Bucket size: how many writes may go at once after a quiet spell (integer ≥ 1). */
  burst: number;
  /** Milliseconds clock; `Date.now` by default. */
  now?: () => number;
  /** Sleep used by `take`; a real timer by default. */
  sleep?: (ms: number) => Promise<void>;
  /** Longest `take` may wait before giving up (default 10 minutes). */
  maxWaitMs?: number;
}

export class RateLimitWaitError extends Error {
  readonly waitMs: number;
  constructor(waitMs: number, maxWaitMs: number) {
    super(`rate limit: next token in ${Math.ceil(waitMs)} ms, over the ${maxWaitMs} ms wait limit`);
    this.name = 'RateLimitWaitError';
    this.waitMs = waitMs;
  }
}

export class TokenBucket {
  readonly ratePerMinute: number;
  readonly burst: number;
  readonly maxWaitMs: number;
  readonly #msPerToken: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  /** May go below zero: each waiting `take` holds a reservation. */
  #tokens: number;
  #updatedAt: number;

  constructor(options: TokenBucketOptions) {
    const { ratePerMinute, burst } = options;
    if (typeof ratePerMinute !== 'number' || !Number.isFinite(ratePerMinute) || ratePerMinute <= 0) {
      throw new RangeError('ratePerMinute must be a positive number');
    }
    if (!Number.isSafeInteger(burst) || burst < 1) throw new RangeError('burst must be an integer ≥ 1');
    const maxWaitMs = options.maxWaitMs ?? 600_000;
    if (!Number.isFinite(maxWaitMs) || maxWaitMs < 0) throw new RangeError('maxWaitMs must be a non-negative number');
    this.ratePerMinute = ratePerMinute;
    this.burst = burst;
    this.maxWaitMs = maxWaitMs;
    this.#msPerToken = 60_000 / ratePerMinute;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#tokens = burst;
    this.#updatedAt = this.#now();
  }

  /** Tokens available now (fractional; negative while takers wait). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  /**
   * Takes a token if one is available and returns 0; otherwise takes nothing and
   * returns the milliseconds until one will be (queued `take`s come first).
   */
  tryTake(): number {
    this.#refill();
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.#tokens) * this.#msPerToken);
  }

  /**
   * Waits for a token, first come first served. Rejects with `RateLimitWaitError`,
   * reserving nothing, when the wait would exceed `maxWaitMs` (per call or the
   * bucket's), and gives the reservation back if `signal` aborts.
   */
  async take(options: { maxWaitMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    const maxWaitMs = options.maxWaitMs ?? this.maxWaitMs;
    options.signal?.throwIfAborted();
    this.#refill();
    const waitMs = this.#tokens >= 1 ? 0 : Math.ceil((1 - this.#tokens) * this.#msPerToken);
    if (waitMs > maxWaitMs) throw new RateLimitWaitError(waitMs, maxWaitMs);
    // reserve now: later callers see the debt and queue behind this one
    this.#tokens -= 1;
    if (waitMs === 0) return;
    const signal = options.signal;
    if (!signal) {
      await this.#sleep(waitMs);
      return;
    }
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([this.#sleep(waitMs), aborted]);
    } catch (err) {
      this.#tokens += 1;
      throw err;
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = now - this.#updatedAt;
    if (elapsed > 0) {
      this.#tokens = Math.min(this.burst, this.#tokens + elapsed / this.#msPerToken);
      this.#updatedAt = now;
    }
  }
}
