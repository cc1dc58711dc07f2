/**
 * What one server spends on live clients (SSE and WebSocket together): a slot each, up to
 * `http.maxLiveClients` (one more is answered 503 with Retry-After), and a bounded send
 * buffer each — a replay waits for the client to take what it was sent, live messages do
 * not wait, and a client that does not read is closed (it can resume from its last id).
 */
import type { Socket } from 'node:net';
import { HttpError } from './respond.js';

/** Unsent bytes past which a live client is dropped. */
export const MAX_BUFFERED_BYTES = 256 * 1024;
/** A replay sends its next page only once the client's unsent bytes are at most this. */
export const REPLAY_LOW_WATER_BYTES = 64 * 1024;
/** A replaying client that takes nothing for this long is closed. */
export const STALL_MS = 10_000;
/** What a refused client is told to wait before trying again. */
export const RETRY_AFTER_S = 5;

export class LiveClients {
  private count = 0;
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  get size(): number {
    return this.count;
  }

  /** Takes a slot, or throws 503 when every slot is taken; the returned release is idempotent. */
  admit(): () => void {
    if (this.count >= this.max) {
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
