/** The `ws` WebSocket under RelayClient's connections (nostr-tools' AbstractRelay constructs it). */
import type { Socket } from 'node:net';
import WebSocket from 'ws';

export interface SocketSettings {
  handshakeTimeoutMs: number;
  onError: (err: Error) => void;
  onCreate: (socket: RelaySocket) => void;
}

/**
 * A `ws` WebSocket that always has an error listener (AbstractRelay detaches its own
 * before closing a socket that is still connecting, and an unheard 'error' would throw),
 * and sends the frames of one tick in one write.
 */
export class RelaySocket extends WebSocket {
  /** Whether the socket reported an error (AbstractRelay then closes the relay as failed). */
  errored = false;
  #raw: Socket | undefined;
  #corked = false;

  constructor(address: string | URL, protocols: string | string[] | undefined, settings: SocketSettings) {
    // no permessage-deflate: a relay that takes it up (strfry does) would have every
    // EVENT frame deflated, and answers inflated, for frames of a kilobyte or so
    super(address, protocols, { handshakeTimeout: settings.handshakeTimeoutMs + 1000, maxPayload: 16 * 1024 * 1024, perMessageDeflate: false });
    this.on('error', (err) => {
      this.errored = true;
      settings.onError(err);
    });
    this.once('upgrade', (res) => {
      this.#raw = res.socket;
    });
    settings.onCreate(this);
  }

  /** Sends a text frame; the frames sent within one tick leave in one write (the TCP socket corked until the next tick). */
  sendInTick(text: string): void {
    const raw = this.#raw;
    if (raw !== undefined && !this.#corked) {
      raw.cork();
      this.#corked = true;
      process.nextTick(() => {
        this.#corked = false;
        raw.uncork();
      });
    }
    this.send(text);
  }
}

/** RelaySocket with these settings, as the class AbstractRelay constructs with a URL alone. */
export function socketClass(settings: SocketSettings): unknown {
  return class extends RelaySocket {
    constructor(address: string | URL, protocols?: string | string[]) {
      super(address, protocols, settings);
    }
  };
}
