/**
 * Anchor discovery (SPEC §6.7): the auditor holds a document but not its proof. The
 * relays the caller names are asked for the trusted signers' envelope-mode events whose
 * indexed subject tag names the document's key (`{"authors", "kinds", "#i":
 * ["aer1:<key>"]}`); each event found is verified on a fresh parse (anchor-events.ts) and
 * the document is checked against it by the ordinary pipeline, through a proof rebuilt
 * from the event, so truncation and alteration read exactly as with a proof. Every
 * anchor found is reported; any that disagrees with the document fails the verdict.
 * Batch-mode events cannot be found by key (docs/nostr.md): they are only counted.
 */
import { recognizeDocument, type RecognizedDocument } from '../aer1/document.js';
import { MAX_JSON_DEPTH, valueDepth } from '../aer1/json-limits.js';
import { sha256Hex } from '../aer1/hash.js';
import { Aer1Error, UsageError } from '../errors/errors.js';
import type { Envelope, SubjectKind } from '../envelope/envelope.js';
import { PROOF_VERSION, type NostrEventJson } from '../proof/format.js';
import { BATCH_MARKER_TAG, DEFAULT_EVENT_KIND, SUBJECT_TAG, subjectTagValue } from '../nostr/events.js';
import { npub } from '../nostr/keys.js';
import type { RelayQueryFilter } from '../nostr/filter.js';
import { quote, readAnchorEvent, type AnchorEventPolicy } from './anchor-events.js';
import type { RelayFetcher } from './online.js';
import { verifyAnchor, type VerifyOptions, type VerifyReport } from './pipeline.js';
import { findEquivocation, type AnchorClaim } from './equivocation.js';
import { pageAll, type PageBound, type RelayAnswer } from './relay-pages.js';

export type { RelayAnswer };
/** Batch events counted per relay when nothing was found by key. */
export const BATCH_COUNT_LIMIT = 500;

export interface DocumentSubject {
  readonly kind: SubjectKind;
  readonly key: string;
  /** `workflow close <key> (5 steps)` */
  readonly description: string;
}

export function documentSubject(doc: RecognizedDocument): DocumentSubject {
  switch (doc.kind) {
    case 'receipt':
      return { kind: 'receipt', key: doc.receipt.id, description: `receipt ${quote(doc.receipt.id)}` };
    case 'workflow-close':
      return { kind: 'workflow-close', key: doc.workflow.receiptId, description: `workflow close ${quote(doc.workflow.receiptId)} (${doc.workflow.steps.length} steps)` };
    case 'chain':
      return { kind: 'chain-head', key: doc.timeline.jobId, description: `job timeline ${quote(doc.timeline.jobId)} (${doc.timeline.entries.length} entries)` };
  }
}

/** The document as discovery and audit read it: recognized, or a UsageError naming why not (exit 2). */
export function recognizeForDiscovery(value: unknown): DocumentSubject {
  if (valueDepth(value) > MAX_JSON_DEPTH) throw new UsageError(`the document is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any JSON input)`, 'too_deep');
  try {
    return documentSubject(recognizeDocument(value, { allowOpenTimeline: true }));
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    if (err.code === 'ambiguous') throw new UsageError(`ambiguous input: ${err.message}`, 'ambiguous');
    throw new UsageError(`document not recognized: ${err.message}`, 'unrecognized');
  }
}

export interface FoundAnchor {
  readonly event: NostrEventJson;
  readonly envelope: Envelope;
  readonly digest: string;
  readonly key: string;
  /** The named relays that served it, or a copy of it. */
  readonly relays: string[];
  /** Relays that served a copy of `event` instead (NIP-13 mined, re-dated: same signer, kind, content and tags but a nonce tag), by URL. */
  readonly copies: Map<string, NostrEventJson>;
}

/**
 * What makes two events one anchor: the same signer, kind, content and tags, any `nonce`
 * tag aside (a relay copy, SPEC §5 `relays[i].event`, differs only in those and created_at).
 * Every copy is still verified on its own by the pipeline (nostr.ts).
 */
export function anchorIdentity(event: NostrEventJson): string {
  return sha256Hex(JSON.stringify([event.pubkey, event.kind, event.tags.filter((t) => t[0] !== 'nonce'), event.content]));
}

export interface IgnoredEvent {
  readonly relay: string;
  readonly event_id: string | null;
  readonly reason: string;
}

