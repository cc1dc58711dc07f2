/**
 * WitnessHealth: what this daemon process saw of each relay, calendar, TSA and C2SP witness it talks to
 * (state, last success, last error, consecutive failures), fed by the witnesses' hooks.
 * States: `failing` (failAfter attempts in a row failed), `throttled` (not failing, but it
 * answered `rate-limited:` within the last throttleHoldMs: it is up and asks us to slow
 * down, which the publisher does), `ok`, `unknown` (nothing sent or probed yet). It logs one
 * line when an endpoint starts failing or being throttled and one when that ends, plus a
 * reminder while it lasts — never one line per attempt. In-process only: each daemon
 * reports what it saw itself.
 */
import type { Logger } from 'pino';
import { displayUrl, scrubUrl } from '../config/display-url.js';

/** relay, calendar: the subjects' witnesses; tsa, witness: the anchor log checkpoints' time witnesses. */
export type EndpointKind = 'relay' | 'calendar' | 'tsa' | 'witness';
const KIND_ORDER: readonly EndpointKind[] = ['relay', 'calendar', 'tsa', 'witness'];
export type EndpointState = 'ok' | 'throttled' | 'failing' | 'unknown';

export interface EndpointHealth {
  kind: EndpointKind;
  /** Scheme, host and path only (displayUrl). */
  url: string;
  state: EndpointState;
  lastSuccessAt: string | null;
  lastError: { at: string; message: string } | null;
  consecutiveFailures: number;
  /** Attempts, failures and rate-limited answers over the last `windowSeconds` (15 minutes): the error rate is failures / attempts (rate-limited answers are not failures). */
  recent: { windowSeconds: number; attempts: number; failures: number; throttled: number };
}

/** The error-rate window: per-minute counts over the last 15 minutes. */
export const RECENT_WINDOW_MINUTES = 15;

export interface WitnessHealthOptions {
  /** Consecutive failures that turn an endpoint `failing` (default 3). */
  failAfter?: number;
  /** While still failing or throttled, one reminder line at most this often (default 5 minutes). */
  remindEveryMs?: number;
  /** An endpoint stays `throttled` this long after its last `rate-limited:` answer (default 5 minutes). */
  throttleHoldMs?: number;
  now?: () => number;
}

/** Longest error text kept per endpoint. */
export const MAX_ERROR_CHARS = 300;

interface Entry {
  record: EndpointHealth;
  /** The configured URL (may carry credentials): only for scrubbing error text, never shown. */
  configured: string;
  lastLogMs: number;
  /** The last `rate-limited:` answer (ms), 0 for none. */
  lastThrottledMs: number;
  /** The last attempt or probe (ms), 0 for none: an endpoint idle this long is probed when failing. */
  lastContactMs: number;
  /** Per minute (epoch minute → attempts, failures, rate-limited answers), the last RECENT_WINDOW_MINUTES only. */
  minutes: Map<number, { attempts: number; failures: number; throttled: number }>;
}

export class WitnessHealth {
  private readonly log: Logger;
  private readonly failAfter: number;
  private readonly remindEveryMs: number;
  private readonly throttleHoldMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();

  constructor(log: Logger, opts: WitnessHealthOptions = {}) {
    this.log = log.child({ part: 'witness-health' });
    this.failAfter = opts.failAfter ?? 3;
    this.remindEveryMs = opts.remindEveryMs ?? 300_000;
    this.throttleHoldMs = opts.throttleHoldMs ?? 300_000;
    this.now = opts.now ?? Date.now;
  }

  /** Makes an endpoint known (state `unknown`) before anything was sent to it. */
  register(kind: EndpointKind, url: string): void {
    this.entry(kind, url);
  }

  success(kind: EndpointKind, url: string): void {
    const e = this.entry(kind, url);
    const r = e.record;
    const failures = r.consecutiveFailures;
    this.count(e, 'ok');
    r.consecutiveFailures = 0;
    r.lastSuccessAt = new Date(this.now()).toISOString();
    this.settle(e, failures);
  }

