/**
 * A real Nostr relay on loopback for development and tests: @nostr-relay/core with
 * its validator and an in-memory repository (nothing compiled natively) behind a `ws`
 * server. Its caches are off, an
 * event whose id or signature is wrong is answered `OK false "invalid: ..."` (checked
 * before the relay's own duplicate check, as strfry does), and simple fault switches
 * make it refuse (`beforeEvent`), stay silent, or drop the connection.
 *
 * Profiles make it behave as public relays do (see relay-profiles.ts): `damus`
 * (rate-limited per key), `pow` (NIP-13), `auth` (NIP-42 for writes), `strict` (message
 * cap, created_at window, unknown kinds restricted), `paid` and `restricted`. Each serves
 * a truthful NIP-11 document on the same port (HTTP GET with
 * `Accept: application/nostr+json`).
 *
 * The @nostr-relay packages are optional dependencies, loaded on first use.
 */
import type { NostrRelay as NostrRelayType } from '@nostr-relay/core';
import type { MemoryEventRepository as MemoryEventRepositoryType } from './memory-event-repository.js';
import type { Validator as ValidatorType } from '@nostr-relay/validator';
import type { ClientContext, Event as RelayEvent, HandleMessageResult, IncomingMessage, Logger } from '@nostr-relay/common';
import { RelayProfileState, relayInfoDocument, type RelayProfileCounters, type RelayProfileName, type RelayProfileOptions } from './relay-profiles.js';
import { acceptConnection, type DevRelayFaults, type RelayConnectionContext } from './relay-connection.js';
import { RelayListener, relayInfoResponder } from './relay-listener.js';
import { UsageError } from '../../core/errors/errors.js';
import type { SignedEvent } from '../../core/nostr/keys.js';

export { RELAY_PROFILES, type RelayProfileName, type RelayProfileOptions, type RelayProfileCounters } from './relay-profiles.js';

/** What `beforeEvent` returns to refuse an event; `undefined` lets it through. */
export interface BeforeEventRefusal {
  accept: false;
  /** Sent as the OK message, e.g. `rate-limited: slow down`. */
  message: string;
}

export type BeforeEventHook = (event: SignedEvent) => BeforeEventRefusal | undefined | void;

export type { DevRelayFaults } from './relay-connection.js';

export interface DevRelayOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * JSON-lines file the events are replayed from and appended to; default none: in memory
   * (kept across `stop`/`restart`, lost on `close`).
   */
  eventsFile?: string;
  beforeEvent?: BeforeEventHook;
  silent?: boolean;
  dropOnEvent?: boolean;
  /** Receives the relay library's log lines; silent by default. */
  log?: (line: string) => void;
  /** Behave as a public relay does (default `open`: takes whatever it is sent). */
  profile?: RelayProfileName;
  /** The profile's numbers (rate, difficulty, limits), each with a default. */
  profileOptions?: RelayProfileOptions;
}

export interface DevRelay {
  /** `ws://host:port` */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  /** Mutable at run time, for fault tests. */
  readonly faults: DevRelayFaults;
  /** Replaceable at run time. */
  beforeEvent: BeforeEventHook | undefined;
  /** True while listening. */
  readonly listening: boolean;
  /** Stops listening and drops every connection; the stored events stay. */
  stop(): Promise<void>;
  /** Listens again on the same host and port, with the same events. */
  restart(): Promise<void>;
  /** Stops and releases the database. */
  close(): Promise<void>;
  /** Number of events stored. */
  eventCount(): number;
  /** Every stored event, oldest first (then by id). */
  events(): SignedEvent[];
  /** Drops these events from storage silently (a relay pruning its database); returns how many it held. */
  loseEvents(ids: Iterable<string>): number;
  /** The profile this relay plays. */
  readonly profile: RelayProfileName;
  /** Its counters: refusals by prefix, connections, NIP-42 AUTH successes per connection. */
  counters(): RelayProfileCounters;
  /** The NIP-11 document it serves. */
  readonly info: Record<string, unknown>;
}

