/**
 * `aer1-verify-anchor` as a pipeline of named stages (SPEC §6): input → recompute →
 * envelope → digest → Nostr (event, content or batch path, signer) → OTS (digest,
 * attestations, Bitcoin) → online → equivocation (the key's other anchors on the relays).
 * Every stage reports PASS / FAIL / SKIP with one line; the verdict is FAIL when any
 * stage fails, else INCONCLUSIVE when the relays' answers could not be read to their end,
 * else PASS, noting `pending` when no witness is confirmed (`requireConfirmed` turns that
 * into FAIL). Offline unless a relay fetcher is given; the daemon is never asked anything.
 */
import { subjectKey } from '../envelope/envelope.js';
import { isObject } from '../aer1/fields.js';
import type { BitcoinNetwork } from '../bitcoin/header.js';
import type { HeaderSource } from '../bitcoin/header-source.js';
import { checkBatchPath } from './batch-path.js';
import { BitcoinCheckCache, checkBitcoin } from './bitcoin.js';
import { checkDigest } from './digest.js';
import { checkEnvelope } from './envelope.js';
import { readInput } from './input.js';
import { EventCheckCache, checkEnvelopeContent, checkEvent, checkSigner } from './nostr.js';
import { checkOnline, type RelayFetcher } from './online.js';
import { checkOtsAttestations, checkOtsDigest } from './ots.js';
import { recompute } from './recompute.js';
import {
  skip, type CheckResult, type NostrWitnessReport, type OtsWitnessReport, type SubjectReport, type TimeEvidence, type WitnessReports,
} from './types.js';
import { npub } from '../nostr/keys.js';
import { nostrStatement, otsStatement } from './statements.js';
import { checkKeyAnchors } from './key-anchors.js';
import { checkLog } from './log.js';
import { bitcoinTimes, checkTimeWitnesses } from './time-witnesses.js';
import type { TsaTrustAnchors } from '../tsa/trust-anchors.js';
import type { WitnessKey } from '../witness/cosignature.js';
import type { VerifierKey } from '../log/note.js';
import type { PageBound } from './relay-pages.js';

export interface VerifyInput {
  /** The parsed FILE: a document with `anchor_proof` attached, or a bare proof. */
  value: unknown;
  /** The parsed `--proof FILE`, when given. */
  proof?: unknown;
}

export interface VerifyOptions {
  /** The signers the caller trusts, hex x-only (parse npubs with `parseExpectedPubkey`): an event from any other key never confirms. */
  expectedPubkeys?: readonly string[];
  /** Where Bitcoin headers come from; null or absent: the `bitcoin` stage is skipped. */
  headerSource?: HeaderSource | null;
  /** Default mainnet. */
  network?: BitcoinNetwork;
  /** Set to fetch the event back from relays (`--online`). */
  relayFetcher?: RelayFetcher | null;
  /** The relays `--online` asks (`--relay URL`): the caller's choice, never the proof's. */
  relays?: readonly string[];
  /** Also ask the relays the proof itself names (`--use-proof-relays`); reported as such. */
  useProofRelays?: boolean;
  /** FAIL when no witness is confirmed. */
  requireConfirmed?: boolean;
  /** Shared across the files of one run, so each distinct event signature is verified once. */
  eventCache?: EventCheckCache;
  /** Shared across the files of one run, so each block header is fetched and checked once. */
  bitcoinCache?: BitcoinCheckCache;
  /** Event kinds the relays' other anchors of the key are looked up in (`--kind`); the daemon's default always. */
  kinds?: readonly number[];
  /** How much of each relay's answer is read before it is called incomplete (`--max-events`). */
  relayBound?: PageBound;
  /** Set by discovery, which read every anchor of the key itself. */
  keyAnchorsRead?: boolean;
  /** The anchor log keys the caller trusts (`--log-key`, a trust file's log keys): a checkpoint signed by another proves nothing. */
  logKeys?: readonly VerifierKey[];
  /** `--tsa-ca`: the CAs TSA certificates must chain to; none: TSA tokens are "not trusted". */
  tsaTrustAnchors?: TsaTrustAnchors | null;
  /** `--witness`: the C2SP witness keys the caller trusts. */
  witnessKeys?: readonly WitnessKey[];
  /** `--witness-quorum` (default: every witness key given). */
  witnessQuorum?: number;
  /** `--min-confirmations N`: a Bitcoin attestation confirms only when the header source shows N blocks on it (default 1). */
  minConfirmations?: number;
}

