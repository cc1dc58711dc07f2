/**
 * Stages `nostr-event`, `nostr-content` and `signer` (SPEC §6.5): the event id is
 * recomputed from a freshly parsed copy of the event and its BIP-340 signature checked;
 * in envelope mode the content is the envelope's canonical bytes, byte for byte, and the
 * `x` tag is d; the signer is one of `--expected-pubkey`, or reported unverified — and an
 * unverified signer never makes the Nostr witness confirmed (see pipeline.ts).
 */
import { decode as nip19Decode } from 'nostr-tools/nip19';
import { sha256Hex } from '../aer1/hash.js';
import { hexOrQuoted, listBounded, quoteBounded } from '../aer1/json-limits.js';
import { UsageError } from '../errors/errors.js';
import type { NostrEventJson } from '../proof/format.js';
import { canonicalEventJson, verifySignedEvent, type VerifiedEventResult } from '../nostr/events.js';
import { npub } from '../nostr/keys.js';
import { getPow } from '../nostr/pow.js';
import { fail, pass, skip, type CheckResult, type PreparedInput } from './types.js';

/**
 * Signature checks already made in this run. Proofs of one batch share one event, so an
 * auditor checking a directory verifies each distinct event once. The key covers all
 * seven NIP-01 fields (id, sig and content included), so a tampered copy never hits.
 */
export class EventCheckCache {
  private readonly results = new Map<string, VerifiedEventResult>();
  /** Signature verifications actually run (cache misses). */
  verifications = 0;
  hits = 0;

  constructor(private readonly maxEntries = 10_000) {}

  verify(event: NostrEventJson, rawJson: string): VerifiedEventResult {
    const key = sha256Hex(canonicalEventJson(event));
    const known = this.results.get(key);
    if (known) {
      this.hits++;
      return known;
    }
    this.verifications++;
    const result = verifySignedEvent(rawJson);
    if (this.results.size >= this.maxEntries) this.results.delete(this.results.keys().next().value!);
    this.results.set(key, result);
    return result;
  }
}

/** `--expected-pubkey`: 64 hex characters (either case) or an `npub1...`; anything else is a usage error. */
export function parseExpectedPubkey(text: string): string {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return t.toLowerCase();
  if (t.toLowerCase().startsWith('npub1')) {
    try {
      const decoded = nip19Decode(t);
      if (decoded.type === 'npub') return decoded.data;
    } catch {
      // fall through to the usage error
    }
    throw new UsageError(`--expected-pubkey ${quoteBounded(t, 80)} is not a valid npub (bech32 checksum or length wrong)`);
  }
  throw new UsageError(`--expected-pubkey ${quoteBounded(t, 80)} is neither 64 hex characters nor an npub1... key`);
}

function npubOf(hex: string): string {
  try {
    return npub(hex);
  } catch {
    return hex;
  }
}

/** The event exactly as the proof file carries it, as JSON text for a fresh parse. */
function rawEventJson(input: PreparedInput): string {
  const nostr = input.rawProof.nostr as Record<string, unknown>;
  return JSON.stringify(nostr.event);
}

export interface EventOutcome {
  readonly check: CheckResult;
  readonly event: NostrEventJson | null;
  readonly valid: boolean;
}

export function checkEvent(input: PreparedInput | null, cache: EventCheckCache): EventOutcome {
  const none = (check: CheckResult): EventOutcome => ({ check, event: null, valid: false });
  if (!input) return none(skip('nostr-event', 'no usable proof (see input)'));
  const nostr = input.proof.nostr;
  if (!nostr) return none(skip('nostr-event', 'no Nostr witness in the proof'));
  const event = nostr.event;
  if (!event) {
    if (nostr.status === 'confirmed' || nostr.status === 'partial') {
      return none(fail('nostr-event', `the proof says nostr is ${nostr.status} but carries no event`));
    }
    return none(skip('nostr-event', `no signed event yet (nostr ${nostr.status})`));
  }
  const result = cache.verify(event, rawEventJson(input));
  if (!result.ok) return { check: fail('nostr-event', result.reason), event, valid: false };
  const copies = checkRelayCopies(input, event, cache);
  if (!copies.ok) return { check: fail('nostr-event', copies.reason), event, valid: false };
  return {
    check: pass('nostr-event', `event ${event.id} (kind ${event.kind}): id recomputed, BIP-340 signature valid${copies.detail}`),
    event,
    valid: true,
  };
}

/**
 * The copies of the event some relays were sent instead (`relays[i].event`: a NIP-13 nonce
 * tag mined for a relay that asked for proof of work, or `created_at` moved into a relay's
 * window): each must verify on its own, be signed by the same key, and carry the same kind,
 * content and tags, a `nonce` tag aside. Then it witnesses the same envelope.
 */
