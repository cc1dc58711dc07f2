/**
 * A relay's report on an event as its event hash keeps it (field `r:<relay number>`,
 * nostr-registry.ts): one short text, so the hash stays a listpack. Fields joined by `|`,
 * in this order, trailing empty ones left off: status (one letter for the usual ones), final
 * (`1`, `0`, or empty when absent), at (ms since the epoch in base 36 when the ISO text is
 * exactly that instant's; else `=` and the text), attempts, prefix, pow, copyId, then the
 * message, which may hold `|` itself. report-lib.lua reads the status and final the same way.
 */
import type { RelayReportRecord } from './events.js';

const SHORT: Readonly<Record<string, string>> = { accepted: 'a', stored: 's', failed: 'f', rejected: 'r', pending: 'p' };
const LONG: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(SHORT).map(([l, s]) => [s, l]));

function encodeAt(at: string): string {
  if (at === '') return '';
  const ms = Date.parse(at);
  return Number.isFinite(ms) && ms >= 0 && new Date(ms).toISOString() === at ? ms.toString(36) : `=${at}`;
}

function decodeAt(v: string): string {
  if (v === '') return '';
  return v.startsWith('=') ? v.slice(1) : new Date(parseInt(v, 36)).toISOString();
}

const opt = (v: string | number | undefined): string => (v === undefined ? '' : String(v));

export function encodeReport(r: RelayReportRecord): string {
  const parts = [SHORT[r.status] ?? r.status, r.final === undefined ? '' : r.final ? '1' : '0', encodeAt(r.at), opt(r.attempts), opt(r.prefix), opt(r.pow), opt(r.copyId), r.message];
  let end = parts.length;
  while (end > 0 && parts[end - 1] === '') end--;
  return parts.slice(0, end).join('|');
}

/** The report `v` (encodeReport's text) of the relay `url`. */
export function decodeReport(url: string, v: string): RelayReportRecord {
  const parts = v.split('|');
  const [status = '', final = '', at = '', attempts = '', prefix = '', pow = '', copyId = ''] = parts;
  const out: RelayReportRecord = { url, status: LONG[status] ?? status, message: parts.slice(7).join('|'), at: decodeAt(at) };
  if (attempts !== '') out.attempts = Number(attempts);
  if (prefix !== '') out.prefix = prefix;
  if (final !== '') out.final = final === '1';
  if (copyId !== '') out.copyId = copyId;
  if (pow !== '') out.pow = Number(pow);
  return out;
}