interface RelayPackages {
  NostrRelay: typeof NostrRelayType;
  MemoryEventRepository: typeof MemoryEventRepositoryType;
  Validator: typeof ValidatorType;
  validateEvent: (event: RelayEvent) => string | undefined;
}

const PACKAGES = ['@nostr-relay/core', '@nostr-relay/common', '@nostr-relay/validator'];

interface SignatureChecker {
  isSigValid(event: { id: string; sig: string; pubkey: string }): boolean;
  __aer1Memoized?: boolean;
}

/**
 * Our pre-check and the library each verify every event's Schnorr signature; remember
 * the good ones (by id, pubkey and sig — the id is checked against the content first)
 * so each event is verified once. Halves the dev relay's CPU per event.
 */
function memoizeSignatureChecks(utils: SignatureChecker): void {
  if (utils.__aer1Memoized) return;
  const original = utils.isSigValid.bind(utils);
  const good = new Set<string>();
  utils.isSigValid = (event) => {
    const key = `${event.id}:${event.pubkey}:${event.sig}`;
    if (good.has(key)) return true;
    const ok = original(event);
    if (ok) {
      if (good.size >= 100_000) good.clear();
      good.add(key);
    }
    return ok;
  };
  utils.__aer1Memoized = true;
}

async function loadRelayPackages(): Promise<RelayPackages> {
  try {
    const [core, common, validator, memory] = await Promise.all([
      import('@nostr-relay/core'),
      import('@nostr-relay/common'),
      import('@nostr-relay/validator'),
      import('./memory-event-repository.js'),
    ]);
    memoizeSignatureChecks(common.EventUtils as unknown as SignatureChecker);
    return {
      NostrRelay: core.NostrRelay,
      MemoryEventRepository: memory.MemoryEventRepository,
      Validator: validator.Validator,
      validateEvent: (event) => common.EventUtils.validate(event),
    };
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(
      `the dev relay needs the optional packages ${PACKAGES.join(', ')}; ` +
        `install them with: npm install --include=optional (${reason})`,
      'dev_relay_unavailable',
    );
  }
}

function quietLogger(log: ((line: string) => void) | undefined): Logger {
  const write = (level: string) => (message: string) => log?.(`[nostr-relay ${level}] ${message}`);
  return {
    setLogLevel: () => undefined,
    debug: () => undefined,
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
  };
}

export async function startDevRelay(options: DevRelayOptions = {}): Promise<DevRelay> {
  const pkgs = await loadRelayPackages();
  const host = options.host ?? '127.0.0.1';
  const requestedPort = checkedPort(options.port ?? 0);
  const repository = new pkgs.MemoryEventRepository(options.eventsFile !== undefined ? { file: options.eventsFile } : {});
  await repository.init();
  const profile = new RelayProfileState(options.profile ?? 'open', options.profileOptions ?? {});
  const hooks: BeforeEventState = { beforeEvent: options.beforeEvent };
  const relay = createRelay(pkgs, { repository, profile, hooks, host, log: options.log });
  const info = relayInfoDocument(profile);
  const faults: DevRelayFaults = { silent: options.silent === true, dropOnEvent: options.dropOnEvent === true };
  const connection: RelayConnectionContext = { relay, validator: new pkgs.Validator(), validateEvent: pkgs.validateEvent, profile, faults };
  const listener = new RelayListener(host, requestedPort, relayInfoResponder(JSON.stringify(info)), (ws, req) => acceptConnection(connection, ws, req));
  await listener.listen();
  return devRelayHandle({ listener, relay, repository, profile, hooks, faults, info });
}

function checkedPort(port: number): number {
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`port must be an integer 0-65535, got ${String(port)}`);
  }
  return port;
}

/** The hook a test may replace while the relay runs. */
interface BeforeEventState {
  beforeEvent: BeforeEventHook | undefined;
}

interface RelaySetup {
  repository: MemoryEventRepositoryType;
  profile: RelayProfileState;
  hooks: BeforeEventState;
  host: string;
  log: ((line: string) => void) | undefined;
}