/**
 * PASS (exit 0), FAIL (exit 1), or INCONCLUSIVE (exit 3): nothing contradicts the
 * document, but nothing could be established (no anchor found, answers incomplete,
 * relays unreachable).
 */
export type Verdict = 'PASS' | 'FAIL' | 'INCONCLUSIVE';

export interface VerifyReport {
  verdict: Verdict;
  /** One line, the part after `VERDICT: PASS: ` / `VERDICT: FAIL: ` / `VERDICT: INCONCLUSIVE: `. */
  reason: string;
  /** No witness is confirmed (yet). */
  pending: boolean;
  checks: CheckResult[];
  subject: SubjectReport;
  witnesses: WitnessReports;
  /** The independent times for the subject (TSA, witness cosignature, Bitcoin), with who says so. */
  times: TimeEvidence[];
}

/**
 * Verifies one input. Throws UsageError when the input cannot be verified at all (no
 * proof found, a proof of an unknown version, a file that reads two ways, JSON nested too
 * deep); every other problem is a check result.
 */
export async function verifyAnchor(input: VerifyInput, options: VerifyOptions = {}): Promise<VerifyReport> {
  const eventCache = options.eventCache ?? new EventCheckCache();
  const bitcoinCache = options.bitcoinCache ?? new BitcoinCheckCache();
  const network = options.network ?? 'mainnet';

  const inputOutcome = readInput(input.value, input.proof);
  const prepared = inputOutcome.prepared;
  const recomputed = recompute(prepared);
  const envelope = checkEnvelope(prepared, recomputed.values);
  const digest = checkDigest(prepared);

  const nostrProof = prepared?.proof.nostr;
  const event = checkEvent(prepared, eventCache);
  const batch = nostrProof?.batch;
  const content = batch
    ? checkBatchPath(event.event, batch, digest.digest, { envelope: envelope.envelope ?? null, logKeys: options.logKeys ?? [] })
    : prepared
      ? checkEnvelopeContent(event.event, digest.text, digest.digest)
      : skip('nostr-content', 'no usable proof (see input)');
  const signer = checkSigner(event.event, options.expectedPubkeys ?? []);

  const otsDigest = checkOtsDigest(prepared, digest.digest);
  const attestations = checkOtsAttestations(otsDigest);
  const bitcoin = await checkBitcoin(attestations.summary, {
    source: options.headerSource ?? null,
    network,
    cache: bitcoinCache,
    claim: prepared?.proof.ots?.bitcoin,
    ...(options.minConfirmations !== undefined ? { minConfirmations: options.minConfirmations } : {}),
  });
  const log = checkLog(prepared?.proof.log, envelope.envelope ?? null, digest.digest, options.logKeys ?? []);
  const time = await checkTimeWitnesses(prepared?.proof.log, log.included === true, {
    tsaTrustAnchors: options.tsaTrustAnchors ?? null,
    witnessKeys: options.witnessKeys ?? [],
    ...(options.witnessQuorum !== undefined ? { witnessQuorum: options.witnessQuorum } : {}),
  });
  const proofRelays = options.useProofRelays === true ? proofRelayUrls(nostrProof?.relays.map((r) => r.url) ?? []) : { urls: [], notUrl: 0, past: 0 };
  const online = await checkOnline(event.event, {
    named: options.relays ?? [],
    fromProof: proofRelays.urls,
    fromProofLeftOut: { notUrl: proofRelays.notUrl, past: proofRelays.past },
  }, options.relayFetcher ?? null, new Map((event.valid ? nostrProof?.relays ?? [] : []).flatMap((r) => (r.event ? [[r.url, r.event] as const] : []))));
  // the proof's envelope as parsed (a standalone proof has one too); null when malformed
  const proofEnvelope = envelope.envelope;
  const otsTime = bitcoin.blocks.find((b) => b.verified && b.time !== null)?.time ?? null;
  const keyAnchors = await checkKeyAnchors({
    envelope: proofEnvelope ?? null,
    claim: proofEnvelope ? {
      source: event.event ? `${batch ? 'the proof\'s batch event' : 'the proof\'s event'} ${event.event.id}` : 'the proof (no Nostr event)',
      event_id: event.event?.id ?? null,
      created_at: event.event?.created_at ?? null,
      ots_time: otsTime,
      envelope: proofEnvelope,
    } : null,
    trusted: options.expectedPubkeys ?? [],
    kinds: options.kinds ?? [],
    relays: [...new Set([...(options.relays ?? []), ...proofRelays.urls])],
    fetcher: options.relayFetcher ?? null,
    ...(options.relayBound ? { bound: options.relayBound } : {}),
    alreadyRead: options.keyAnchorsRead === true,
  });

  const checks: CheckResult[] = [
    inputOutcome.check, recomputed.check, envelope.check, digest.check,
    event.check, content, signer.check,
    otsDigest.check, attestations.check, bitcoin.check, log.check, time.tsa, time.cosignatures, online.check, keyAnchors.check,
  ];

  const nostrFailed = [event.check, content, signer.check, online.check].some((c) => c.status === 'FAIL');
  let nostr: NostrWitnessReport | null = null;
  if (nostrProof) {
    const ev = event.event;
    let verified: NostrWitnessReport['verified'];
    if (nostrFailed) verified = 'failed';
    else if (!ev || !event.valid) verified = 'pending';
    // Who is trusted is the caller's choice: an event from a key the caller did not name
    // proves only that someone signed it, so it never confirms, wherever it is published.
    else if (signer.expected !== true) verified = 'untrusted';
    else if (online.found) verified = 'confirmed';
    // Relay acceptance is the proof's own unsigned claim: offline it proves nothing, so a
    // claimed "confirmed" or "partial" stays unverified until --online fetches the event back.
    else if (nostrProof.status === 'confirmed' || nostrProof.status === 'partial') verified = 'unverified';
    else verified = 'pending';
    nostr = {
      claimed: nostrProof.status,
      verified,
      mode: batch ? 'batch' : 'envelope',
      event_id: ev?.id ?? null,
      pubkey: ev?.pubkey ?? null,
      npub: ev && /^[0-9a-f]{64}$/.test(ev.pubkey) ? npub(ev.pubkey) : null,
      signer_expected: signer.expected,
      relays: nostrProof.relays.map((r) => ({ url: r.url, status: r.status })),
      held_by: online.holders,
      ...nostrStatement(verified, ev, event.valid, batch ? 'batch' : 'envelope', signer.expected, options.relayFetcher ? online : null),
    };
  }

  let ots: OtsWitnessReport | null = null;
  const otsProof = prepared?.proof.ots;
  if (otsProof) {
    const otsFailed = [otsDigest.check, attestations.check, bitcoin.check].some((c) => c.status === 'FAIL');
    let verified: OtsWitnessReport['verified'];
    if (otsFailed) verified = 'failed';
    else if (bitcoin.confirmed) verified = 'confirmed';
    else if (bitcoin.unchecked) verified = 'unverified';
    else verified = 'pending';
    const headerSource = options.headerSource?.name ?? null;
    ots = {
      claimed: otsProof.status,
      verified,
      pending: attestations.summary?.pending ?? [],
      bitcoin: bitcoin.blocks,
      header_source: headerSource,
      ...otsStatement(verified, attestations.summary?.pending ?? [], bitcoin.blocks, headerSource),
    };
  }

  const witnesses: WitnessReports = { nostr, ots };
  const subject = subjectOf(prepared?.proof.envelope, digest.digest);
  const times = [...time.times, ...bitcoinTimes(bitcoin.blocks, options.headerSource?.name ?? null)];
  const { verdict, reason, pending } = decide(checks, witnesses, time.confirmed, {
    requireConfirmed: options.requireConfirmed === true,
    documentGiven: prepared?.document != null,
    incomplete: keyAnchors.incomplete ? keyAnchors.check.detail : null,
  });
  return { verdict, reason, pending, checks, subject, witnesses, times };
}

