/**
 * The start-up probe: does each relay take a WebSocket connection, does each calendar
 * answer HTTP at its base URL, within a short deadline. Only for the first log lines and
 * the first health records; publishing never waits on it.
 */
import { displayUrl, scrubUrl } from '../config/display-url.js';
import { RelayClient } from '../nostr/relay-client.js';
import type { EndpointKind } from './witness-health.js';

export const PROBE_TIMEOUT_MS = 3000;

export interface ProbeOutcome {
  kind: EndpointKind;
  /** As configured (the caller shows it through displayUrl). */
  url: string;
  answered: boolean;
  /** What went wrong when it did not answer, scrubbed of the URL's credentials. */
  message?: string;
}

async function probeRelay(url: string, timeoutMs: number): Promise<ProbeOutcome> {
  const client = new RelayClient(url, { connectTimeoutMs: timeoutMs, ping: false });
  try {
    await client.connect(timeoutMs);
    return { kind: 'relay', url, answered: true };
  } catch (err) {
    return { kind: 'relay', url, answered: false, message: scrubUrl((err as Error).message, url) };
  } finally {
    client.close();
  }
}

/** Any HTTP answer counts: the calendar's base URL need not serve a page, only be there. */
async function probeCalendar(url: string, timeoutMs: number): Promise<ProbeOutcome> {
  try {
    const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return { kind: 'calendar', url, answered: true };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { kind: 'calendar', url, answered: false, message: scrubUrl(why, url) };
  }
}

/** Probes every endpoint at once; settles within about `timeoutMs`. */
export function probeWitnesses(relays: readonly string[], calendars: readonly string[], timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeOutcome[]> {
  return Promise.all([...relays.map((u) => probeRelay(u, timeoutMs)), ...calendars.map((u) => probeCalendar(u, timeoutMs))]);
}

function count(n: number, kind: EndpointKind): string {
  return `${n} ${kind}${n === 1 ? '' : 's'}`;
}

/** `witnesses: 3 relays answered, 1 calendar unreachable (http://cal.example/: ECONNREFUSED)`. */
export function describeProbe(outcomes: readonly ProbeOutcome[]): string {
  const parts: string[] = [];
  for (const kind of ['relay', 'calendar'] as const) {
    const mine = outcomes.filter((o) => o.kind === kind);
    const up = mine.filter((o) => o.answered);
    const down = mine.filter((o) => !o.answered);
    if (up.length > 0) parts.push(`${count(up.length, kind)} answered`);
    if (down.length > 0) parts.push(`${count(down.length, kind)} unreachable (${down.map((o) => `${displayUrl(o.url)}: ${o.message ?? 'no answer'}`).join('; ')})`);
  }
  return `witnesses: ${parts.length > 0 ? parts.join(', ') : 'none configured'}`;
}