/** What a set of relay answers held, every event verified against the policy. */
export interface Harvest {
  /** Envelope-mode anchors by anchorIdentity (an event and its relay copies are one). */
  readonly anchors: Map<string, FoundAnchor>;
  /** Batch-mode events by anchorIdentity (an event and its relay copies are one), with the relays that served them. */
  readonly batches: Map<string, string[]>;
  readonly ignored: IgnoredEvent[];
  /** `relay id` of the ignored events, so an event served to two look-ups is listed once. */
  readonly ignoredSeen: Set<string>;
}

export function emptyHarvest(): Harvest {
  return { anchors: new Map(), batches: new Map(), ignored: [], ignoredSeen: new Set() };
}

/** Verifies and files the event texts one relay served. */
export function harvest(into: Harvest, url: string, texts: readonly string[], policy: AnchorEventPolicy): void {
  for (const json of texts) {
    const read = readAnchorEvent(json, policy);
    if (!read.ok) {
      const seen = `${url} ${read.id ?? sha256Hex(json)}`;
      if (!into.ignoredSeen.has(seen)) {
        into.ignoredSeen.add(seen);
        into.ignored.push({ relay: url, event_id: read.id, reason: read.reason });
      }
      continue;
    }
    if (read.mode === 'batch') {
      const identity = anchorIdentity(read.event);
      const on = into.batches.get(identity) ?? [];
      if (!on.includes(url)) on.push(url);
      into.batches.set(identity, on);
      continue;
    }
    const identity = anchorIdentity(read.event);
    const known = into.anchors.get(identity);
    if (known) {
      if (!known.relays.includes(url)) {
        known.relays.push(url);
        if (read.event.id !== known.event.id) known.copies.set(url, read.event);
      }
    } else {
      into.anchors.set(identity, { event: read.event, envelope: read.envelope, digest: read.digest, key: read.key, relays: [url], copies: new Map() });
    }
  }
}

/** Puts what each anchor, batch and ignored event was read from in the order the relays were given (pages arrive in any order). */
export function inRelayOrder(into: Harvest, relays: readonly string[]): Harvest {
  const at = (url: string): number => {
    const i = relays.indexOf(url);
    return i < 0 ? relays.length : i;
  };
  const byRelay = (a: string, b: string): number => at(a) - at(b);
  for (const anchor of into.anchors.values()) anchor.relays.sort(byRelay);
  for (const on of into.batches.values()) on.sort(byRelay);
  into.ignored.sort((a, b) => byRelay(a.relay, b.relay));
  return into;
}

/** One bounded query on every relay at once; an unreachable relay is an answer with its error. */
export async function queryAll(fetcher: RelayFetcher, relays: readonly string[], filter: RelayQueryFilter): Promise<Array<{ url: string; texts: string[]; error: string | null }>> {
  return Promise.all(relays.map(async (url) => {
    try {
      return { url, texts: await fetcher.query(url, filter), error: null };
    } catch (err) {
      return { url, texts: [], error: err instanceof Error ? err.message : String(err) };
    }
  }));
}

/**
 * Checks `document` against one anchor found on relays: a proof is rebuilt from the event
 * (SPEC §5 shape, Nostr witness only) and run through the ordinary pipeline, with the
 * caller's trusted keys; `--online` then reads the event back by id as for any proof.
 */
export async function checkAgainstAnchor(document: unknown, anchor: FoundAnchor, namedRelays: number, options: VerifyOptions): Promise<VerifyReport> {
  const status = anchor.relays.length >= namedRelays ? 'confirmed' : 'partial';
  const proof = {
    version: PROOF_VERSION,
    envelope: anchor.envelope,
    digest: anchor.digest,
    status,
    nostr: {
      status,
      event: anchor.event,
      relays: anchor.relays.map((url) => {
        const copy = anchor.copies.get(url);
        return { url, status: 'accepted', message: '', at: '', ...(copy ? { event: copy } : {}) };
      }),
    },
  };
  const report = await verifyAnchor({ value: document, proof }, options);
  // the proof was rebuilt here, not given: say so where the input line would name --proof
  const checks = report.checks.map((c) => (c.name === 'input' && c.status === 'PASS'
    ? { ...c, detail: c.detail.replace(`${PROOF_VERSION} given with --proof`, `no proof: checked against anchor event ${anchor.event.id} found on ${anchor.relays.join(', ')}`) }
    : c));
  return { ...report, checks };
}

/** INCONCLUSIVE: nothing contradicts the document, but nothing was established (no anchor found, answers incomplete). */
export type DiscoveryVerdict = 'PASS' | 'FAIL' | 'INCONCLUSIVE';

