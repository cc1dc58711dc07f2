/**
 * The naive way an in-process collector anchors, as the baseline: for every subject,
 * build its envelope, sign one Nostr event and publish it to every relay, and submit its
 * digest to every calendar — no queue, no batching, `concurrency` subjects in flight.
 * A subject counts when all relays accepted its event and m calendars answered.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readSubject } from '../src/adapters/intake/job-data.js';
import { envelopeEvent, DEFAULT_EVENT_KIND } from '../src/core/nostr/events.js';
import { generateSecretKey } from '../src/core/nostr/keys.js';
import { RelayClient } from '../src/adapters/nostr/relay-client.js';
import { CalendarClient, submitToCalendars } from '../src/adapters/ots/calendar/index.js';
import type { PeersInfo } from './peers.js';
import { load } from './report.js';

export interface NaiveOptions {
  n: number;
  peers: PeersInfo;
  concurrency: number;
  /** Hard limit; the run reports how many subjects it finished. */
  timeoutMs: number;
}

export interface NaiveResult {
  n: number;
  done: number;
  failed: number;
  finished: boolean;
  wallMs: number;
  subjectsPerS: number;
  /** Median per-subject time spent on each side (they run side by side). */
  medianNostrMs: number;
  medianOtsMs: number;
  firstFailure: string | null;
  /** Load average at the end of the run. */
  load: [number, number, number];
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export async function naiveRun(o: NaiveOptions): Promise<NaiveResult> {
  const key = generateSecretKey();
  const relays = o.peers.relays.map((url) => new RelayClient(url, { publishTimeoutMs: 10_000 }));
  const calendars = o.peers.calendars.map((url) => new CalendarClient(url, { timeoutMs: 10_000 }));
  const limits = { maxJobBytes: 4 * 1024 * 1024 };
  const nostrTimes: number[] = [];
  const otsTimes: number[] = [];
  let next = 0;
  let done = 0;
  let failed = 0;
  let firstFailure: string | null = null;
  const t0 = performance.now();
  const deadline = t0 + o.timeoutMs;

  const one = async (): Promise<void> => {
    const data = { subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: randomBytes(32).toString('hex') };
    const { envelopeCanonical: canonical, digest: digestHex } = readSubject(data, limits);
    const event = envelopeEvent({ canonical, digestHex, kind: DEFAULT_EVENT_KIND }, key);
    const s = performance.now();
    const [published, stamped] = await Promise.all([
      Promise.all(relays.map((r) => r.publish(event))).then((rs) => {
        nostrTimes.push(performance.now() - s);
        return rs;
      }),
      submitToCalendars(calendars, Buffer.from(digestHex, 'hex'), { m: calendars.length }).then((r) => {
        otsTimes.push(performance.now() - s);
        return r;
      }),
    ]);
    const refused = published.find((p) => p.status !== 'accepted');
    if (refused || !stamped.ok) {
      failed++;
      firstFailure ??= refused ? `relay: ${refused.status} ${refused.message}` : `calendars: ${stamped.failures.map((f) => f.message).join('; ')}`;
      return;
    }
    done++;
  };

  const lane = async (): Promise<void> => {
    while (next < o.n && performance.now() < deadline) {
      next++;
      await one();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(o.concurrency, o.n) }, lane));
  } finally {
    for (const r of relays) r.close();
  }
  const wallMs = performance.now() - t0;
  return {
    n: o.n,
    done,
    failed,
    finished: done === o.n,
    wallMs,
    subjectsPerS: done / (wallMs / 1000),
    medianNostrMs: median(nostrTimes),
    medianOtsMs: median(otsTimes),
    firstFailure,
    load: load(),
  };
}