/** Relays `--use-proof-relays` asks at most: the proof names them, so the proof must not decide how many sockets the verifier opens. */
export const MAX_PROOF_RELAYS = 16;

/**
 * The proof's own relay URLs that `--use-proof-relays` may ask: distinct, `ws://` or
 * `wss://` in printable ASCII only (no `http://` to a local service, no look-alike host),
 * the first MAX_PROOF_RELAYS of them; with counts of those left out.
 */
function proofRelayUrls(urls: readonly string[]): { urls: string[]; notUrl: number; past: number } {
  const distinct = [...new Set(urls)];
  const ok = distinct.filter((u) => /^wss?:\/\/[\x21-\x7e]{1,200}$/.test(u));
  return { urls: ok.slice(0, MAX_PROOF_RELAYS), notUrl: distinct.length - ok.length, past: Math.max(0, ok.length - MAX_PROOF_RELAYS) };
}

function subjectOf(envelope: Record<string, unknown> | undefined, d: Buffer | null): SubjectReport {
  const kind = envelope?.subject;
  const known = kind === 'receipt' || kind === 'workflow-close' || kind === 'chain-head';
  let key: string | null = null;
  if (known && isObject(envelope)) {
    const k = subjectKey(envelope as unknown as Parameters<typeof subjectKey>[0]);
    key = typeof k === 'string' ? k : null;
  }
  return {
    kind: known ? kind : null,
    key,
    digest: d ? d.toString('hex') : null,
    anchored_at: typeof envelope?.anchored_at === 'string' ? envelope.anchored_at : null,
  };
}

