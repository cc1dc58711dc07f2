/**
 * A subject's own history entries as its hash keeps them (`h:<n>`, history-lib.lua): a
 * witness transition compactly, anything else as its JSON. Pure.
 */
import { formatAnchoredAt } from '../../core/envelope/envelope.js';
import type { HistoryEntry } from './subject-hash.js';

const LONG: Readonly<Record<string, string>> = { n: 'nostr', o: 'ots', p: 'pending', r: 'partial', c: 'confirmed', f: 'failed' };

/** The entry `v` of a subject created at `createdMs`. */
export function decodeHistoryEntry(v: string, createdMs: number): HistoryEntry {
  if (v.startsWith('{')) return JSON.parse(v) as HistoryEntry;
  const parts = v.split('|');
  const [off = '0', w = '', from = '', to = '', status = ''] = parts;
  const detail = parts.slice(5).join('|');
  const long = (x: string): string => LONG[x] ?? x;
  const at = formatAnchoredAt(new Date((Math.floor(createdMs / 1000) + Number(off)) * 1000));
  return { at, event: 'witness', witness: long(w), from: long(from), to: long(to), status: long(status), ...(detail !== '' ? { detail } : {}) };
}

/** The entries a subject hash (as text) keeps, in order. */
export function historyOf(hash: Record<string, string>): HistoryEntry[] {
  const created = Number(hash.created ?? 0);
  const out: Array<[number, HistoryEntry]> = [];
  for (const [f, v] of Object.entries(hash)) if (f.startsWith('h:')) out.push([Number(f.slice(2)), decodeHistoryEntry(v, created)]);
  return out.sort((a, b) => a[0] - b[0]).map(([, e]) => e);
}
