/**
 * The events the relay drains publish, parsed once for every relay: each relay's drain reads
 * an event's stored JSON from Redis and the other relays' drains read the same text soon
 * after, so the object parsed for the first is handed to the others. An entry serves only the
 * very text it was parsed from (a stored text that differs is parsed anew), leaves once every
 * relay had it, and the oldest leave first beyond `max` (a relay far behind the others parses
 * its own).
 */
import type { SignedEvent } from '../../core/nostr/events.js';

export class ParsedEvents {
  private readonly entries = new Map<string, { json: string; event: SignedEvent; left: number }>();

  /** `readers`: the relays, each reading an event once; `max`: most entries held. */
  constructor(private readonly readers: number, private readonly max: number) {}

  /** The event `json` holds (stored under `id`); throws as JSON.parse does when it is not JSON. */
  parse(id: string, json: string): SignedEvent {
    const hit = this.entries.get(id);
    if (hit && hit.json === json) {
      if (--hit.left <= 0) this.entries.delete(id);
      return hit.event;
    }
    const event = JSON.parse(json) as SignedEvent;
    if (this.readers > 1) {
      this.entries.delete(id);
      this.entries.set(id, { json, event, left: this.readers - 1 });
      if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    }
    return event;
  }

  get size(): number {
    return this.entries.size;
  }
}
