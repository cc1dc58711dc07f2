/**
 * A wait that another part can end early: a retry loop's pause that a stop (or new work)
 * cuts short instead of waiting it out. One wait at a time; `end()` with none is a no-op.
 */
export class Pause {
  private wake: (() => void) | null = null;

  /** Resolves after `ms`, or as soon as `end()` is called. */
  for(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /** Ends the wait in progress, if any. */
  end(): void {
    this.wake?.();
  }
}