/** The relay library with its caches off and the profile's and the hook's gates registered. */
function createRelay(pkgs: RelayPackages, { repository, profile, hooks, host, log }: RelaySetup): NostrRelayType {
  const relay = new pkgs.NostrRelay(repository, {
    // with either cache on, a tampered event whose id was seen is answered `duplicate`
    eventHandlingResultCacheTtl: 0,
    filterResultCacheTtl: 0,
    logger: quietLogger(log),
    // NIP-42 as @nostr-relay/core has it: an AUTH challenge on connect, kind 22242 checked
    // (challenge, relay host, created_at within 10 minutes); the profile requires it for writes
    ...(profile.name === 'auth' ? { hostname: host } : {}),
  });
  relay.register({ handleMessage: authGate(profile) });
  relay.register({
    beforeHandleEvent: (event: RelayEvent) => {
      const verdict = hooks.beforeEvent?.(toSignedEvent(event));
      if (verdict && verdict.accept === false) return { canHandle: false, message: verdict.message };
      const refusal = profile.check(toSignedEvent(event), repository.has(event.id));
      return refusal ? { canHandle: false, message: refusal } : { canHandle: true };
    },
  });
  return relay;
}

type MessageHandler = (ctx: ClientContext, message: IncomingMessage, next: () => Promise<HandleMessageResult>) => Promise<HandleMessageResult>;

/** The `auth` profile: EVENTs from unauthenticated connections are refused; AUTH successes are counted. */
function authGate(profile: RelayProfileState): MessageHandler {
  return async (ctx, message, next) => {
    if (message[0] === 'EVENT' && profile.name === 'auth' && ctx.pubkey === undefined) {
      profile.refused('auth-required');
      if (profile.authChallenge === 'demand') ctx.sendMessage(['AUTH', ctx.id]);
      ctx.sendMessage(['OK', message[1].id, false, 'auth-required: this relay takes events from authenticated keys only (NIP-42)']);
      return { messageType: 'EVENT', success: false } as HandleMessageResult;
    }
    const result = await next();
    if (message[0] === 'AUTH' && (result as { success?: boolean }).success === true) profile.authenticated(ctx.id);
    return result;
  };
}

interface RelayParts {
  listener: RelayListener;
  relay: NostrRelayType;
  repository: MemoryEventRepositoryType;
  profile: RelayProfileState;
  hooks: BeforeEventState;
  faults: DevRelayFaults;
  info: Record<string, unknown>;
}

/** The `DevRelay` callers hold: its address, switches and store, and stop/restart/close. */
function devRelayHandle({ listener, relay, repository, profile, hooks, faults, info }: RelayParts): DevRelay {
  const { host } = listener;
  let closed = false;
  return {
    get url() {
      return `ws://${host.includes(':') ? `[${host}]` : host}:${listener.port}`;
    },
    get port() {
      return listener.port;
    },
    host,
    faults,
    get beforeEvent() {
      return hooks.beforeEvent;
    },
    set beforeEvent(hook: BeforeEventHook | undefined) {
      hooks.beforeEvent = hook;
    },
    get listening() {
      return listener.listening;
    },
    stop: () => listener.stop(),
    async restart() {
      if (closed) throw new Error('dev relay is closed');
      if (listener.listening) return;
      await listener.listen();
    },
    async close() {
      if (closed) return;
      closed = true;
      await listener.stop();
      await relay.destroy();
      await repository.destroy();
    },
    eventCount() {
      return repository.count();
    },
    events() {
      return repository.all().map(toSignedEvent);
    },
    loseEvents(ids: Iterable<string>) {
      return repository.lose(ids);
    },
    profile: profile.name,
    counters() {
      return profile.counters();
    },
    info,
  };
}

function toSignedEvent(e: RelayEvent): SignedEvent {
  return { id: e.id, pubkey: e.pubkey, created_at: e.created_at, kind: e.kind, tags: e.tags, content: e.content, sig: e.sig };
}
