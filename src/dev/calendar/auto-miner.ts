/**
 * Mines a regtest block on a dev calendar on a schedule, while it holds commitments, so a
 * calendar left running confirms on its own (`dev-calendar --mine-every`, `dev-stack`).
 */
import type { DevCalendar, MineResult } from './dev-calendar.js';

export interface AutoMiner {
  /** Stops the schedule and waits for a mine in progress. */
  stop(): Promise<void>;
}

export interface AutoMinerHooks {
  onMined?: (calendar: DevCalendar, block: MineResult) => void;
  onError?: (calendar: DevCalendar, err: Error) => void;
}

/** Every `everyMs`, mines on `calendar` if it has pending commitments; one mine at a time. */
export function startAutoMiner(calendar: DevCalendar, everyMs: number, hooks: AutoMinerHooks = {}): AutoMiner {
  if (!Number.isInteger(everyMs) || everyMs < 1) throw new RangeError(`everyMs must be a positive integer, got ${everyMs}`);
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running || calendar.pendingCount() === 0) return;
    running = calendar.mine().then(
      (block) => hooks.onMined?.(calendar, block),
      (err: unknown) => hooks.onError?.(calendar, err instanceof Error ? err : new Error(String(err))),
    ).finally(() => {
      running = null;
    });
  }, everyMs);
  let stopped: Promise<void> | null = null;
  return {
    stop() {
      stopped ??= (async () => {
        clearInterval(timer);
        await running;
      })();
      return stopped;
    },
  };
}