  /** A `rate-limited:` answer: the endpoint is up and asks us to slow down; not a failure. */
  throttled(kind: EndpointKind, url: string, message: string): void {
    const e = this.entry(kind, url);
    const r = e.record;
    const failures = r.consecutiveFailures;
    const at = this.now();
    this.count(e, 'throttled');
    r.consecutiveFailures = 0;
    e.lastThrottledMs = at;
    const was = r.state;
    this.settle(e, failures, boundedError(scrubUrl(message, e.configured)));
    if (was === 'throttled' && r.state === 'throttled' && at - e.lastLogMs >= this.remindEveryMs) {
      e.lastLogMs = at;
      const n = this.recent(e).throttled;
      this.log.warn({ kind, url: r.url, throttled: n }, `${kind} ${r.url} is still throttling: ${n} rate-limited answers in the last ${RECENT_WINDOW_MINUTES} minutes`);
    }
  }

  failure(kind: EndpointKind, url: string, message: string): void {
    const e = this.entry(kind, url);
    const r = e.record;
    const at = this.now();
    this.count(e, 'failed');
    r.consecutiveFailures += 1;
    r.lastError = { at: new Date(at).toISOString(), message: boundedError(scrubUrl(message, e.configured)) };
    const was = r.state;
    this.settle(e, 0);
    if (was === 'failing' && r.state === 'failing' && at - e.lastLogMs >= this.remindEveryMs) {
      e.lastLogMs = at;
      this.log.warn(
        { kind, url: r.url, failures: r.consecutiveFailures, lastError: r.lastError.message, lastSuccessAt: r.lastSuccessAt },
        `${kind} ${r.url} is still failing: ${r.consecutiveFailures} attempts in a row (last: ${r.lastError.message})`,
      );
    }
  }

  /** A failing endpoint answered the idle re-probe: it is ok again (or still failing, with the probe's error, not counted as an attempt). */
  probed(kind: EndpointKind, url: string, answered: boolean, message?: string): void {
    const e = this.entry(kind, url);
    e.lastContactMs = this.now();
    if (!answered) {
      e.record.lastError = { at: new Date(e.lastContactMs).toISOString(), message: boundedError(scrubUrl(`probe: ${message ?? 'no answer'}`, e.configured)) };
      return;
    }
    const failures = e.record.consecutiveFailures;
    e.record.consecutiveFailures = 0;
    this.settle(e, failures);
  }

  /**
   * The failing relays and calendars (as configured) nothing was sent to, and none probed,
   * within `idleMs`. TSAs and witnesses are not listed: the checkpoint loop asks them again itself.
   */
  idleFailing(idleMs: number): Array<{ kind: 'relay' | 'calendar'; url: string }> {
    this.tick();
    const at = this.now();
    const out: Array<{ kind: 'relay' | 'calendar'; url: string }> = [];
    for (const e of this.entries.values()) {
      const { kind } = e.record;
      if ((kind === 'relay' || kind === 'calendar') && e.record.state === 'failing' && at - e.lastContactMs >= idleMs) out.push({ kind, url: e.configured });
    }
    return out;
  }

  /** Re-evaluates the time-bound states (a throttle that ended) and logs what changed. */
  tick(): void {
    for (const e of this.entries.values()) this.settle(e, e.record.consecutiveFailures);
  }

  /** Every endpoint, relays first, then calendars, TSAs and witnesses, each in the order they became known. */
  snapshot(): EndpointHealth[] {
    this.tick();
    const all = [...this.entries.values()].map((e) => ({ ...e.record, lastError: e.record.lastError && { ...e.record.lastError }, recent: this.recent(e) }));
    return KIND_ORDER.flatMap((kind) => all.filter((r) => r.kind === kind));
  }

  /** The endpoints in state `failing`. */
  failing(): EndpointHealth[] {
    return this.snapshot().filter((r) => r.state === 'failing');
  }

