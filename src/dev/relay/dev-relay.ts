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
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { NostrRelay as NostrRelayType } from '@nostr-relay/core';
import type { MemoryEventRepository as MemoryEventRepositoryType } from './memory-event-repository.js';
import type { Validator as ValidatorType } from '@nostr-relay/validator';
import type { ClientContext, Event as RelayEvent, HandleMessageResult, IncomingMessage, Logger } from '@nostr-relay/common';
import { RelayProfileState, relayInfoDocument, type RelayProfileCounters, type RelayProfileName, type RelayProfileOptions } from './relay-profiles.js';
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

export interface DevRelayFaults {
  /** Never answer an EVENT (no OK, no NOTICE): publishers time out. */
  silent: boolean;
  /** Close the connection abruptly upon receiving an EVENT. */
  dropOnEvent: boolean;
}

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
  const requestedPort = options.port ?? 0;
  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65535) {
    throw new UsageError(`port must be an integer 0-65535, got ${String(requestedPort)}`);
  }
  const repository = new pkgs.MemoryEventRepository(options.eventsFile !== undefined ? { file: options.eventsFile } : {});
  await repository.init();
  const profile = new RelayProfileState(options.profile ?? 'open', options.profileOptions ?? {});
  const relay = new pkgs.NostrRelay(repository, {
    // with either cache on, a tampered event whose id was seen is answered `duplicate`
    eventHandlingResultCacheTtl: 0,
    filterResultCacheTtl: 0,
    logger: quietLogger(options.log),
    // NIP-42 as @nostr-relay/core has it: an AUTH challenge on connect, kind 22242 checked
    // (challenge, relay host, created_at within 10 minutes); the profile requires it for writes
    ...(profile.name === 'auth' ? { hostname: host } : {}),
  });
  const validator = new pkgs.Validator();
  const state: { beforeEvent: BeforeEventHook | undefined } = { beforeEvent: options.beforeEvent };
  relay.register({
    handleMessage: async (ctx: ClientContext, message: IncomingMessage, next: () => Promise<HandleMessageResult>): Promise<HandleMessageResult> => {
      if (message[0] === 'EVENT' && profile.name === 'auth' && ctx.pubkey === undefined) {
        profile.refused('auth-required');
        if (profile.authChallenge === 'demand') ctx.sendMessage(['AUTH', ctx.id]);
        ctx.sendMessage(['OK', message[1].id, false, 'auth-required: this relay takes events from authenticated keys only (NIP-42)']);
        return { messageType: 'EVENT', success: false } as HandleMessageResult;
      }
      const result = await next();
      if (message[0] === 'AUTH' && (result as { success?: boolean }).success === true) profile.authenticated(ctx.id);
      return result;
    },
  });
  relay.register({
    beforeHandleEvent: (event: RelayEvent) => {
      const verdict = state.beforeEvent?.(toSignedEvent(event));
      if (verdict && verdict.accept === false) return { canHandle: false, message: verdict.message };
      const refusal = profile.check(toSignedEvent(event), repository.has(event.id));
      return refusal ? { canHandle: false, message: refusal } : { canHandle: true };
    },
  });
  const info = relayInfoDocument(profile);
  const faults: DevRelayFaults = { silent: options.silent === true, dropOnEvent: options.dropOnEvent === true };

  const send = (ws: WebSocket, message: unknown[]): void => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
  };

  const onMessage = async (ws: WebSocket, text: string): Promise<void> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      send(ws, ['NOTICE', 'invalid: message is not JSON']);
      return;
    }
    const isEvent = Array.isArray(parsed) && parsed[0] === 'EVENT';
    if (isEvent && profile.maxMessageLength !== undefined && Buffer.byteLength(text, 'utf8') > profile.maxMessageLength) {
      profile.refused('invalid');
      send(ws, ['OK', eventIdOf(parsed), false, `invalid: message over ${profile.maxMessageLength} bytes`]);
      return;
    }
    if (isEvent) {
      if (faults.dropOnEvent) {
        ws.terminate();
        return;
      }
      if (faults.silent) return;
    }
    const claimedId = isEvent ? eventIdOf(parsed) : '';
    let message: IncomingMessage;
    try {
      message = await validator.validateIncomingMessage(parsed as never);
    } catch (err) {
      const reason = withPrefix('invalid', (err as Error).message);
      // the library's default answer is a NOTICE; publishers wait for an OK
      send(ws, isEvent ? ['OK', claimedId, false, reason] : ['NOTICE', reason]);
      return;
    }
    if (message[0] === 'EVENT') {
      const problem = pkgs.validateEvent(message[1]);
      if (problem) {
        send(ws, ['OK', message[1].id, false, withPrefix('invalid', problem)]);
        return;
      }
    }
    try {
      await relay.handleMessage(ws, message);
    } catch (err) {
      const reason = withPrefix('error', (err as Error).message);
      send(ws, message[0] === 'EVENT' ? ['OK', message[1].id, false, reason] : ['NOTICE', reason]);
    }
  };

  let server: WebSocketServer | undefined;
  let http: Server | undefined;
  let port = requestedPort;
  const infoText = JSON.stringify(info);

  const listen = async (): Promise<void> => {
    // NIP-11 on the same port: GET with Accept: application/nostr+json
    const httpServer = createServer((req, res) => {
      const accept = String(req.headers.accept ?? '');
      if (req.method === 'GET' && accept.includes('application/nostr+json')) {
        res.writeHead(200, { 'content-type': 'application/nostr+json', 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'GET' });
        res.end(infoText);
        return;
      }
      res.writeHead(426, { 'content-type': 'text/plain' });
      res.end('a Nostr relay: connect with a WebSocket, or GET with Accept: application/nostr+json\n');
    });
    await new Promise<void>((resolve, reject) => {
      httpServer.once('listening', resolve);
      httpServer.once('error', reject);
      httpServer.listen(port, host);
    });
    httpServer.on('error', () => undefined);
    const wss = new WebSocketServer({ server: httpServer, maxPayload: 1024 * 1024 });
    wss.on('error', () => undefined);
    wss.on('connection', (ws, req) => {
      profile.connected();
      if (profile.name === 'auth' && profile.authChallenge === 'demand') {
        // @nostr-relay/core sends its challenge on connect: hold that one back (it stays the
        // connection's challenge, sent with the first auth-required: answer)
        const send = ws.send.bind(ws);
        ws.send = (() => undefined) as typeof ws.send;
        relay.handleConnection(ws, req.socket.remoteAddress);
        ws.send = send;
      } else {
        relay.handleConnection(ws, req.socket.remoteAddress);
      }
      ws.on('message', (data, isBinary) => {
        const text = isBinary ? null : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
        if (text === null) {
          send(ws, ['NOTICE', 'invalid: binary messages are not accepted']);
          return;
        }
        void onMessage(ws, text);
      });
      ws.on('close', () => relay.handleDisconnect(ws));
      ws.on('error', () => undefined);
    });
    port = (httpServer.address() as AddressInfo).port;
    server = wss;
    http = httpServer;
  };

  const stop = async (): Promise<void> => {
    const wss = server;
    const httpServer = http;
    if (!wss || !httpServer) return;
    server = undefined;
    http = undefined;
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    httpServer.closeAllConnections();
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
  };

  await listen();
  let closed = false;

  const devRelay: DevRelay = {
    get url() {
      return `ws://${host.includes(':') ? `[${host}]` : host}:${port}`;
    },
    get port() {
      return port;
    },
    host,
    faults,
    get beforeEvent() {
      return state.beforeEvent;
    },
    set beforeEvent(hook: BeforeEventHook | undefined) {
      state.beforeEvent = hook;
    },
    get listening() {
      return server !== undefined;
    },
    stop,
    async restart() {
      if (closed) throw new Error('dev relay is closed');
      if (server) return;
      await listen();
    },
    async close() {
      if (closed) return;
      closed = true;
      await stop();
      await relay.destroy();
      await repository.destroy();
    },
    eventCount() {
      return repository.count();
    },
    events() {
      return repository.all().map(toSignedEvent);
    },
    profile: profile.name,
    counters() {
      return profile.counters();
    },
    info,
  };
  return devRelay;
}

function toSignedEvent(e: RelayEvent): SignedEvent {
  return { id: e.id, pubkey: e.pubkey, created_at: e.created_at, kind: e.kind, tags: e.tags, content: e.content, sig: e.sig };
}

function eventIdOf(parsed: unknown): string {
  const event: unknown = Array.isArray(parsed) ? parsed[1] : undefined;
  if (event !== null && typeof event === 'object') {
    const id = (event as Record<string, unknown>)['id'];
    if (typeof id === 'string') return id;
  }
  return '';
}

function withPrefix(prefix: string, message: string): string {
  return /^[a-z-]+: /.test(message) ? message : `${prefix}: ${message}`;
}
