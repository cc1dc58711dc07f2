/**
 * How the demo shows subjects moving through their states: on a terminal, one compact
 * line redrawn in place; anywhere else (a pipe, a file, CI), one plain line per change.
 */

export interface SubjectState {
  label: string;
  status: string;
  nostr: string;
  ots: string;
  /** e.g. "3/3 relays" */
  nostrDetail: string;
  /** e.g. "2/2 calendars" */
  otsDetail: string;
}

export interface ProgressOutput {
  write(text: string): void;
  /** True for a terminal: redraw one live line. */
  readonly tty: boolean;
  /** Terminal width, when known. */
  readonly columns?: number | undefined;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1).padStart(5)}s`;
}

export class ProgressDisplay {
  private readonly out: ProgressOutput;
  private readonly startMs: number;
  private readonly now: () => number;
  private last = new Map<string, string>();
  private live = '';

  constructor(out: ProgressOutput, startMs: number, now: () => number = Date.now) {
    this.out = out;
    this.startMs = startMs;
    this.now = now;
  }

  /** A line that stays (a phase, a result). */
  line(text: string): void {
    this.clearLive();
    this.out.write(`${text}\n`);
    this.redraw();
  }

  /** New states; plain output prints the subjects that changed, a terminal redraws the live line. */
  update(states: readonly SubjectState[]): void {
    const elapsed = this.now() - this.startMs;
    if (!this.out.tty) {
      for (const s of states) {
        const text = `${s.status} (nostr ${s.nostr} ${s.nostrDetail}, ots ${s.ots} ${s.otsDetail})`;
        if (this.last.get(s.label) === text) continue;
        this.last.set(s.label, text);
        this.out.write(`  [${seconds(elapsed)}] ${s.label.padEnd(9)} ${text}\n`);
      }
      return;
    }
    const parts = states.map((s) => `${s.label} ${s.status}`);
    const confirmed = (pick: (s: SubjectState) => string): string => `${states.filter((s) => pick(s) === 'confirmed').length}/${states.length}`;
    this.live = `  [${seconds(elapsed)}] ${parts.join(' | ')}  (confirmed: nostr ${confirmed((s) => s.nostr)}, ots ${confirmed((s) => s.ots)})`;
    const width = this.out.columns ?? 0;
    if (width > 10 && this.live.length > width - 1) this.live = `${this.live.slice(0, width - 2)}…`;
    this.redraw();
  }

  /** Ends the live line (a terminal keeps its last state on screen). */
  finish(): void {
    if (this.out.tty && this.live) this.out.write('\n');
    this.live = '';
  }

  private clearLive(): void {
    if (this.out.tty && this.live) this.out.write('\r\x1b[2K');
  }

  private redraw(): void {
    if (this.out.tty && this.live) this.out.write(`\r\x1b[2K${this.live}`);
  }
}
