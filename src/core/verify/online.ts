/**
 * Stage `online` (SPEC §6.7, only with `--online`): the event is fetched back by id from
 * the relays the caller names (`--relay`), and from the proof's own list only when the
 * caller asks for it (`--use-proof-relays`), and compared with the proof's event, all
 * seven NIP-01 fields byte for byte. PASS when a relay serves the identical event; FAIL
 * when a relay serves a different one, or every relay that answered has none; SKIP when
 * none answered. The fetcher is the caller's (src/adapters/nostr/relay-fetcher.ts).
 */
import type { NostrEventJson } from '../proof/format.js';
import type { RelayQueryFilter } from '../nostr/filter.js';
import { sameSignedEvent } from '../nostr/events.js';
import { fail, pass, skip, type CheckResult } from './types.js';

/** Fetches an event's JSON text by id from one relay: null when the relay has none; throws when it cannot be asked. */
export interface RelayFetcher {
  fetch(url: string, id: string): Promise<string | null>;
  /** The JSON texts of the events matching one bounded filter (`limit` required); throws when the relay cannot be asked. */
  query(url: string, filter: RelayQueryFilter): Promise<string[]>;
  close(): void;
}

/** Which relays to ask: the caller's (`named`), plus the proof's own list when the caller opted in. */
export interface OnlineRelays {
  named: readonly string[];
  fromProof: readonly string[];
  /** The proof's relays not asked: not a ws:// or wss:// URL in ASCII, or past the bound. */
  fromProofLeftOut?: { notUrl: number; past: number };
}

/** Copies of the proof a relay with none of its own is asked for, at most (each one more round trip). */
export const MAX_OTHER_COPIES = 4;

export interface OnlineOutcome {
  check: CheckResult;
  found: boolean;
  /** Relays that served the identical event, or an identical copy the proof carries. */
  holders: string[];
  /** Of `holders`, those that served a copy (another id) rather than the event itself. */
  copyHolders?: string[];
}

/**
 * `copies`: per relay URL, the copy of the event the proof says that relay was sent instead
 * (proof of work, re-dated; already verified to be the same anchor, same signer); that
 * relay is asked for the copy's id and compared with it, then, when it has none, for the
 * event's; a relay with no copy of its own is asked for the event, then for up to
 * MAX_OTHER_COPIES of the proof's copies (URLs are spelled many ways). A copy counts exactly
 * as the event would: that relay holds the anchor.
 */
export async function checkOnline(event: NostrEventJson | null, relays: OnlineRelays, fetcher: RelayFetcher | null, copies: ReadonlyMap<string, NostrEventJson> = new Map()): Promise<OnlineOutcome> {
  const none = (check: CheckResult): OnlineOutcome => ({ check, found: false, holders: [] });
  if (!fetcher) return none(skip('online', 'offline (give --online --relay URL to fetch the event back from relays you name)'));
  if (!event) return none(skip('online', 'no event to fetch'));
  const urls = [...new Set([...relays.named, ...relays.fromProof])];
  if (urls.length === 0) return none(skip('online', 'no relay to ask (give --relay URL, or --use-proof-relays to ask the relays the proof names)'));
  const fromProofOnly = relays.fromProof.filter((u) => !relays.named.includes(u));
  const left = relays.fromProofLeftOut ?? { notUrl: 0, past: 0 };
  const leftOut = left.notUrl + left.past;
  const leftWhy = [left.notUrl ? `${left.notUrl} not ws:// or wss:// in ASCII` : '', left.past ? `${left.past} past the first ${relays.fromProof.length}` : ''].filter(Boolean).join(', ');
  const origin = (fromProofOnly.length ? ` (${fromProofOnly.length === urls.length ? 'all' : fromProofOnly.length} taken from the proof itself, --use-proof-relays)` : '')
    + (leftOut ? `; ${leftOut} relay${leftOut === 1 ? '' : 's'} of the proof not asked (${leftWhy})` : '');
  const others = [...new Map([...copies.values()].filter((c) => c.id !== event.id).map((c) => [c.id, c] as const)).values()].slice(0, MAX_OTHER_COPIES);
  const answers = await Promise.all(urls.map(async (url) => {
    try {
      // The copy the proof names for this relay first, then the event itself: which relay
      // took which copy is the proof's unsigned word, so a copy named for the wrong relay
      // never hides the event that relay holds. Both are verified to be the same anchor.
      const copy = copies.get(url);
      // a relay named for no copy (or spelled otherwise than in the proof) is asked for the
      // event, then for a few of the proof's copies: each is the same anchor, already verified
      const candidates = copy && copy.id !== event.id ? [copy, event] : [event, ...others];
      for (const wanted of candidates) {
        const json = await fetcher.fetch(url, wanted.id);
        if (json === null) continue;
        if (!sameSignedEvent(json, wanted)) return { url, state: 'different' as const, id: wanted.id };
        return { url, state: 'same' as const, copy: wanted.id !== event.id };
      }
      return { url, state: 'missing' as const };
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
  const more = `${tail ? `; ${tail}` : ''}${origin}`;
  const asked = [...new Set(answers.flatMap((a) => (a.state === 'different' ? [a.id] : [])))].join(', ');
  const byCopy = answers.filter((a) => a.state === 'same' && a.copy).map((a) => a.url);
  if (different.length) return { check: fail('online', `${different.join(', ')} serve${different.length === 1 ? 's' : ''} a different event under id ${asked}${more}`), found: same.length > 0, holders: same, copyHolders: byCopy };
  const byEvent = same.filter((u) => !byCopy.includes(u));
  const served = [byEvent.length ? `identical event served by ${byEvent.join(', ')}` : '', byCopy.length ? `${byEvent.length ? 'an identical copy of it' : 'an identical copy of the event'} (same signer, kind, content and tags, another id) by ${byCopy.join(', ')}` : ''].filter(Boolean).join('; ');
  if (same.length) return { check: pass('online', `${served}${more}`), found: true, holders: same, copyHolders: byCopy };
  if (missing.length) return { check: fail('online', `event ${event.id} not found: ${tail}${origin}`), found: false, holders: [] };
  return none(skip('online', `no relay could be asked: ${tail}${origin}`));
}