export interface DiscoveredAnchor {
  readonly event_id: string;
  readonly pubkey: string;
  readonly created_at: number;
  readonly anchored_at: string;
  readonly relays: string[];
  readonly report: VerifyReport;
}

export interface DiscoveryReport {
  /** INCONCLUSIVE: no anchor found (without `--require-anchored`), or a relay's answer incomplete; nothing was established. */
  readonly verdict: DiscoveryVerdict;
  readonly reason: string;
  readonly pending: boolean;
  readonly subject: { kind: SubjectKind; key: string; description: string };
  readonly signers: string[];
  readonly relays: RelayAnswer[];
  readonly anchors: DiscoveredAnchor[];
  readonly ignored: IgnoredEvent[];
  /** When nothing was found by key: the signers' batch-mode events seen on the relays (at most BATCH_COUNT_LIMIT per relay). */
  readonly batch_events: number | null;
}

export interface DiscoveryOptions {
  /** The relays the caller names (`--relay`). */
  readonly relays: readonly string[];
  /** The signers the caller trusts (`--expected-pubkey`), hex. */
  readonly trustedPubkeys: readonly string[];
  /** Event kinds to ask for; default the daemon's default kind. */
  readonly kinds?: readonly number[];
  readonly fetcher: RelayFetcher;
  /** No anchor found (on complete answers) is a FAIL instead of INCONCLUSIVE. */
  readonly requireAnchored?: boolean;
  /** How much of each relay's answer is read (pages, events) before it is called incomplete. */
  readonly bound?: PageBound;
  /** Passed to the pipeline for each anchor (header source, network, --require-confirmed, caches). */
  readonly verify?: VerifyOptions;
}

/** The npub of a hex key, or the hex itself when it is not a valid key. */
export function npubOf(hex: string): string {
  try {
    return npub(hex);
  } catch {
    return hex;
  }
}

/** Finds the trusted signers' anchors of `document`'s subject on the named relays and checks the document against each. */
export async function discoverAnchors(document: unknown, options: DiscoveryOptions): Promise<DiscoveryReport> {
  if (options.trustedPubkeys.length === 0) {
    throw new UsageError('finding an anchor without its proof needs --expected-pubkey: only a signer you trust can anchor a document', 'usage');
  }
  if (options.relays.length === 0) throw new UsageError('finding an anchor without its proof needs --relay URL', 'usage');
  const subject = recognizeForDiscovery(document);
  const relays = [...new Set(options.relays)];
  const authors = [...new Set(options.trustedPubkeys)];
  const kinds = [...new Set(options.kinds ?? [DEFAULT_EVENT_KIND])];
  const policy: AnchorEventPolicy = { trusted: new Set(authors), kinds: new Set(kinds) };
  const base: RelayQueryFilter = { authors, kinds };

  const found = emptyHarvest();
  // every page of every relay's answer: a flood of events with the key's tag cannot push an anchor out
  const relayAnswers = await pageAll(options.fetcher, relays, { ...base, [`#${SUBJECT_TAG}`]: [subjectTagValue(subject.key)] }, (url, texts) => harvest(found, url, texts, policy), options.bound);
  inRelayOrder(found, relays);
  // an event of another subject is not this subject's anchor, whatever tag a relay matched
  for (const [identity, anchor] of found.anchors) {
    if (anchor.key !== subject.key) {
      found.anchors.delete(identity);
      for (const url of anchor.relays) found.ignored.push({ relay: url, event_id: (anchor.copies.get(url) ?? anchor.event).id, reason: `it anchors another subject ${quote(anchor.key)}` });
    }
  }

  const anchors: DiscoveredAnchor[] = [];
  const ordered = [...found.anchors.values()].sort((a, b) => a.event.created_at - b.event.created_at || a.event.id.localeCompare(b.event.id));
  // the key's other anchors were all read above: the pipeline need not look them up again per anchor
  const verifyOptions: VerifyOptions = { ...options.verify, expectedPubkeys: authors, relayFetcher: options.fetcher, keyAnchorsRead: true };
  for (const anchor of ordered) {
    const report = await checkAgainstAnchor(document, anchor, relays.length, verifyOptions);
    anchors.push({ event_id: anchor.event.id, pubkey: anchor.event.pubkey, created_at: anchor.event.created_at, anchored_at: anchor.envelope.anchored_at, relays: anchor.relays, report });
  }

  let batchEvents: number | null = null;
  if (anchors.length === 0) {
    const batches = emptyHarvest();
    const counted = await queryAll(options.fetcher, relays, { ...base, [`#${BATCH_MARKER_TAG[0]}`]: [BATCH_MARKER_TAG[1]], limit: BATCH_COUNT_LIMIT });
    for (const a of counted) harvest(batches, a.url, a.texts, policy);
    batchEvents = batches.batches.size;
  }

  const signers = authors.map(npubOf);
  const equivocation = findEquivocation(ordered.map(claimOf));
  const { verdict, reason } = decide(subject, anchors, relayAnswers, signers, batchEvents, options.requireAnchored === true, equivocation?.detail ?? null);
  return {
    verdict,
    reason,
    pending: anchors.length === 0 || anchors.every((a) => a.report.pending),
    subject: { kind: subject.kind, key: subject.key, description: subject.description },
    signers,
    relays: relayAnswers,
    anchors,
    ignored: found.ignored,
    batch_events: batchEvents,
  };
}

