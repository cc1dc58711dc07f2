/**
 * WitnessHealth: what this daemon process saw of each relay and calendar it talks to
 * (state, last success, last error, consecutive failures), fed by the witnesses' hooks.
 * It logs one line when an endpoint starts failing and one when it recovers, plus a
 * reminder while it stays failing — never one line per attempt. In-process only: each
 * daemon reports what it saw itself.
 */
import type { Logger } from 'pino';
import { displayUrl, scrubUrl } from '../config/display-url.js';

export type EndpointKind = 'relay' | 'calendar';
export type EndpointState = 'ok' | 'failing' | 'unknown';

export interface EndpointHealth {
  kind: EndpointKind;
  /** Scheme, host and path only (displayUrl). */
  url: string;
  state: EndpointState;
  lastSuccessAt: string | null;
  lastError: { at: string; message: string } | null;
  consecutiveFailures: number;
  /** Attempts and failures over the last `windowSeconds` (15 minutes): the error rate. */
  recent: { windowSeconds: number; attempts: number; failures: number };
}

/** The error-rate window: per-minute counts over the last 15 minutes. */
export const RECENT_WINDOW_MINUTES = 15;

export interface WitnessHealthOptions {
  /** Consecutive failures that turn an endpoint `failing` (default 3). */
  failAfter?: number;
  /** While still failing, one reminder line at most this often (default 5 minutes). */
  remindEveryMs?: number;
  now?: () => number;
}

/** Longest error text kept per endpoint. */
export const MAX_ERROR_CHARS = 300;

interface Entry {
  record: EndpointHealth;
  /** The configured URL (may carry credentials): only for scrubbing error text, never shown. */
  configured: string;
  lastLogMs: number;
  /** Per minute (epoch minute → attempts, failures), the last RECENT_WINDOW_MINUTES only. */
  minutes: Map<number, { attempts: number; failures: number }>;
}

export class WitnessHealth {
  private readonly log: Logger;
  private readonly failAfter: number;
  private readonly remindEveryMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  constructor(log: Logger, opts: WitnessHealthOptions = {}) {
    this.log = log.child({ part: 'witness-health' });
    this.failAfter = opts.failAfter ?? 3;
    this.remindEveryMs = opts.remindEveryMs ?? 300_000;
    this.now = opts.now ?? Date.now;
  }

  /** Makes an endpoint known (state `unknown`) before anything was sent to it. */
  register(kind: EndpointKind, url: string): void {
    this.entry(kind, url);
  }

  success(kind: EndpointKind, url: string): void {
    const e = this.entry(kind, url);
    const r = e.record;
    const was = r.state;
    const failures = r.consecutiveFailures;
    this.count(e, false);
    r.state = 'ok';
    r.consecutiveFailures = 0;
    r.lastSuccessAt = new Date(this.now()).toISOString();
    if (was === 'failing') {
      e.lastLogMs = this.now();
      this.log.info({ kind, url: r.url, failures }, `${kind} ${r.url} recovered after ${failures} failed attempts`);
    }
  }

  failure(kind: EndpointKind, url: string, message: string): void {
    const e = this.entry(kind, url);
    const r = e.record;
    const at = this.now();
    this.count(e, true);
    r.consecutiveFailures += 1;
    r.lastError = { at: new Date(at).toISOString(), message: boundedError(scrubUrl(message, e.configured)) };
    if (r.state !== 'failing' && r.consecutiveFailures >= this.failAfter) {
      r.state = 'failing';
      e.lastLogMs = at;
      this.log.warn(
        { kind, url: r.url, failures: r.consecutiveFailures, lastError: r.lastError.message, lastSuccessAt: r.lastSuccessAt },
        `${kind} ${r.url} is failing: ${r.consecutiveFailures} attempts in a row failed (last: ${r.lastError.message})`,
      );
    } else if (r.state === 'failing' && at - e.lastLogMs >= this.remindEveryMs) {
      e.lastLogMs = at;
      this.log.warn(
        { kind, url: r.url, failures: r.consecutiveFailures, lastError: r.lastError.message, lastSuccessAt: r.lastSuccessAt },
        `${kind} ${r.url} is still failing: ${r.consecutiveFailures} attempts in a row (last: ${r.lastError.message})`,
      );
    }
  }

  /** Every endpoint, relays first, in the order they became known. */
  snapshot(): EndpointHealth[] {
    const all = [...this.entries.values()].map((e) => ({ ...e.record, lastError: e.record.lastError && { ...e.record.lastError }, recent: this.recent(e) }));
    return [...all.filter((r) => r.kind === 'relay'), ...all.filter((r) => r.kind === 'calendar')];
  }

  /** The endpoints in state `failing`. */
  failing(): EndpointHealth[] {
    return this.snapshot().filter((r) => r.state === 'failing');
  }

  private count(e: Entry, failed: boolean): void {
    const minute = Math.floor(this.now() / 60_000);
    let m = e.minutes.get(minute);
    if (!m) {
      m = { attempts: 0, failures: 0 };
      e.minutes.set(minute, m);
      for (const k of e.minutes.keys()) if (k <= minute - RECENT_WINDOW_MINUTES) e.minutes.delete(k);
    }
    m.attempts += 1;
    if (failed) m.failures += 1;
  }

  private recent(e: Entry): EndpointHealth['recent'] {
    const from = Math.floor(this.now() / 60_000) - RECENT_WINDOW_MINUTES;
    let attempts = 0;
    let failures = 0;
    for (const [k, m] of e.minutes) {
      if (k <= from) continue;
      attempts += m.attempts;
      failures += m.failures;
    }
    return { windowSeconds: RECENT_WINDOW_MINUTES * 60, attempts, failures };
  }

  private entry(kind: EndpointKind, url: string): Entry {
    const id = `${kind} ${url}`;
    let e = this.entries.get(id);
    if (!e) {
      e = {
        configured: url,
        lastLogMs: 0,
        minutes: new Map(),
        record: { kind, url: displayUrl(url), state: 'unknown', lastSuccessAt: null, lastError: null, consecutiveFailures: 0, recent: { windowSeconds: RECENT_WINDOW_MINUTES * 60, attempts: 0, failures: 0 } },
      };
      this.entries.set(id, e);
    }
    return e;
  }
}

function boundedError(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_ERROR_CHARS ? `${oneLine.slice(0, MAX_ERROR_CHARS - 1)}…` : oneLine;
}
