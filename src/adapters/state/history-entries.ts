/**
 * A subject's own history entries as its hash keeps them (`h:<n>`, history-lib.lua): a
 * witness transition compactly, anything else as its JSON. A transition's detail that starts
 * with a relay's URL and `:` keeps the URL as `~<n>`, its number in the Nostr registry, and
 * the usual `<url>: accepted` is `~<n>` alone (a detail of its own starting with `~` is kept
 * with one more `~` in front). Pure.
 */
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import type { HistoryEntry } from './subject-hash.js';

const LONG: Readonly<Record<string, string>> = { n: 'nostr', o: 'ots', p: 'pending', r: 'partial', c: 'confirmed', f: 'failed' };

/** A transition's detail as the hash keeps it: `relay` (its URL and registry number) as `~<n>` when the detail starts with it. */
export function packDetail(detail: string, relay?: { url: string; n: number }): string {
  if (relay && detail === `${relay.url}${ACCEPTED}`) return `~${relay.n}`;
  if (relay && detail.startsWith(`${relay.url}:`)) return `~${relay.n}${detail.slice(relay.url.length)}`;
  return detail.startsWith('~') ? `~${detail}` : detail;
}

/** What most relay details add to the URL, left off when packed. */
const ACCEPTED = ': accepted';
const RELAY_REF = /^~(\d+)(?::|$)/;

/** The relay numbers the entries of a subject hash name in their details (to look their URLs up before historyOf). */
export function detailRelays(hash: Record<string, string>): number[] {
  const out = new Set<number>();
  for (const [f, v] of Object.entries(hash)) {
    if (!f.startsWith('h:') || v.startsWith('{')) continue;
    const m = RELAY_REF.exec(v.split('|').slice(5).join('|'));
    if (m) out.add(Number(m[1]));
  }
  return [...out];
}

/** A detail as packDetail kept it, the relay's URL from `urls` (a number not there named as such). */
function unpackDetail(d: string, urls: ReadonlyMap<number, string>): string {
  if (d.startsWith('~~')) return d.slice(1);
  const m = RELAY_REF.exec(d);
  if (!m) return d;
  const n = Number(m[1]);
  const url = urls.get(n) ?? `(relay number ${n}, not in the registry)`;
  return m[0].endsWith(':') ? `${url}${d.slice(m[0].length - 1)}` : `${url}${ACCEPTED}`;
}

/** The entry `v` of a subject created at `createdMs`; `urls`: the relays its detail may name (detailRelays). */
export function decodeHistoryEntry(v: string, createdMs: number, urls: ReadonlyMap<number, string> = new Map()): HistoryEntry {
  if (v.startsWith('{')) return JSON.parse(v) as HistoryEntry;
  const parts = v.split('|');
  const [off = '0', w = '', from = '', to = '', status = ''] = parts;
  const detail = unpackDetail(parts.slice(5).join('|'), urls);
  const long = (x: string): string => LONG[x] ?? x;
  const at = formatAnchoredAt(new Date((Math.floor(createdMs / 1000) + Number(off)) * 1000));
  return { at, event: 'witness', witness: long(w), from: long(from), to: long(to), status: long(status), ...(detail !== '' ? { detail } : {}) };
}

/** The entries a subject hash (as text) keeps, in order. */
export function historyOf(hash: Record<string, string>, urls: ReadonlyMap<number, string> = new Map()): HistoryEntry[] {
  const created = Number(hash.created ?? 0);
  const out: Array<[number, HistoryEntry]> = [];
  for (const [f, v] of Object.entries(hash)) if (f.startsWith('h:')) out.push([Number(f.slice(2)), decodeHistoryEntry(v, created, urls)]);
  return out.sort((a, b) => a[0] - b[0]).map(([, e]) => e);
}
