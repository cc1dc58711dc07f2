/**
 * One root per key: a trusted signer that anchors one subject key twice with different
 * roots has said two things about one subject, and no reader can tell which the document
 * should match. The anchors compared may come from relays (envelope-mode events; a relay
 * copy is the same anchor), or from a proof (its envelope, whatever witness carries it).
 * Pure: no I/O.
 */
import { canonicalJson } from '../aer1/canonical-json.js';
import type { Envelope } from '../envelope/envelope.js';
import { quote } from './anchor-events.js';

/** One anchor of a subject key, as the verifier read it. */
export interface AnchorClaim {
  /** `event <id>`, `the proof's batch event <id>`, `the proof (OTS only)`. */
  readonly source: string;
  readonly event_id: string | null;
  /** The signer's own word: a signer can write any created_at. */
  readonly created_at: number | null;
  /** The Bitcoin block time an OTS attestation verified, when there is one. */
  readonly ots_time: number | null;
  readonly envelope: Envelope;
}

/** Envelope members that do not belong to the subject's root: when, and where the evidence sits. */
const NOT_ROOT = new Set(['anchored_at', 'evidence_url']);

/** What an anchor commits the subject to: the envelope without its time and evidence URL, canonical. */
export function committedRoot(envelope: Envelope): string {
  const rest = Object.fromEntries(Object.entries(envelope).filter(([k]) => !NOT_ROOT.has(k)));
  return canonicalJson(rest);
}

export interface Equivocation {
  readonly first: AnchorClaim;
  readonly second: AnchorClaim;
  /** Distinct roots among the claims. */
  readonly roots: number;
  /** One line, starting `equivocation: `. */
  readonly detail: string;
}

const iso = (t: number): string => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

function when(c: AnchorClaim): string {
  const created = c.created_at === null ? 'no created_at' : `created_at ${c.created_at} (${iso(c.created_at)}, the signer's word)`;
  const ots = c.ots_time === null ? 'no OTS time' : `OTS: Bitcoin block time ${c.ots_time} (${iso(c.ots_time)})`;
  return `${created}; ${ots}`;
}

/** The members two envelopes disagree on, with both values, bounded. */
function differences(a: Envelope, b: Envelope): string {
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].filter((k) => !NOT_ROOT.has(k) && canonicalJson(ra[k] ?? null) !== canonicalJson(rb[k] ?? null)).sort();
  const show = (v: unknown): string => (v === undefined ? 'absent' : typeof v === 'string' ? quote(v, 70) : String(v));
  const parts = keys.slice(0, 4).map((k) => `${k} ${show(ra[k])} vs ${show(rb[k])}`);
  return parts.join(', ') + (keys.length > 4 ? ` and ${keys.length - 4} more members` : '');
}

/**
 * Two claims of different roots, the earliest by created_at and the first after it that
 * disagrees with it; null when every claim commits to one root.
 */
export function findEquivocation(claims: readonly AnchorClaim[]): Equivocation | null {
  if (claims.length < 2) return null;
  const ordered = [...claims].sort((x, y) => (x.created_at ?? Infinity) - (y.created_at ?? Infinity) || (x.event_id ?? '').localeCompare(y.event_id ?? ''));
  const roots = new Set(ordered.map((c) => committedRoot(c.envelope)));
  if (roots.size < 2) return null;
  const first = ordered[0]!;
  const firstRoot = committedRoot(first.envelope);
  const second = ordered.find((c) => committedRoot(c.envelope) !== firstRoot)!;
  const key = first.envelope.subject === 'chain-head' ? first.envelope.job_id : first.envelope.receipt_uuid;
  const more = roots.size > 2 ? ` (${roots.size} different roots in all)` : '';
  const detail = `equivocation: the trusted signer anchored ${first.envelope.subject} ${quote(key)} with two different roots${more}: `
    + `${first.source} (${when(first)}) and ${second.source} (${when(second)}) differ in ${differences(first.envelope, second.envelope)}`;
  return { first, second, roots: roots.size, detail };
}
