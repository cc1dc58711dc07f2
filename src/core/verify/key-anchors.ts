/**
 * Stage `equivocation` (with `--online` and a trusted signer): the relays' other anchors
 * of the proof's subject key are read in full (relay-pages.ts) and each must commit to
 * the proof's root (equivocation.ts). FAIL naming both anchors when one does not; SKIP
 * offline or without a trusted signer; SKIP with `incomplete` when an answer could not
 * be read to its end (the verdict then cannot be PASS).
 */
import type { Envelope } from '../envelope/envelope.js';
import { DEFAULT_EVENT_KIND, SUBJECT_TAG, subjectTagValue } from '../nostr/events.js';
import { subjectKey } from '../envelope/envelope.js';
import type { AnchorEventPolicy } from './anchor-events.js';
import { quote } from './anchor-events.js';
import { claimOf, emptyHarvest, harvest, inRelayOrder, incompleteAnswers } from './discover.js';
import { findEquivocation, type AnchorClaim } from './equivocation.js';
import type { RelayFetcher } from './online.js';
import { pageAll, type PageBound } from './relay-pages.js';
import { fail, pass, skip, type CheckResult } from './types.js';

export interface KeyAnchorsInput {
  readonly envelope: Envelope | null;
  /** The proof's own anchor of the key (its envelope, event and any verified OTS time). */
  readonly claim: AnchorClaim | null;
  readonly trusted: readonly string[];
  readonly kinds: readonly number[];
  readonly relays: readonly string[];
  readonly fetcher: RelayFetcher | null;
  readonly bound?: PageBound;
  /** Discovery read them already: say so instead of asking again. */
  readonly alreadyRead?: boolean;
}

export interface KeyAnchorsOutcome {
  readonly check: CheckResult;
  /** An answer could not be read to its end (relay failed, timed out, bound reached). */
  readonly incomplete: boolean;
}

export async function checkKeyAnchors(input: KeyAnchorsInput): Promise<KeyAnchorsOutcome> {
  const none = (check: CheckResult): KeyAnchorsOutcome => ({ check, incomplete: false });
  if (input.alreadyRead) return none(skip('equivocation', 'every anchor of this key on the relays was read by discovery (see the verdict)'));
  if (!input.fetcher) return none(skip('equivocation', 'offline (with --online, the relays\' other anchors of this key are read and must commit to the same root)'));
  if (!input.envelope || !input.claim) return none(skip('equivocation', 'no envelope to look up (see input)'));
  if (input.trusted.length === 0) return none(skip('equivocation', 'no trusted signer (--expected-pubkey): other anchors of this key were not looked up'));
  if (input.relays.length === 0) return none(skip('equivocation', 'no relay to ask'));
  const key = subjectKey(input.envelope);
  const kinds = [...new Set([...input.kinds, DEFAULT_EVENT_KIND])];
  const policy: AnchorEventPolicy = { trusted: new Set(input.trusted), kinds: new Set(kinds) };
  const found = emptyHarvest();
  const answers = await pageAll(input.fetcher, input.relays, { authors: [...input.trusted], kinds, [`#${SUBJECT_TAG}`]: [subjectTagValue(key)] }, (url, texts) => harvest(found, url, texts, policy), input.bound);
  inRelayOrder(found, input.relays);
  const others = [...found.anchors.values()].filter((a) => a.key === key && a.event.id !== input.claim!.event_id);
  const equivocation = findEquivocation([input.claim, ...others.map(claimOf)]);
  if (equivocation) return { check: fail('equivocation', equivocation.detail), incomplete: false };
  const incomplete = incompleteAnswers(answers);
  const read = `${others.length} other anchor${others.length === 1 ? '' : 's'} of ${input.envelope.subject} ${quote(key)} by the trusted signer`;
  if (incomplete) return { check: skip('equivocation', `incomplete: ${read} read so far commit to the proof's root, but ${incomplete}`), incomplete: true };
  return none(pass('equivocation', `${read} on ${input.relays.join(', ')}, every answer read to its end${others.length ? '; all commit to the proof\'s root' : ''}`));
}
