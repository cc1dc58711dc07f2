/**
 * Monitor mode (`aer1-anchor audit`): every envelope-mode anchor the trusted signers
 * published on the named relays, held against a folder of documents. Each subject ends in
 * one outcome: anchored and matching; anchored but altered or truncated; present in the
 * folder but never anchored; anchored but missing from the folder (withheld). Listing is
 * paged and bounded; batch-mode events are counted, never tied to subjects (docs/nostr.md).
 */
import type { SubjectKind } from '../envelope/envelope.js';
import { SUBJECT_TAG, subjectTagValue } from '../nostr/events.js';
import { MAX_QUERY_LIMIT, type RelayQueryFilter } from '../nostr/filter.js';
import type { AnchorEventPolicy } from './anchor-events.js';
import type { NostrEventJson } from '../proof/format.js';
import {
  anchorIdentity, checkAgainstAnchor, emptyHarvest, harvest, queryAll, recognizeForDiscovery,
  type FoundAnchor, type Harvest, type IgnoredEvent, type RelayAnswer,
} from './discover.js';
import { findAttached } from './input.js';
import type { RelayFetcher } from './online.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from './pipeline.js';
import { UsageError } from '../errors/errors.js';

export const AUDIT_OUTCOMES = ['matching', 'altered', 'truncated', 'not-anchored', 'withheld'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** Keys asked for in one `#i` look-up (for folder documents the listing did not reach). */
const KEYS_PER_LOOKUP = 50;

export interface AuditOptions {
  readonly relays: readonly string[];
  /** Hex keys of the signers the caller trusts. */
  readonly trustedPubkeys: readonly string[];
  readonly kinds: readonly number[];
  /** Unix seconds: list anchors from then on (documents are still looked up by key). */
  readonly since?: number;
  readonly fetcher: RelayFetcher;
  /** Events per page (default 500) and pages per relay (default 200). */
  readonly pageSize?: number;
  readonly maxPages?: number;
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
  readonly relays: RelayAnswer[];
  /** Envelope-mode anchors seen (listing and look-ups), distinct anchors: a relay copy counts with the event it copies. */
  readonly anchor_events: number;
  /** Batch-mode events listed: their subjects cannot be named. */
  readonly batch_events: number;
  readonly rows: AuditRow[];
  readonly counts: Record<AuditOutcome, number>;
  readonly unreadable: Array<{ file: string; error: string }>;
  readonly ignored: IgnoredEvent[];
  /** At least one relay gave a complete listing. */
  readonly complete: boolean;
}

/** Pages through one relay's events of the signers, newest first, `until` moving down. */
async function listRelay(fetcher: RelayFetcher, url: string, base: RelayQueryFilter, pageSize: number, maxPages: number, into: Harvest, policy: AnchorEventPolicy): Promise<RelayAnswer> {
  const seen = new Set<string>();
  let until: number | undefined;
  for (let page = 0; page < maxPages; page++) {
    let texts: string[];
    try {
      texts = await fetcher.query(url, { ...base, ...(until !== undefined ? { until } : {}), limit: pageSize });
    } catch (err) {
      return { url, events: seen.size, error: err instanceof Error ? err.message : String(err), complete: false };
    }
    let fresh = 0;
    let oldest = Infinity;
    const kept: string[] = [];
    for (const text of texts) {
      const head = /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text.slice(0, 4096))?.[1] ?? text;
      const created = Number(/"created_at"\s*:\s*(\d{1,15})/.exec(text)?.[1] ?? NaN);
      if (Number.isFinite(created)) oldest = Math.min(oldest, created);
      if (seen.has(head)) continue;
      seen.add(head);
      fresh++;
      kept.push(text);
    }
    harvest(into, url, kept, policy);
    if (texts.length < pageSize) return { url, events: seen.size, error: null, complete: true };
    // a full page of events all at or above `until`: more than a page share one second
    if (fresh === 0 || !Number.isFinite(oldest)) return { url, events: seen.size, error: null, complete: false };
    until = oldest; // inclusive: the events of that second not yet seen come next
  }
  return { url, events: seen.size, error: null, complete: false };
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
  const pageSize = Math.min(options.pageSize ?? 500, MAX_QUERY_LIMIT);
  const maxPages = options.maxPages ?? 200;
  const base: RelayQueryFilter = { authors, kinds, ...(options.since !== undefined ? { since: options.since } : {}) };

  const found = emptyHarvest();
  const answers = await Promise.all(relays.map((url) => listRelay(options.fetcher, url, base, pageSize, maxPages, found, policy)));
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

  // folder subjects the listing did not reach (anchored before --since, or past a bound): by key
  const missing = [...new Set(docs.map((d) => d.key).filter((k) => !listedKeys.has(k)))];
  for (let i = 0; i < missing.length; i += KEYS_PER_LOOKUP) {
    const keys = missing.slice(i, i + KEYS_PER_LOOKUP);
    const filter: RelayQueryFilter = { authors, kinds, [`#${SUBJECT_TAG}`]: keys.map(subjectTagValue), limit: Math.min(MAX_QUERY_LIMIT, keys.length * 20) };
    for (const a of await queryAll(options.fetcher, relays, filter)) harvest(found, a.url, a.texts, policy);
  }

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
    if (anchors.length === 0) {
      const batch = d.attached ? await batchAnchored(d.original, found, relays, policy, options.fetcher, verifyOptions) : null;
      if (batch) rows.push({ ...batch, kind: d.kind, key: d.key, file: d.file });
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
    rows.push(failure === null
      ? { outcome: 'matching', kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: `matches ${plural} (anchored_at ${anchors.map((a) => a.envelope.anchored_at).join(', ')})` }
      : { outcome: classify(failure), kind: d.kind, key: d.key, file: d.file, anchors: ids, detail: failure });
  }
  const inFolder = new Set(docs.map((d) => d.key));
  const withheld = [...byKey.entries()].filter(([key]) => !inFolder.has(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, anchors] of withheld) {
    const a = anchors[anchors.length - 1]!;
    rows.push({
      outcome: 'withheld',
      kind: a.envelope.subject,
      key,
      file: null,
      anchors: anchors.map((x) => x.event.id),
      detail: `anchored_at ${a.envelope.anchored_at} by event ${a.event.id} on ${a.relays.join(', ')}; no document in the folder`,
    });
  }

  const counts = Object.fromEntries(AUDIT_OUTCOMES.map((o) => [o, rows.filter((r) => r.outcome === o).length])) as Record<AuditOutcome, number>;
  return {
    signers: authors,
    relays: answers,
    anchor_events: found.anchors.size,
    batch_events: found.batches.size,
    rows,
    counts,
    unreadable,
    ignored: found.ignored,
    complete: answers.some((a) => a.complete),
  };
}

/** 2 when a document was unreadable or no relay gave a complete listing; 1 on any mismatch; else 0. */
export function auditExitCode(report: AuditReport): number {
  if (report.unreadable.length || !report.complete) return 2;
  return report.rows.every((r) => r.outcome === 'matching') ? 0 : 1;
}
