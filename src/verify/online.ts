/**
 * Stage `online` (SPEC §6.7, only with `--online`): the event is fetched back by id from
 * the relays the proof names and compared with the proof's event, all seven NIP-01
 * fields byte for byte. PASS when a relay serves the identical event; FAIL when a relay
 * serves a different one, or every relay that answered has none; SKIP when none answered.
 */
import type { NostrEventJson } from '../proof/format.js';
import type { RelayClient, RelayQueryFilter } from '../witness/nostr/relay-client.js';
import { sameSignedEvent } from '../witness/nostr/events.js';
import { fail, pass, skip, type CheckResult } from './types.js';

/** Fetches an event's JSON text by id from one relay: null when the relay has none; throws when it cannot be asked. */
export interface RelayFetcher {
  fetch(url: string, id: string): Promise<string | null>;
  /** The JSON texts of the events matching one bounded filter (`limit` required); throws when the relay cannot be asked. */
  query(url: string, filter: RelayQueryFilter): Promise<string[]>;
  close(): void;
}

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
      const { RelayClient } = await import('../witness/nostr/relay-client.js');
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

export async function checkOnline(
  event: NostrEventJson | null,
  relays: readonly string[],
  fetcher: RelayFetcher | null,
): Promise<{ check: CheckResult; found: boolean }> {
  if (!fetcher) return { check: skip('online', 'offline (give --online to fetch the event back from its relays)'), found: false };
  if (!event) return { check: skip('online', 'no event to fetch'), found: false };
  const urls = [...new Set(relays)];
  if (urls.length === 0) return { check: skip('online', 'the proof names no relay'), found: false };
  const answers = await Promise.all(urls.map(async (url) => {
    try {
      const json = await fetcher.fetch(url, event.id);
      if (json === null) return { url, state: 'missing' as const };
      return { url, state: sameSignedEvent(json, event) ? ('same' as const) : ('different' as const) };
    } catch (err) {
      return { url, state: 'unreachable' as const, reason: (err as Error).message };
    }
  }));
  const by = (s: string): string[] => answers.filter((a) => a.state === s).map((a) => a.url);
  const same = by('same');
  const different = by('different');
  const missing = by('missing');
  const unreachable = by('unreachable');
  const tail = [
    missing.length ? `not on ${missing.join(', ')}` : '',
    unreachable.length ? `unreachable: ${unreachable.join(', ')}` : '',
  ].filter(Boolean).join('; ');
  if (different.length) return { check: fail('online', `${different.join(', ')} serve${different.length === 1 ? 's' : ''} a different event under id ${event.id}${tail ? `; ${tail}` : ''}`), found: same.length > 0 };
  if (same.length) return { check: pass('online', `identical event served by ${same.join(', ')}${tail ? `; ${tail}` : ''}`), found: true };
  if (missing.length) return { check: fail('online', `event ${event.id} not found: ${tail}`), found: false };
  return { check: skip('online', `no relay could be asked: ${tail}`), found: false };
}
