/**
 * Monitor mode (`aer1-anchor audit`): every envelope-mode anchor the trusted signers
 * published on the named relays, held against a folder of documents. Each subject ends in
 * one outcome: anchored and matching; anchored but altered or truncated; anchored twice
 * with different roots (equivocated); present in the folder but never anchored; anchored
 * but missing from the folder (withheld); or incomplete (a relay's answer for its key
 * could not be read to the end). Every answer is paged to its end within a bound
 * (relay-pages.ts); `--since` narrows only the listing that finds withheld subjects:
 * every key in the folder is looked up in full. Batch-mode events are counted, never tied
 * to subjects (docs/nostr.md).
 */
import type { SubjectKind } from '../envelope/envelope.js';
import { SUBJECT_TAG, subjectTagValue } from '../nostr/events.js';
import type { RelayQueryFilter } from '../nostr/filter.js';
import type { AnchorEventPolicy } from './anchor-events.js';
import type { NostrEventJson } from '../proof/format.js';
import {
  anchorIdentity, checkAgainstAnchor, claimOf, emptyHarvest, harvest, inRelayOrder, recognizeForDiscovery,
  type FoundAnchor, type Harvest, type IgnoredEvent,
} from './discover.js';
import { findEquivocation, type AnchorClaim } from './equivocation.js';
import { mergeAnswers, pageAll, type PageBound, type RelayAnswer } from './relay-pages.js';
import { findAttached } from './input.js';
import type { RelayFetcher } from './online.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from './pipeline.js';
import { UsageError } from '../errors/errors.js';

