/**
 * A real Nostr relay on loopback for development and tests: @nostr-relay/core with
 * its validator and an in-memory repository (nothing compiled natively) behind a `ws`
 * server. Its caches are off, an
 * event whose id or signature is wrong is answered `OK false "invalid: ..."` (checked
 * before the relay's own duplicate check, as strfry does), and simple fault switches
 * make it refuse (`beforeEvent`), stay silent, or drop the connection.
 *
 * The @nostr-relay packages are optional dependencies, loaded on first use.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { NostrRelay as NostrRelayType } from '@nostr-relay/core';
import type { MemoryEventRepository as MemoryEventRepositoryType } from './memory-event-repository.js';
import type { Validator as ValidatorType } from '@nostr-relay/validator';
import type { Event as RelayEvent, IncomingMessage, Logger } from '@nostr-relay/common';
import { UsageError } from '../../core/errors/errors.js';
import type { SignedEvent } from '../../core/nostr/keys.js';

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
  const relay = new pkgs.NostrRelay(repository, {
    // with either cache on, a tampered event whose id was seen is answered `duplicate`
    eventHandlingResultCacheTtl: 0,
    filterResultCacheTtl: 0,
    logger: quietLogger(options.log),
  });
  const validator = new pkgs.Validator();
  const state: { beforeEvent: BeforeEventHook | undefined } = { beforeEvent: options.beforeEvent };
  relay.register({
    beforeHandleEvent: (event: RelayEvent) => {
      const verdict = state.beforeEvent?.(toSignedEvent(event));
      return verdict && verdict.accept === false ? { canHandle: false, message: verdict.message } : { canHandle: true };
    },
  });
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
  let port = requestedPort;

  const listen = async (): Promise<void> => {
    const wss = new WebSocketServer({ host, port, maxPayload: 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    wss.on('error', () => undefined);
    wss.on('connection', (ws, req) => {
      relay.handleConnection(ws, req.socket.remoteAddress);
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
    port = (wss.address() as AddressInfo).port;
    server = wss;
  };

  const stop = async (): Promise<void> => {
    const wss = server;
    if (!wss) return;
    server = undefined;
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
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