function describeNostr(n: NostrWitnessReport): string {
  const batch = n.mode === 'batch' ? ' (batch)' : '';
  switch (n.verified) {
    case 'untrusted':
      return `nostr ${n.held_by.length ? 'published' : 'signed'}${batch}, signer not trusted (give --expected-pubkey)`;
    case 'confirmed':
      return `nostr confirmed${batch}, expected signer, held by ${n.held_by.length} of the relays asked`;
    case 'unverified':
      return `nostr ${n.claimed} as claimed${batch}, expected signer, relays not checked (--online --relay URL checks them)`;
    default:
      return `nostr ${n.verified}${batch}${n.signer_expected === true ? ', expected signer' : ''}`;
  }
}

function describeOts(o: OtsWitnessReport): string {
  switch (o.verified) {
    case 'confirmed': {
      const heights = o.bitcoin.filter((b) => b.verified).map((b) => b.height);
      return `ots confirmed in Bitcoin block ${heights.join(', ')}`;
    }
    case 'unverified':
      return `ots Bitcoin attestation at block ${o.bitcoin.map((b) => b.height).join(', ')} not checked against headers`;
    default:
      return o.pending.length ? `ots ${o.verified} at ${o.pending.length} calendar${o.pending.length > 1 ? 's' : ''}` : `ots ${o.verified}`;
  }
}

function decide(
  checks: readonly CheckResult[],
  witnesses: WitnessReports,
  time: { tsa: boolean; witness: boolean },
  opts: { requireConfirmed: boolean; documentGiven: boolean; incomplete: string | null },
): { verdict: Verdict; reason: string; pending: boolean } {
  const failed = checks.filter((c) => c.status === 'FAIL');
  const confirmed = witnesses.nostr?.verified === 'confirmed' || witnesses.ots?.verified === 'confirmed' || time.tsa || time.witness;
  if (failed.length) {
    // truncation is what an auditor most needs to read first, wherever it was found
    const first = failed.find((c) => c.detail.startsWith('truncated:')) ?? failed[0]!;
    const others = failed.filter((c) => c !== first);
    const more = others.length ? ` (also failing: ${others.map((c) => c.name).join(', ')})` : '';
    return { verdict: 'FAIL', reason: `${first.name}: ${first.detail}${more}`, pending: !confirmed };
  }
  // what --online asked of the relays could not be read to its end: a contradiction may be missing
  if (opts.incomplete !== null) {
    return { verdict: 'INCONCLUSIVE', reason: `nothing established online: the proof's own checks pass, but the relays' other anchors of this key could not all be read (${opts.incomplete.replace(/^incomplete: /, '')})`, pending: !confirmed };
  }
  const states = [
    witnesses.nostr ? describeNostr(witnesses.nostr) : null,
    witnesses.ots ? describeOts(witnesses.ots) : null,
    time.tsa ? 'log checkpoint time-stamped by a trusted TSA' : null,
    time.witness ? 'log checkpoint cosigned by the witness quorum' : null,
  ].filter((s): s is string => s !== null);
  const stateText = states.length ? states.join('; ') : 'the proof names no witness';
  const docNote = opts.documentGiven ? '' : ' — no document given: only the proof itself was checked';
  if (!confirmed) {
    if (opts.requireConfirmed) {
      return { verdict: 'FAIL', reason: `not confirmed (--require-confirmed): no witness confirmed yet (${stateText})`, pending: true };
    }
    return { verdict: 'PASS', reason: `pending: no witness confirmed yet (${stateText})${docNote}`, pending: true };
  }
  return { verdict: 'PASS', reason: `${stateText}${docNote}`, pending: false };
}
