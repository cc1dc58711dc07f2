/**
 * One client per relay URL, on nostr-tools' AbstractRelay with the `ws` WebSocket
 * injected (Node 20 has no global one). Single attempts only: `publish` answers with
 * a `PublishResult` and never rejects; retries, backoff and rate limits belong to
 * the caller. Connects lazily, and after a drop or a timeout connects anew on the
 * next use. AbstractRelay keeps the connection, AUTH and REQ; publishes go on the socket
 * directly and wait on one map and one timer (a daemon sends thousands a minute).
 */
import { AbstractRelay, type Subscription } from 'nostr-tools/abstract-relay';
import { verifyEvent } from 'nostr-tools/pure';
import type { EventTemplate, VerifiedEvent } from 'nostr-tools/core';
import type { Filter } from 'nostr-tools/filter';
import type { SignedEvent } from '../../core/nostr/keys.js';
import { eventMessage } from '../../core/nostr/events.js';
import { configDefault } from '../config/schema.js';
import { MAX_QUERY_LIMIT, type RelayQueryFilter } from '../../core/nostr/filter.js';
import { parseOkFrame, splitEventFrame, type OkAnswer } from './relay-frames.js';
import { socketClass, type RelaySocket } from './relay-socket.js';

export { MAX_QUERY_LIMIT, type RelayQueryFilter };
export { splitEventFrame };

export type PublishStatus = 'accepted' | 'rejected' | 'timeout' | 'error';

export interface PublishResult {
  status: PublishStatus;
  /** The relay's OK message, or what went wrong. */
  message: string;
  /** Machine prefix of the relay's message (`duplicate`, `rate-limited`, `invalid`, ...). */
  prefix?: string;
  /** Whether the same event may be accepted if sent again later. */
  retryable: boolean;
  /** ISO 8601 time the result was settled. */
  at: string;
}

/** NIP-01 machine prefixes, and whether a rejection with each can pass later. */
export const REJECTION_RETRYABLE: Readonly<Record<string, boolean>> = {
  'rate-limited': true,
  error: true,
  // the publish job mines a copy when the answer names a difficulty (within nostr.powMaxDifficulty);
  // nos.lol asks for proof of work when a key writes too fast, and slower it passes
  pow: true,
  invalid: false,
  blocked: false,
  restricted: false,
  mute: false,
  // a client with a signer authenticates (NIP-42) and sends again within the same call; an
  // answer still auth-required after that (or from a client without a signer) can pass on a
  // fresh connection, which authenticates anew
  'auth-required': true,
  // never a rejection: `OK false "duplicate:"` is answered as accepted
  duplicate: false,
};

/** A rejection whose prefix is missing or unknown is retried (bounded by the caller). */
export const UNKNOWN_REJECTION_RETRYABLE = true;

export interface RelayClientOptions {
  /** Deadline for opening the WebSocket (default 5000 ms), within the call's own. */
  connectTimeoutMs?: number;
  /** Default publish deadline, connection included (default: `nostr.publishTimeoutMs`'s, 8000 ms). */
  publishTimeoutMs?: number;
  /** Default fetch deadline (default 10000 ms), connection included; no config key: the daemon's read-back passes `nostr.publishTimeoutMs` per call. */
  fetchTimeoutMs?: number;
  /** Clock for `PublishResult.at`. */
  now?: () => Date;
  /** WebSocket ping every 29 s to notice dead connections (default true). */
  ping?: boolean;
  /**
   * NIP-42: signs a relay's kind 22242 AUTH event (the daemon's key). With it the client
   * answers a relay's `["AUTH", challenge]` once per connection, and after an
   * `auth-required:` answer authenticates and sends the event again.
   */
  signAuth?: (template: EventTemplate) => SignedEvent;
  /**
   * Have AbstractRelay check the signature of every event a relay sends (default true).
   * `fetchById` and `query` return the raw texts either way, for their callers to check;
   * relay upkeep turns it off, since it compares each text's signed fields with the event it
   * signed and stored itself, and the check is most of the time a REQ of many events takes.
   */
  verifyEvents?: boolean;
}


/** What a publish waiting past its deadline is settled with. */
const PUBLISH_TIMED_OUT = 'publish timed out';

export class RelayFetchError extends Error {
  readonly url: string;
  readonly retryable = true;
  constructor(url: string, message: string) {
    super(`${url}: ${message}`);
    this.name = 'RelayFetchError';
    this.url = url;
  }
}