export const AUDIT_OUTCOMES = ['matching', 'altered', 'truncated', 'equivocated', 'not-anchored', 'withheld', 'incomplete'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** Keys asked for in one `#i` look-up (for folder documents the listing did not reach). */
const KEYS_PER_LOOKUP = 50;

export interface AuditOptions {
  readonly relays: readonly string[];
  /** Hex keys of the signers the caller trusts. */
  readonly trustedPubkeys: readonly string[];
  readonly kinds: readonly number[];
  /** Unix seconds: list anchors from then on, for withheld subjects (every folder key is still looked up in full). */
  readonly since?: number;
  readonly fetcher: RelayFetcher;
  /** Events per page and events read per relay per listing or look-up (relay-pages.ts defaults). */
  readonly bound?: PageBound;
  readonly verify?: VerifyOptions;
}

export interface AuditDocument {
  readonly file: string;
  readonly value: unknown;
}

export interface AuditRow {
  readonly outcome: AuditOutcome;
  readonly kind: SubjectKind | null;
  readonly key: string;
  /** The folder document, null when withheld. */
  readonly file: string | null;
  /** Event ids of the anchors of this subject. */
  readonly anchors: string[];
  readonly detail: string;
}

export interface AuditReport {
  readonly signers: string[];
  /** Each relay's listing (from --since on). */
  readonly relays: RelayAnswer[];
  /** Each relay's look-ups of the folder's keys, summed. */
  readonly lookups: RelayAnswer[];
  /** Envelope-mode anchors seen (listing and look-ups), distinct anchors: a relay copy counts with the event it copies. */
  readonly anchor_events: number;
  /** Batch-mode events listed: their subjects cannot be named. */
  readonly batch_events: number;
  readonly rows: AuditRow[];
  readonly counts: Record<AuditOutcome, number>;
  readonly unreadable: Array<{ file: string; error: string }>;
  readonly ignored: IgnoredEvent[];
  /** Every relay's listing and look-ups were read to their end. */
  readonly complete: boolean;
}

/**
 * A document anchored in batch mode cannot be found by key; its attached proof can still
 * tie it to a batch event: the proof is checked offline (document, envelope, digest,
 * inclusion path, trusted signer) and its batch event must be one the signer published
 * on the named relays. Null when the proof shows no such batch anchor.
 */
async function batchAnchored(
  original: unknown, found: Harvest, relays: readonly string[], policy: AnchorEventPolicy, fetcher: RelayFetcher, options: VerifyOptions,
): Promise<Pick<AuditRow, 'outcome' | 'anchors' | 'detail'> | null> {
  let report: VerifyReport;
  try {
    report = await verifyAnchor({ value: original }, options);
  } catch (err) {
    if (err instanceof UsageError) return null;
    throw err;
  }
  const nostr = report.witnesses.nostr;
  if (nostr?.mode !== 'batch' || nostr.event_id === null) return null;
  const id = nostr.event_id;
  // the event as the proof carries it (the pipeline verified it and its relay copies), and
  // the ids of those copies: a relay that asked for proof of work holds only its copy
  const proofNostr = (findAttached(original)?.proof as { nostr?: { event?: NostrEventJson; relays?: Array<{ event?: NostrEventJson }> } } | undefined)?.nostr;
  if (!proofNostr?.event || proofNostr.event.id !== id) return null;
  const identity = anchorIdentity(proofNostr.event);
  const copyIds = [...new Set((proofNostr.relays ?? []).flatMap((r) => (r?.event && typeof r.event.id === 'string' && r.event.id !== id ? [r.event.id] : [])))].slice(0, 8);
  if (!found.batches.has(identity)) {
    for (const url of relays) {
      for (const wanted of [id, ...copyIds]) {
        try {
          const text = await fetcher.fetch(url, wanted);
          if (text !== null) harvest(found, url, [text], policy);
        } catch {
          // unreachable: the listing already reported it
        }
        if (found.batches.get(identity)?.includes(url)) break;
      }
    }
  }
  const on = found.batches.get(identity);
  if (!on) return null;
  if (report.verdict === 'FAIL') return { outcome: classify(report.reason), anchors: [id], detail: `batch event ${id}, by its attached proof: ${report.reason}` };
  return { outcome: 'matching', anchors: [id], detail: `batch mode: matches its attached proof, whose batch event ${id} is on ${on.join(', ')}` };
}

function classify(reason: string): AuditOutcome {
  return reason.includes('truncated:') ? 'truncated' : 'altered';
}

/** Holds the documents against the signers' anchors. */
export async function audit(documents: readonly AuditDocument[], options: AuditOptions): Promise<AuditReport> {
  const relays = [...new Set(options.relays)];
  const authors = [...new Set(options.trustedPubkeys)];
  const kinds = [...new Set(options.kinds)];
  const policy: AnchorEventPolicy = { trusted: new Set(authors), kinds: new Set(kinds) };
  const base: RelayQueryFilter = { authors, kinds };

  // the listing finds withheld subjects: from --since on, every page
  const found = emptyHarvest();
  const sink = (url: string, texts: string[]): void => harvest(found, url, texts, policy);
  const listed = await pageAll(options.fetcher, relays, { ...base, ...(options.since !== undefined ? { since: options.since } : {}) }, sink, options.bound);
  const listedKeys = new Set([...found.anchors.values()].map((a) => a.key));

  // documents: the proof attached to one is set aside, the document alone is held against the relays
  const docs: Array<{ file: string; value: unknown; attached: boolean; original: unknown; kind: SubjectKind; key: string }> = [];
  const unreadable: Array<{ file: string; error: string }> = [];
  for (const d of documents) {
    const attached = findAttached(d.value);
    const value = attached?.document ?? d.value;
    try {
      const s = recognizeForDiscovery(value);
      docs.push({ file: d.file, value, attached: attached !== null, original: d.value, kind: s.kind, key: s.key });
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      unreadable.push({ file: d.file, error: err.message });
    }
  }

  // every folder key in full, whatever --since said: an older anchor of it must not hide
  const keys = [...new Set(docs.map((d) => d.key))];
  const lookedUp = new Map<string, RelayAnswer[]>(relays.map((u) => [u, []]));
  const keyIncomplete = new Map<string, string>();
  for (let i = 0; i < keys.length; i += KEYS_PER_LOOKUP) {
    const group = keys.slice(i, i + KEYS_PER_LOOKUP);
    const answers = await pageAll(options.fetcher, relays, { ...base, [`#${SUBJECT_TAG}`]: group.map(subjectTagValue) }, sink, options.bound);
    for (const a of answers) {
      lookedUp.get(a.url)!.push(a);
      if (!a.complete) for (const k of group) if (!keyIncomplete.has(k)) keyIncomplete.set(k, `${a.url}: ${a.incomplete ?? 'incomplete'}`);
    }
  }
  const lookups = relays.map((u) => mergeAnswers(u, lookedUp.get(u)!));
  // what the listing and the look-ups read, each list in the order the relays were given
  inRelayOrder(found, relays);

  const byKey = new Map<string, FoundAnchor[]>();
  for (const anchor of found.anchors.values()) {
    const list = byKey.get(anchor.key) ?? [];
    list.push(anchor);
    byKey.set(anchor.key, list);
  }

  const rows: AuditRow[] = [];
  const verifyOptions: VerifyOptions = { ...options.verify, expectedPubkeys: authors, relayFetcher: null };
  for (const d of docs) {
    const anchors = (byKey.get(d.key) ?? []).sort((a, b) => a.event.created_at - b.event.created_at || a.event.id.localeCompare(b.event.id));
    const ids = anchors.map((a) => a.event.id);
    const incomplete = keyIncomplete.get(d.key) ?? null;
    // the attached proof's own anchor of the key (batch or envelope mode) counts toward one root per key
    const own = d.attached ? await proofClaim(d.original, verifyOptions) : null;
    const equivocation = findEquivocation([...(own ? [own] : []), ...anchors.map(claimOf)]);
    if (anchors.length === 0) {
      const batch = d.attached ? await batchAnchored(d.original, found, relays, policy, options.fetcher, verifyOptions) : null;
      if (batch && batch.outcome !== 'matching') rows.push({ ...batch, kind: d.kind, key: d.key, file: d.file });
      else if (incomplete !== null) {
        rows.push({ outcome: 'incomplete', kind: d.kind, key: d.key, file: d.file, anchors: batch?.anchors ?? [], detail: `the relays' answers for this key are incomplete (${incomplete}): nothing established` });
      } else if (batch) rows.push({ ...batch, kind: d.kind, key: d.key, file: d.file });
      else {
        const batchNote = found.batches.size ? ` (the signer has ${found.batches.size} batch-mode event${found.batches.size === 1 ? '' : 's'} there: a batch anchor cannot be found by key, only by the document's proof)` : '';
        rows.push({ outcome: 'not-anchored', kind: d.kind, key: d.key, file: d.file, anchors: [], detail: `no anchor by the signer on ${relays.join(', ')}${batchNote}` });
      }
      continue;
    }
    let failure: string | null = null;
    for (const anchor of anchors) {
      const report = await checkAgainstAnchor(d.value, anchor, relays.length, verifyOptions);
      if (report.verdict === 'FAIL' && (failure === null || (!failure.includes('truncated:') && report.reason.includes('truncated:')))) {
        failure = `anchor event ${anchor.event.id}: ${report.reason}`;
      }
    }
    const plural = anchors.length === 1 ? 'its anchor' : `all ${anchors.length} anchors`;
    if (equivocation) {
      rows.push({ outcome: 'equivocated', kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: `${equivocation.detail}${failure ? `; against the document: ${failure}` : ''}` });
    } else if (failure !== null) {
      rows.push({ outcome: classify(failure), kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: failure });
    } else if (incomplete !== null) {
      rows.push({ outcome: 'incomplete', kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: `matches ${plural} read, but the relays' answers for this key are incomplete (${incomplete}): an anchor that contradicts it may be missing` });
    } else {
      rows.push({ outcome: 'matching', kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: `matches ${plural} (anchored_at ${anchors.map((a) => a.envelope.anchored_at).join(', ')})` });
    }
  }
  const inFolder = new Set(docs.map((d) => d.key));
  const withheld = [...byKey.entries()].filter(([key]) => !inFolder.has(key) && listedKeys.has(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, anchors] of withheld) {
    const a = anchors[anchors.length - 1]!;
    const equivocation = findEquivocation(anchors.map(claimOf));
    rows.push({
      outcome: 'withheld',
      kind: a.envelope.subject,
      key,
      file: null,
      anchors: anchors.map((x) => x.event.id),
      detail: `anchored_at ${a.envelope.anchored_at} by event ${a.event.id} on ${a.relays.join(', ')}; no document in the folder${equivocation ? `; also ${equivocation.detail}` : ''}`,
    });
  }

  const counts = Object.fromEntries(AUDIT_OUTCOMES.map((o) => [o, rows.filter((r) => r.outcome === o).length])) as Record<AuditOutcome, number>;
  const answers = listed;
  return {
    signers: authors,
    relays: answers,
    lookups,
    anchor_events: found.anchors.size,
    batch_events: found.batches.size,
    rows,
    counts,
    unreadable,
    // the by-id reads of batch events (batchAnchored) ask one relay after another, in the given order; their ignored events join the rest in relay order
    ignored: inRelayOrder(found, relays).ignored,
    complete: [...answers, ...lookups].every((a) => a.complete),
  };
}

/** The attached proof's anchor of its key, when the proof checks out offline for a trusted signer; else null. */
async function proofClaim(original: unknown, options: VerifyOptions): Promise<AnchorClaim | null> {
  let report: VerifyReport;
  try {
    report = await verifyAnchor({ value: original }, options);
  } catch (err) {
    if (err instanceof UsageError) return null;
    throw err;
  }
  const proof = (findAttached(original)?.proof as { envelope?: unknown; nostr?: { event?: { created_at?: unknown } } } | undefined);
  const created = proof?.nostr?.event?.created_at;
  const nostr = report.witnesses.nostr;
  if (report.verdict === 'FAIL' || !proof?.envelope || nostr?.signer_expected !== true) return null;
  const ots = report.witnesses.ots?.bitcoin.find((b) => b.verified)?.time ?? null;
  return {
    source: `the attached proof's ${nostr.mode === 'batch' ? 'batch ' : ''}event ${nostr.event_id}`,
    event_id: nostr.event_id,
    created_at: typeof created === 'number' ? created : null,
    ots_time: ots,
    envelope: proof.envelope as AnchorClaim['envelope'],
  };
}

/** Exit code of an audit: 2 a document unreadable; 1 any subject not matching; 3 anything incomplete; else 0. */
export function auditExitCode(report: AuditReport): number {
  if (report.unreadable.length) return 2;
  if (report.rows.some((r) => r.outcome !== 'matching' && r.outcome !== 'incomplete')) return 1;
  if (!report.complete || report.rows.some((r) => r.outcome === 'incomplete')) return 3;
  return 0;
}
