/**
 * `--online`'s way to ask relays: one RelayClient per relay URL for the whole run,
 * behind the verifier's RelayFetcher interface.
 */
import type { RelayFetcher } from '../../core/verify/online.js';
import type { RelayQueryFilter } from '../../core/nostr/filter.js';
import type { RelayClient } from './relay-client.js';

/** One RelayClient per relay URL for the whole run. */
export class RelayClientFetcher implements RelayFetcher {
  private readonly clients = new Map<string, RelayClient>();
  constructor(private readonly timeoutMs = 10_000) {}

  async fetch(url: string, id: string): Promise<string | null> {
    return (await this.client(url)).fetchById(id);
  }

  async query(url: string, filter: RelayQueryFilter): Promise<string[]> {
    return (await this.client(url)).query(filter);
  }

  private async client(url: string): Promise<RelayClient> {
    let client = this.clients.get(url);
    if (!client) {
      // loaded on first use: an offline run never pays for the WebSocket stack
      const { RelayClient } = await import('./relay-client.js');
      client = this.clients.get(url) ?? new RelayClient(url, { fetchTimeoutMs: this.timeoutMs, connectTimeoutMs: Math.min(5000, this.timeoutMs), ping: false });
      this.clients.set(url, client);
    }
    return client;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
