/**
 * The idle re-probe: a relay or calendar left `failing` gets no new attempt until work for
 * it comes, so on a quiet daemon it would stay red for ever after it recovered. Every
 * `everyMs`, each failing endpoint nothing was sent to (and none probed) within `everyMs` is
 * asked once: a relay must take a WebSocket connection, a calendar must give a protocol
 * answer to `GET /timestamp/<unknown commitment>` (its 404 `Not found`; a 5xx or no answer
 * is still failing). An answer turns it `ok`; the timer also ends throttles that ran out.
 */
import { displayUrl, scrubUrl } from '../config/display-url.js';
import { CalendarClient } from '../ots/calendar/index.js';
import { RelayClient } from '../nostr/relay-client.js';
import { PROBE_TIMEOUT_MS } from './witness-probe.js';
import type { EndpointKind, WitnessHealth } from './witness-health.js';

export const REPROBE_EVERY_MS = 60_000;
/** A commitment no calendar holds (the real server answers 404 `Not found`). */
const UNKNOWN_COMMITMENT = Buffer.alloc(32);

export interface ReprobeOptions {
  everyMs?: number;
  timeoutMs?: number;
}

/** Does the endpoint answer its protocol now? A reason when it does not. */
export async function endpointAnswers(kind: Extract<EndpointKind, 'relay' | 'calendar'>, url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ answered: boolean; message?: string }> {
  try {
    if (kind === 'relay') {
      const client = new RelayClient(url, { connectTimeoutMs: timeoutMs, ping: false });
      try {
        await client.connect(timeoutMs);
      } finally {
        client.close();
      }
    } else {
      await new CalendarClient(url, { timeoutMs }).getTimestamp(UNKNOWN_COMMITMENT);
    }
    return { answered: true };
  } catch (err) {
    return { answered: false, message: scrubUrl((err as Error).message, url) };
  }
}

export class WitnessReprobe {
  readonly everyMs: number;
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly health: WitnessHealth, opts: ReprobeOptions = {}) {
    this.everyMs = opts.everyMs ?? REPROBE_EVERY_MS;
    this.timeoutMs = Math.min(opts.timeoutMs ?? PROBE_TIMEOUT_MS, this.everyMs);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.once().finally(() => (this.running = null));
    }, this.everyMs);
    this.timer.unref();
  }

  /** One pass: probes the idle failing endpoints at once; resolves when each has answered or timed out. */
  async once(): Promise<void> {
    const due = this.health.idleFailing(this.everyMs);
    await Promise.all(due.map(async ({ kind, url }) => {
      const { answered, message } = await endpointAnswers(kind, url, this.timeoutMs);
      this.health.probed(kind, url, answered, message ?? `${displayUrl(url)} gave no answer`);
    }));
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
