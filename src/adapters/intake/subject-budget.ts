/**
 * The subjects of intake jobs one worker holds at once, bounded (queue.maxSubjectsInFlight).
 * A job takes as many places as it carries subjects (a single-subject job one, a bulk job its
 * length) and gives them back when it ends; a job that does not fit waits, first come first
 * served. A job carrying more than the bound takes all of it, so it runs alone and never waits
 * forever.
 */
export class SubjectBudget {
  readonly max: number;
  private held = 0;
  private readonly queue: Array<{ size: number; go: () => void }> = [];

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`the subjects in flight must be bounded by a positive integer, got ${max}`);
    this.max = max;
  }

  /** Places taken now. */
  get inFlight(): number {
    return this.held;
  }

  /** Jobs waiting for places. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Waits until `subjects` (at most `max`) fit beside those in flight and takes them; returns the release (idempotent). */
  async take(subjects: number): Promise<() => void> {
    const size = Math.min(Math.max(1, Math.floor(subjects)), this.max);
    if (this.queue.length === 0 && this.held + size <= this.max) this.held += size;
    else await new Promise<void>((go) => this.queue.push({ size, go }));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= size;
      this.grant();
    };
  }

  private grant(): void {
    // the head always fits once nothing is held (size <= max), so the queue cannot stall
    for (let head = this.queue[0]; head !== undefined && this.held + head.size <= this.max; head = this.queue[0]) {
      this.queue.shift();
      this.held += head.size;
      head.go();
    }
  }
}