  /** The state the entry's counts and times give now. */
  private stateOf(e: Entry): EndpointState {
    const r = e.record;
    if (r.consecutiveFailures >= this.failAfter) return 'failing';
    if (e.lastThrottledMs > 0 && this.now() - e.lastThrottledMs < this.throttleHoldMs) return 'throttled';
    if (r.lastSuccessAt !== null || e.lastThrottledMs > 0 || r.state !== 'unknown') return 'ok';
    return 'unknown';
  }

  /** Moves the entry to the state it is in now and logs the transition (`failures`: those a recovery ends). */
  private settle(e: Entry, failures: number, throttleMessage?: string): void {
    const r = e.record;
    const was = r.state;
    const next = r.consecutiveFailures > 0 && r.consecutiveFailures < this.failAfter && was === 'unknown' ? 'unknown' : this.stateOf(e);
    if (next === was) return;
    r.state = next;
    const at = this.now();
    if (next === 'failing') {
      e.lastLogMs = at;
      this.log.warn(
        { kind: r.kind, url: r.url, failures: r.consecutiveFailures, lastError: r.lastError?.message, lastSuccessAt: r.lastSuccessAt },
        `${r.kind} ${r.url} is failing: ${r.consecutiveFailures} attempts in a row failed (last: ${r.lastError?.message ?? 'none'})`,
      );
    } else if (was === 'failing') {
      e.lastLogMs = at;
      this.log.info({ kind: r.kind, url: r.url, failures }, `${r.kind} ${r.url} recovered after ${failures} failed attempts`);
    }
    if (next === 'throttled') {
      e.lastLogMs = at;
      this.log.warn(
        { kind: r.kind, url: r.url, message: throttleMessage },
        `${r.kind} ${r.url} is throttling us (${throttleMessage ?? 'rate-limited'}): publishes wait and are retried, nothing is dropped`,
      );
    } else if (was === 'throttled' && next === 'ok') {
      this.log.info({ kind: r.kind, url: r.url }, `${r.kind} ${r.url} no longer throttling: no rate-limited answer for ${Math.round(this.throttleHoldMs / 1000)} s`);
    }
  }

  private count(e: Entry, outcome: 'ok' | 'failed' | 'throttled'): void {
    const at = this.now();
    e.lastContactMs = at;
    const minute = Math.floor(at / 60_000);
    let m = e.minutes.get(minute);
    if (!m) {
      m = { attempts: 0, failures: 0, throttled: 0 };
      e.minutes.set(minute, m);
      for (const k of e.minutes.keys()) if (k <= minute - RECENT_WINDOW_MINUTES) e.minutes.delete(k);
    }
    m.attempts += 1;
    if (outcome === 'failed') m.failures += 1;
    if (outcome === 'throttled') m.throttled += 1;
  }

  private recent(e: Entry): EndpointHealth['recent'] {
    const from = Math.floor(this.now() / 60_000) - RECENT_WINDOW_MINUTES;
    let attempts = 0;
    let failures = 0;
    let throttled = 0;
    for (const [k, m] of e.minutes) {
      if (k <= from) continue;
      attempts += m.attempts;
      failures += m.failures;
      throttled += m.throttled;
    }
    return { windowSeconds: RECENT_WINDOW_MINUTES * 60, attempts, failures, throttled };
  }

  private entry(kind: EndpointKind, url: string): Entry {
    const id = `${kind} ${url}`;
    let e = this.entries.get(id);
    if (!e) {
      e = {
        configured: url,
        lastLogMs: 0,
        lastThrottledMs: 0,
        lastContactMs: 0,
        minutes: new Map(),
        record: { kind, url: displayUrl(url), state: 'unknown', lastSuccessAt: null, lastError: null, consecutiveFailures: 0, recent: { windowSeconds: RECENT_WINDOW_MINUTES * 60, attempts: 0, failures: 0, throttled: 0 } },
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