/** An anchor found on relays, as equivocation.ts compares it. */
export function claimOf(anchor: FoundAnchor): AnchorClaim {
  return { source: `event ${anchor.event.id}`, event_id: anchor.event.id, created_at: anchor.event.created_at, ots_time: null, envelope: anchor.envelope };
}

/** The relays whose answer is incomplete, each with why, for a reason line. */
export function incompleteAnswers(relays: readonly RelayAnswer[]): string {
  return relays.filter((r) => !r.complete).map((r) => `${r.url}: ${r.incomplete ?? 'incomplete'}`).join('; ');
}

function decide(
  subject: DocumentSubject,
  anchors: readonly DiscoveredAnchor[],
  relays: readonly RelayAnswer[],
  signers: readonly string[],
  batchEvents: number | null,
  requireAnchored: boolean,
  equivocation: string | null,
): { verdict: DiscoveryVerdict; reason: string } {
  const failing = anchors.filter((a) => a.report.verdict === 'FAIL');
  // truncation is what an auditor most needs to read first
  const first = failing.find((a) => a.report.reason.includes('truncated:')) ?? failing[0];
  if (equivocation !== null) {
    const against = first ? `; against the document: anchor event ${first.event_id}: ${first.report.reason}` : '';
    return { verdict: 'FAIL', reason: `${equivocation}${against}` };
  }
  if (first) {
    const of = anchors.length > 1 ? ` (${failing.length} of ${anchors.length} anchors disagree with the document)` : '';
    return { verdict: 'FAIL', reason: `anchor event ${first.event_id}: ${first.report.reason}${of}` };
  }
  const incomplete = incompleteAnswers(relays);
  if (anchors.length) {
    const latest = anchors[anchors.length - 1]!;
    const n = anchors.length === 1 ? 'the anchor' : `all ${anchors.length} anchors`;
    if (incomplete) {
      return { verdict: 'INCONCLUSIVE', reason: `${n} found match${anchors.length === 1 ? 'es' : ''} the document, but the relays' answers are incomplete (${incomplete}): an anchor that contradicts it may be missing` };
    }
    return { verdict: 'PASS', reason: `${n} found on the relays match${anchors.length === 1 ? 'es' : ''} the document: ${latest.report.reason}` };
  }
  const asked = relays.filter((r) => r.error === null).map((r) => r.url);
  const by = signers.join(', ');
  let what: string;
  if (asked.length === 0) {
    what = `no relay could be asked for ${subject.kind} ${quote(subject.key)} (${incomplete})`;
  } else {
    what = `no anchor found on ${asked.join(', ')} for ${subject.kind} ${quote(subject.key)} by ${by}`;
    if (batchEvents) {
      what += `; the signer has ${batchEvents}${batchEvents >= BATCH_COUNT_LIMIT ? '+' : ''} batch-mode event${batchEvents === 1 ? '' : 's'} there, which discovery cannot tie to a subject (only a proof's inclusion path can)`;
    }
  }
  if (incomplete) return { verdict: 'INCONCLUSIVE', reason: `${what}; the relays' answers are incomplete (${asked.length ? incomplete : 'no relay answered'}): nothing was established` };
  if (requireAnchored) return { verdict: 'FAIL', reason: `not anchored (--require-anchored): ${what}` };
  return { verdict: 'INCONCLUSIVE', reason: `${what}: nothing was established (--require-anchored makes this a FAIL)` };
}
