/**
 * The log's checkpoints as published on Nostr (checkpoint events, `["t", "aer1-checkpoint"]`,
 * content = the signed note): every relay's answer read page by page to its end within a
 * bound (relay-pages.ts), each event verified (id, BIP-340 signature, an author the caller
 * names, the marker tag, a note that parses). The notes are returned as found: whether the
 * log key signed them is the consistency check's (log-check.ts), against the caller's keys.
 */
import { CHECKPOINT_MARKER_TAG, isCheckpointEvent, readCheckpointNote, verifySignedEvent } from '../../core/nostr/events.js';
import { InputError } from '../../core/errors/errors.js';
import { pageAll, type PageBound, type RelayAnswer } from '../../core/verify/relay-pages.js';
import type { RelayFetcher } from '../../core/verify/online.js';
import type { OlderCheckpoint } from './log-check.js';

export interface CheckpointEventsOptions {
  readonly relays: readonly string[];
  /** Hex x-only keys whose events are read: the publisher of the log's checkpoints. */
  readonly authors: readonly string[];
  readonly fetcher: RelayFetcher;
  /** Unix seconds: only events from then on (inclusive). */
  readonly since?: number;
  readonly bound?: PageBound;
}

export interface CheckpointEvents {
  /** Distinct notes, each named by the first event and relay that carried it. */
  readonly notes: OlderCheckpoint[];
  readonly relays: RelayAnswer[];
  /** Events served that are not a verified checkpoint event of an author named, and why. */
  readonly ignored: Array<{ relay: string; event_id: string | null; reason: string }>;
  /** The newest created_at read (unix seconds), for the next listing's `since`; null when none. */
  readonly newest: number | null;
}

export async function listCheckpointEvents(options: CheckpointEventsOptions): Promise<CheckpointEvents> {
  const authors = new Set(options.authors);
  const byNote = new Map<string, OlderCheckpoint>();
  const ignored: CheckpointEvents['ignored'] = [];
  let newest: number | null = null;
  const sink = (url: string, texts: string[]): void => {
    for (const text of texts) {
      const checked = verifySignedEvent(text);
      if (!checked.ok) {
        ignored.push({ relay: url, event_id: /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text.slice(0, 4096))?.[1] ?? null, reason: checked.reason });
        continue;
      }
      const event = checked.event;
      const skip = (reason: string): void => void ignored.push({ relay: url, event_id: event.id, reason });
      if (!authors.has(event.pubkey)) {
        skip(`signed by ${event.pubkey}, not an author named`);
        continue;
      }
      if (!isCheckpointEvent(event)) {
        skip(`no ${JSON.stringify(CHECKPOINT_MARKER_TAG)} tag`);
        continue;
      }
      try {
        readCheckpointNote(event.content);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        skip(`its content is not a signed checkpoint: ${err.message}`);
        continue;
      }
      newest = Math.max(newest ?? 0, event.created_at);
      if (!byNote.has(event.content)) byNote.set(event.content, { name: `checkpoint event ${event.id} on ${url}`, note: event.content, published: true });
    }
  };
  const filter = { authors: [...authors], '#t': [CHECKPOINT_MARKER_TAG[1]], ...(options.since !== undefined ? { since: options.since } : {}) };
  const relays = await pageAll(options.fetcher, [...new Set(options.relays)], filter, sink, options.bound);
  return { notes: [...byNote.values()], relays, ignored, newest };
}