/** A publish waiting for its OK: settled with the answer, or with what went wrong instead. */
interface Waiter {
  relay: AbstractRelay;
  /** Date.now() past which it is settled as `publish timed out`. */
  expires: number;
  settle: (answer: OkAnswer | string) => void;
}

export class RelayClient {
  readonly url: string;
  readonly #connectTimeoutMs: number;
  readonly #publishTimeoutMs: number;
  readonly #fetchTimeoutMs: number;
  readonly #now: () => Date;
  readonly #ping: boolean;
  readonly #signAuth: ((template: EventTemplate) => SignedEvent) | undefined;
  readonly #verifyEvents: boolean;
  #relay: AbstractRelay | undefined;
  #connecting: Promise<AbstractRelay> | undefined;
  #closed = false;
  #lastSocketError: string | undefined;
  /** Publishes waiting for their OK, per event id. */
  readonly #waiting = new Map<string, Waiter>();
  /** The one timer that settles overdue waits, and when it fires (Infinity: none set). */
  #sweep: ReturnType<typeof setTimeout> | undefined;
  #sweepAt = Infinity;
  /** The socket under each relay connection. */
  readonly #sockets = new WeakMap<AbstractRelay, RelaySocket>();
  /** Raw EVENT frames for our fetch subscriptions, per subscription id. */
  readonly #rawEvents = new Map<string, (raw: string) => void>();
  /** One publish at a time per event id: later calls join the first. */
  readonly #inflight = new Map<string, Promise<PublishResult>>();
  #lastNotice: string | undefined;
  #serial = 0;