function checkRelayCopies(input: PreparedInput, event: NostrEventJson, cache: EventCheckCache): { ok: true; detail: string } | { ok: false; reason: string } {
  const relays = input.proof.nostr?.relays ?? [];
  const rawRelays = (input.rawProof.nostr as Record<string, unknown>).relays as Array<Record<string, unknown>> | undefined;
  const notes: string[] = [];
  const base = JSON.stringify(withoutNonceTags(event.tags));
  for (let i = 0; i < relays.length; i++) {
    const copy = relays[i]!.event;
    if (!copy) continue;
    const url = shortUrl(relays[i]!.url);
    const where = `relays[${i}].event (${url})`;
    const result = cache.verify(copy, JSON.stringify(rawRelays?.[i]?.event));
    if (!result.ok) return { ok: false, reason: `${where}: ${result.reason}` };
    if (copy.pubkey !== event.pubkey) return { ok: false, reason: `${where} is signed by ${hexOrQuoted(copy.pubkey)}, not by the event's signer ${hexOrQuoted(event.pubkey)}` };
    if (copy.kind !== event.kind || copy.content !== event.content) return { ok: false, reason: `${where} has another kind or content than the event` };
    if (JSON.stringify(withoutNonceTags(copy.tags)) !== base) return { ok: false, reason: `${where} has other tags than the event (only a nonce tag may differ)` };
    const bits = getPow(copy.id);
    const nonce = nonceProblem(copy.tags, bits);
    if (nonce) return { ok: false, reason: `${where}: ${nonce}` };
    const what = [copy.tags.some((t) => t[0] === 'nonce') ? `proof of work ${bits} bits` : '', copy.created_at !== event.created_at ? `created_at ${copy.created_at}` : ''].filter(Boolean).join(', ');
    notes.push(`${url} took copy ${copy.id}${what ? ` (${what})` : ''}`);
  }
  // a few named, the rest counted: the line stays bounded however many relays the proof lists
  const shown = notes.slice(0, 3).join('; ') + (notes.length > 3 ? `; and ${notes.length - 3} more relays took copies` : '');
  return { ok: true, detail: notes.length ? `; ${shown}: id recomputed, signature valid, same signer, kind, content and tags` : '' };
}

/**
 * NIP-13 exactly, for a copy: at most one `nonce` tag, `["nonce", "<n>", "<target>"]` with
 * decimal n and target (0-256), and an id with at least `target` leading zero bits (the
 * target is what the signer committed to; a copy claiming more than its id has is refused).
 */
function nonceProblem(tags: readonly string[][], bits: number): string | null {
  const nonces = tags.filter((t) => t[0] === 'nonce');
  if (nonces.length === 0) return null;
  if (nonces.length > 1) return `${nonces.length} nonce tags (NIP-13: one)`;
  const t = nonces[0]!;
  const json = JSON.stringify(t);
  const shown = json.length > 80 ? `${json.slice(0, 80)}…` : json;
  if (t.length !== 3 || !/^(0|[1-9][0-9]{0,19})$/.test(t[1]!) || !/^(0|[1-9][0-9]{0,2})$/.test(t[2]!) || Number(t[2]) > 256) {
    return `nonce tag ${shown} is not ["nonce", "<n>", "<target>"] (decimal nonce, target 0-256)`;
  }
  const target = Number(t[2]);
  if (bits < target) return `its id has ${bits} leading zero bits, below the target ${target} its nonce tag commits to`;
  return null;
}

/** A relay URL from the proof, for a message: control characters blanked, at most 120 characters. */
function shortUrl(url: string): string {
  const line = url.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ');
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}

function withoutNonceTags(tags: readonly string[][]): string[][] {
  return tags.filter((t) => t[0] !== 'nonce');
}

/** Values of the event's `x` tags. */
export function xTags(event: NostrEventJson): string[] {
  return event.tags.filter((t) => t[0] === 'x' && t.length >= 2).map((t) => t[1]!);
}

/** Envelope mode: content = the envelope's canonical text, and an `x` tag = d. */
export function checkEnvelopeContent(event: NostrEventJson | null, envelopeText: string | null, digest: Buffer | null): CheckResult {
  if (!event) return skip('nostr-content', 'no event');
  if (envelopeText === null || digest === null) return skip('nostr-content', 'no envelope digest to compare (see digest)');
  const d = digest.toString('hex');
  if (event.content !== envelopeText) {
    return fail('nostr-content', `the event content is not the envelope's canonical bytes (content hashes to ${sha256Hex(event.content)}, d is ${d})`);
  }
  const x = xTags(event);
  if (!x.includes(d)) {
    return fail('nostr-content', x.length ? `the x tag ${listBounded(x)} is not d ${d}` : `the event has no x tag (expected d ${d})`);
  }
  return pass('nostr-content', 'content is the envelope\'s canonical bytes, byte for byte; x tag = d');
}

export function checkSigner(event: NostrEventJson | null, expected: readonly string[]): { check: CheckResult; expected: boolean | null } {
  if (!event) return { check: skip('signer', 'no event'), expected: null };
  const who = /^[0-9a-f]{64}$/.test(event.pubkey) ? `${npubOf(event.pubkey)} (${event.pubkey})` : `${hexOrQuoted(event.pubkey)} (not a key)`;
  if (expected.length === 0) return { check: skip('signer', `unverified signer ${who}: give --expected-pubkey to check it`), expected: null };
  if (expected.includes(event.pubkey)) return { check: pass('signer', `signed by expected key ${who}`), expected: true };
  const wanted = expected.map(npubOf).join(', ');
  return { check: fail('signer', `signed by ${who}, not by an expected key (${wanted})`), expected: false };
}
