/**
 * What one server spends on live clients (SSE and WebSocket together): a slot each, up to
 * `http.maxLiveClients` (one more is answered 503 with Retry-After), and a bounded send
 * buffer each — a replay waits for the client to take what it was sent, live messages do
 * not wait, and a client that does not read is closed (it can resume from its last id).
 * A replay that Redis fails under closes its client with the cause (`liveFailure`).
 */
import type { Socket } from 'node:net';
import { Counter, Gauge, type Registry } from 'prom-client';
import { HttpError } from './respond.js';
import { describeRefusal, redisRefusal } from '../redis/redis-refusal.js';

/** Unsent bytes past which a live client is dropped. */
export const MAX_BUFFERED_BYTES = 256 * 1024;
/** A replay sends its next page only once the client's unsent bytes are at most this. */
export const REPLAY_LOW_WATER_BYTES = 64 * 1024;
/** A replaying client that takes nothing for this long is closed. */
export const STALL_MS = 10_000;
/** What a refused client is told to wait before trying again. */
export const RETRY_AFTER_S = 5;

const GAUGE = 'aer1_http_live_clients';
const REFUSED = 'aer1_http_live_clients_refused_total';
/** Every server's clients on a registry (tests run several servers over one daemon). */
const servers = new WeakMap<Registry, Set<LiveClients>>();

/** The gauge of connected clients and the counter of refusals, once per registry. */
function metricsOn(registry: Registry, live: LiveClients): Counter {
  let set = servers.get(registry);
  if (!set) {
    const all = new Set<LiveClients>();
    set = all;
    servers.set(registry, all);
    new Gauge({
      name: GAUGE,
      help: 'SSE and WebSocket clients connected now (capped by http.maxLiveClients).',
      registers: [registry],
      collect() {
        let n = 0;
        for (const l of all) n += l.size;
        this.set(n);
      },
    });
  }
  set.add(live);
  return (registry.getSingleMetric(REFUSED) as Counter | undefined) ??
    new Counter({ name: REFUSED, help: 'Live clients refused with 503 because http.maxLiveClients were connected.', registers: [registry] });
}

export class LiveClients {
  private count = 0;
  private readonly max: number;
  private readonly refused: Counter | null;
  private readonly registry: Registry | null;

  /** With a registry, the count and the refusals show in its metrics until `detach()`. */
  constructor(max: number, registry: Registry | null = null) {
    this.max = max;
    this.registry = registry;
    this.refused = registry ? metricsOn(registry, this) : null;
  }

  detach(): void {
    if (this.registry) servers.get(this.registry)?.delete(this);
  }

  get size(): number {
    return this.count;
  }

  /** Takes a slot, or throws 503 when every slot is taken; the returned release is idempotent. */
  admit(): () => void {
    if (this.count >= this.max) {
      this.refused?.inc();
      throw new HttpError(503, 'too_many_clients', `${this.max} live clients are connected, the most this server takes (http.maxLiveClients); try again later`, undefined, {
        'Retry-After': String(RETRY_AFTER_S),
      });
    }
    this.count += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.count -= 1;
    };
  }
}

/**
 * Resolves true once `socket` holds at most REPLAY_LOW_WATER_BYTES unsent, false when it is
 * gone or took nothing for STALL_MS (then it is destroyed).
 */
export function roomIn(socket: Socket): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(false);
  if (socket.writableLength <= REPLAY_LOW_WATER_BYTES) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      if (!ok) socket.destroy();
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    const timer = setTimeout(() => done(false), STALL_MS);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}

/** Called with what made a live client's replay fail (logs it); returns the cause to tell the client (one line, at most MAX_CAUSE_BYTES). */
export type ReplayFailure = (err: unknown) => string;

/** Longest cause told to a client: a WebSocket close reason holds 123 bytes (RFC 6455 §5.5). */
export const MAX_CAUSE_BYTES = 123;

/** Why a live client's replay failed, in words for it and the log; `ours` when it was not Redis (a fault of ours, worth a stack). */
export function liveFailure(err: unknown, redisTimeoutMs: number): { cause: string; ours: boolean } {
  const refusal = redisRefusal(err);
  let cause: string;
  if (refusal) cause = describeRefusal(refusal, redisTimeoutMs);
  // what Redis answered with (NOPERM, WRONGTYPE, ...): ioredis's ReplyError
  else if (err instanceof Error && err.name === 'ReplyError') cause = `Redis refused the read: ${err.message.split('\n', 1)[0]}`;
  else return { cause: 'internal error; see the daemon log', ours: true };
  return { cause: truncateBytes(cause, MAX_CAUSE_BYTES), ours: false };
}

/** `text` cut to at most `max` UTF-8 bytes, on a character boundary, an ellipsis marking the cut. */
function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = '';
  let bytes = Buffer.byteLength('…');
  for (const ch of text) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    out += ch;
  }
  return `${out}…`;
}