  constructor(url: string, options: RelayClientOptions = {}) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`relay URL is not a URL: ${url}`);
    }
    if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
      throw new TypeError(`relay URL must be ws:// or wss://: ${url}`);
    }
    this.url = url;
    this.#connectTimeoutMs = positive(options.connectTimeoutMs ?? 5000, 'connectTimeoutMs');
    this.#publishTimeoutMs = positive(options.publishTimeoutMs ?? configDefault('nostr.publishTimeoutMs'), 'publishTimeoutMs');
    this.#fetchTimeoutMs = positive(options.fetchTimeoutMs ?? 10_000, 'fetchTimeoutMs');
    this.#now = options.now ?? (() => new Date());
    this.#ping = options.ping ?? true;
    this.#signAuth = options.signAuth;
    this.#verifyEvents = options.verifyEvents ?? true;
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.#relay?.connected === true;
  }

  /** Opens the connection (or finds it open) within `timeoutMs`; rejects saying what went wrong (the start-up probe). */
  async connect(timeoutMs: number = this.#connectTimeoutMs): Promise<void> {
    await this.#connection(Date.now() + timeoutMs);
  }

  /**
   * Sends the event and waits for the relay's OK within `timeoutMs` (connection
   * included). Never rejects. A second call for an event id already being published
   * joins the first and gets its result.
   */
  publish(event: SignedEvent, options: { timeoutMs?: number } = {}): Promise<PublishResult> {
    const running = this.#inflight.get(event.id);
    if (running) return running;
    const attempt = this.#publishOnce(event, options.timeoutMs ?? this.#publishTimeoutMs)
      .catch((err: unknown) => this.#result('error', `unexpected: ${describe(err)}`, undefined, true))
      .finally(() => this.#inflight.delete(event.id));
    this.#inflight.set(event.id, attempt);
    return attempt;
  }

  /**
   * Asks the relay for the event with this id. Resolves with the event's JSON text
   * exactly as the relay sent it, or null when the relay says it has none (EOSE or
   * CLOSED without it). Rejects with `RelayFetchError` when the relay cannot be asked
   * (connection failure, deadline passed).
   */
  async fetchById(id: string, options: { timeoutMs?: number } = {}): Promise<string | null> {
    if (!/^[0-9a-f]{64}$/.test(id)) throw new TypeError('event id must be 64 lowercase hex characters');
    const texts = await this.#request({ ids: [id], limit: 1 }, options.timeoutMs ?? this.#fetchTimeoutMs, 'fetch', false);
    return texts[0] ?? null;
  }

  /**
   * Asks the relay for the events matching one NIP-01 filter (`authors`, `kinds`, `#i`,
   * `since`, `until`, ...) and resolves at EOSE with their JSON texts exactly as sent, in
   * the relay's order (newest first on most relays), so the caller verifies fresh parses.
   * `limit` is required (1..MAX_QUERY_LIMIT) and bounds what is kept: a relay that sends
   * more is cut off there. Rejects with `RelayFetchError` when the relay cannot be asked,
   * does not reach EOSE before the deadline, or refuses the request with CLOSED.
   */
  async query(filter: RelayQueryFilter, options: { timeoutMs?: number } = {}): Promise<string[]> {
    const limit = filter.limit;
    if (limit === undefined || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) {
      throw new RangeError(`filter.limit must be an integer in 1..${MAX_QUERY_LIMIT}`);
    }
    return this.#request(filter, options.timeoutMs ?? this.#fetchTimeoutMs, 'query', true);
  }

  /** One REQ with one filter, collecting raw EVENT texts until EOSE, `limit` events, or the deadline. */
  async #request(filter: RelayQueryFilter, timeoutMs: number, label: string, closedIsError: boolean): Promise<string[]> {
    const max = filter.limit ?? 1;
    const deadline = Date.now() + timeoutMs;
    let relay: AbstractRelay;
    try {
      relay = await this.#connection(deadline);
    } catch (err) {
      throw new RelayFetchError(this.url, describe(err));
    }
    const subId = `aer1-${label}:${++this.#serial}`;
    return await new Promise<string[]>((resolve, reject) => {
      let done = false;
      let sub: Subscription | undefined;
      const texts: string[] = [];
      const finish = (fn: () => void): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.#rawEvents.delete(subId);
        try {
          // Subscription.close() leaves its EOSE timer running (nostr-tools 2.25): a
          // pending one kept `--online` runs alive ~70 s. receivedEose() clears it.
          sub?.receivedEose();
          sub?.close();
        } catch {
          // the connection is already gone
        }
        fn();
      };
      this.#rawEvents.set(subId, (text) => {
        if (texts.length < max) texts.push(text);
      });
      const timer = setTimeout(
        () => finish(() => reject(new RelayFetchError(this.url, `no answer to REQ within ${timeoutMs} ms`))),
        Math.max(1, deadline - Date.now()),
      );
      const collected = (): void => {
        if (texts.length >= max) finish(() => resolve(texts));
      };
      try {
        sub = relay.subscribe([filter as Filter], {
          id: subId,
          // our own timer is the deadline: AbstractRelay's EOSE timeout would look like an EOSE
          eoseTimeout: timeoutMs + 60_000,
          onevent: collected,
          oninvalidevent: collected,
          oneose: () => finish(() => resolve(texts)),
          onclose: (reason) => {
            if (reason === 'relay connection closed' || reason === 'relay connection closed by us') {
              finish(() => reject(new RelayFetchError(this.url, reason)));
            } else if (closedIsError) {
              finish(() => reject(new RelayFetchError(this.url, `the relay closed the request: ${boundedText(reason)}`)));
            } else {
              finish(() => resolve(texts));
            }
          },
        });
      } catch (err) {
        finish(() => reject(new RelayFetchError(this.url, describe(err))));
      }
    });
  }

  /** Closes the connection; publishes in flight settle as `error`. The client stays usable. */
  close(): void {
    this.#closed = true;
    this.#drop();
  }

  async #publishOnce(event: SignedEvent, timeoutMs: number): Promise<PublishResult> {
    const deadline = Date.now() + timeoutMs;
    let relay: AbstractRelay;
    try {
      relay = await this.#connection(deadline);
    } catch (err) {
      const message = describe(err);
      return message === 'connection timed out'
        ? this.#result('timeout', `could not connect within the deadline: ${message}`, undefined, true)
        : this.#result('error', message, undefined, true);
    }
    if (deadline - Date.now() <= 0) return this.#result('timeout', `no OK within ${timeoutMs} ms`, undefined, true);
    this.#lastNotice = undefined;
    const frame = eventMessage(event);
    let answer = await this.#exchange(relay, event.id, frame, deadline);
    if (typeof answer !== 'string' && !answer.ok && prefixOf(answer.message) === 'auth-required' && this.#signAuth && relay.connected) {
      // NIP-42: authenticate on this connection (once: AbstractRelay keeps the AUTH promise), send again
      const auth = await this.#authenticate(relay, deadline);
      if (auth !== undefined) return this.#result('rejected', auth.message, auth.prefix, auth.retryable);
      if (deadline - Date.now() <= 0) return this.#result('timeout', `no OK within ${timeoutMs} ms (after AUTH)`, undefined, true);
      answer = await this.#exchange(relay, event.id, frame, deadline);
    }
    if (typeof answer !== 'string') {
      const prefix = prefixOf(answer.message);
      // `OK false "duplicate: …"` (some relays): it already holds the event, an acceptance.
      if (answer.ok || prefix === 'duplicate') return this.#result('accepted', answer.message, prefix, false);
      const retryable = prefix !== undefined && prefix in REJECTION_RETRYABLE ? REJECTION_RETRYABLE[prefix] === true : UNKNOWN_REJECTION_RETRYABLE;
      return this.#result('rejected', answer.message, prefix, retryable);
    }
    if (answer === PUBLISH_TIMED_OUT) {
      // unknown fate: the caller may read back by id; a fresh connection next time
      if (this.#relay === relay) this.#drop();
      const notice = this.#lastNotice !== undefined ? ` (NOTICE: ${this.#lastNotice})` : '';
      return this.#result('timeout', `no OK within ${timeoutMs} ms${notice}`, undefined, true);
    }
    return this.#result('error', answer, undefined, true);
  }

  /** Sends `frame` on `relay` and waits until `deadline` for the OK to event `id`: the answer, or what went wrong instead. */
  #exchange(relay: AbstractRelay, id: string, frame: string, deadline: number): Promise<OkAnswer | string> {
    return new Promise((settle) => {
      const socket = this.#sockets.get(relay);
      if (!relay.connected || socket === undefined) {
        settle('relay connection closed');
        return;
      }
      this.#waiting.set(id, { relay, expires: deadline, settle });
      this.#armSweep(deadline);
      try {
        socket.sendInTick(frame);
      } catch (err) {
        this.#settle(id, describe(err));
      }
    });
  }

  /** Settles the publish waiting on event `id`, if any; true when there was one. */
  #settle(id: string, answer: OkAnswer | string): boolean {
    const waiter = this.#waiting.get(id);
    if (waiter === undefined) return false;
    this.#waiting.delete(id);
    if (this.#waiting.size === 0 && this.#sweep !== undefined) {
      clearTimeout(this.#sweep);
      this.#sweep = undefined;
      this.#sweepAt = Infinity;
    }
    waiter.settle(answer);
    return true;
  }

  /** Has the sweep timer fire by `at` (one timer for every waiting publish, not one each). */
  #armSweep(at: number): void {
    if (at >= this.#sweepAt) return;
    clearTimeout(this.#sweep);
    this.#sweepAt = at;
    this.#sweep = setTimeout(() => this.#sweepOverdue(), Math.max(1, at - Date.now()));
  }

  #sweepOverdue(): void {
    this.#sweep = undefined;
    this.#sweepAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const [id, waiter] of this.#waiting) {
      if (waiter.expires <= now) this.#settle(id, PUBLISH_TIMED_OUT);
      else next = Math.min(next, waiter.expires);
    }
    if (next !== Infinity) this.#armSweep(next);
  }

  /** Settles every publish waiting on `relay` with `reason` (the connection is gone). */
  #failWaiting(relay: AbstractRelay, reason: string): void {
    for (const [id, waiter] of this.#waiting) {
      if (waiter.relay === relay) this.#settle(id, reason);
    }
  }

  /** NIP-42 on `relay` within `deadline`: undefined once authenticated, else the refusal to report. */
  async #authenticate(relay: AbstractRelay, deadline: number): Promise<{ message: string; prefix: string; retryable: boolean } | undefined> {
    const sign = this.#signAuth!;
    relay.publishTimeout = Math.max(1, deadline - Date.now());
    try {
      await withDeadline(relay.auth(async (t) => sign(t) as VerifiedEvent), Math.max(1, deadline - Date.now()));
      return undefined;
    } catch (err) {
      const message = describe(err);
      const prefix = prefixOf(message);
      // a new connection gets a new challenge: the next attempt authenticates afresh
      if (this.#relay === relay) this.#drop();
      if (prefix === 'restricted' || prefix === 'blocked') return { message: `AUTH refused: ${message}`, prefix, retryable: false };
      return { message: `auth-required: AUTH failed: ${message}`, prefix: 'auth-required', retryable: true };
    }
  }

  #result(status: PublishStatus, message: string, prefix: string | undefined, retryable: boolean): PublishResult {
    const result: PublishResult = { status, message, retryable, at: this.#now().toISOString() };
    if (prefix !== undefined) result.prefix = prefix;
    return result;
  }

  /** The open connection, or a new one within `deadline`. */
  async #connection(deadline: number): Promise<AbstractRelay> {
    this.#closed = false;
    if (this.#relay?.connected) return this.#relay;
    if (!this.#connecting) {
      const timeout = Math.max(1, Math.min(this.#connectTimeoutMs, deadline - Date.now()));
      this.#connecting = this.#open(timeout).finally(() => {
        this.#connecting = undefined;
      });
    }
    const connecting = this.#connecting;
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new Error('connection timed out');
    return await withDeadline(connecting, remaining).catch((err: unknown) => {
      throw new Error(describe(err) === 'deadline' ? 'connection timed out' : describe(err));
    });
  }

  async #open(timeoutMs: number): Promise<AbstractRelay> {
    this.#drop();
    this.#lastSocketError = undefined;
    const relay = new AbstractRelay(this.url, {
      verifyEvent: this.#verifyEvents ? (event) => verifyEvent(event) : () => true,
      websocketImplementation: socketClass({
        handshakeTimeoutMs: timeoutMs,
        onError: (err) => {
          this.#lastSocketError = err.message;
        },
        onCreate: (socket) => this.#sockets.set(relay, socket),
      }) as typeof globalThis.WebSocket,
      enablePing: this.#ping,
    });
    relay.onnotice = (msg) => {
      this.#lastNotice = msg;
    };
    relay.onclose = () => {
      if (this.#relay === relay) this.#relay = undefined;
      // the reasons AbstractRelay gives its own publishes: after a socket error it closes as failed
      this.#failWaiting(relay, this.#sockets.get(relay)?.errored === true ? 'relay connection failed' : 'relay connection closed');
    };
    const original = relay._onmessage.bind(relay);
    const sign = this.#signAuth;
    relay._onmessage = (ev: MessageEvent) => {
      if (typeof ev.data === 'string' && this.#takeFrame(ev.data)) return;
      original(ev);
      // NIP-42: answer the relay's challenge at once (AbstractRelay keeps one AUTH per
      // connection). Not through its `onauth`, which rethrows a refused AUTH unhandled.
      if (sign && typeof ev.data === 'string' && ev.data.slice(0, 12).includes('"AUTH"') && relay.connected) {
        relay.auth(async (t) => sign(t) as VerifiedEvent).catch(() => undefined);
      }
    };
    this.#relay = relay;
    try {
      await relay.connect({ timeout: timeoutMs });
    } catch (err) {
      if (this.#relay === relay) this.#relay = undefined;
      try {
        relay.close();
      } catch {
        // nothing open
      }
      const base = describe(err);
      throw new Error(this.#lastSocketError && base !== 'connection timed out' ? `${base}: ${this.#lastSocketError}` : base);
    }
    if (this.#closed) {
      relay.close();
      throw new Error('relay client closed');
    }
    return relay;
  }

  #drop(): void {
    const relay = this.#relay;
    this.#relay = undefined;
    if (relay) {
      // before AbstractRelay's onclose, which would name it closed by the relay
      this.#failWaiting(relay, 'relay connection closed by us');
      try {
        relay.close();
      } catch {
        // already closed
      }
    }
  }

  /**
   * Sees every frame before AbstractRelay does: settles our publishes with their OK
   * answers (true: the frame is used up, AbstractRelay has no publish waiting on it) and
   * hands raw EVENT text to our fetches.
   */
  #takeFrame(text: string): boolean {
    const ok = parseOkFrame(text);
    if (ok !== undefined) return this.#settle(ok.id, ok);
    if (this.#rawEvents.size > 0 && text.slice(0, 16).includes('"EVENT"')) {
      const split = splitEventFrame(text);
      if (split) this.#rawEvents.get(split.subId)?.(split.eventJson);
    }
    return false;
  }
}

function prefixOf(message: string): string | undefined {
  const m = /^([a-z][a-z-]*):/.exec(message);
  return m ? m[1] : undefined;
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number of milliseconds`);
  return value;
}

/** A relay's own words, quoted as a bounded one-line prefix. */
function boundedText(text: string): string {
  const line = String(text).replace(/[\r\n]+/g, ' ');
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return String(err);
}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline')), Math.max(1, ms));
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
