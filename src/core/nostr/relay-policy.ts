/**
 * A relay's stated write policy, from its NIP-11 information document, and what it means
 * for one of our events. Pure: the HTTP fetch and the cache are
 * src/adapters/nostr/relay-policy.ts.
 *
 * The document is the relay's claim about itself, so it is read defensively: a document
 * that is not a JSON object states nothing; each `limitation` field is taken only when it
 * has the type NIP-11 gives it (a positive safe integer within bounds, or a boolean) and
 * is otherwise ignored, by name, in `ignored`. Unknown fields are ignored silently.
 */
import type { SignedEvent } from './keys.js';
import { MAX_POW_DIFFICULTY } from './pow.js';
import { eventMessage } from './events.js';

/** Most bytes of a NIP-11 document read; a longer one states nothing. */
export const MAX_RELAY_INFO_BYTES = 64 * 1024;

export interface RelayPolicy {
  /** UTF-8 bytes of one WebSocket message, `["EVENT",{...}]` included. */
  maxMessageLength?: number;
  /** Characters of an event's `content`. */
  maxContentLength?: number;
  maxEventTags?: number;
  minPowDifficulty?: number;
  authRequired?: boolean;
  paymentRequired?: boolean;
  restrictedWrites?: boolean;
  /** Seconds: events older than now minus this are refused. */
  createdAtLowerLimit?: number;
  /** Seconds: events newer than now plus this are refused. */
  createdAtUpperLimit?: number;
  /** `limitation` fields present with the wrong type or out of bounds (named, not used). */
  ignored: string[];
  /** The document could not be fetched (no answer, connection refused): ask again sooner. */
  unreachable?: boolean;
}

export const NO_POLICY: RelayPolicy = Object.freeze({ ignored: [] }) as RelayPolicy;

type IntField = 'maxMessageLength' | 'maxContentLength' | 'maxEventTags' | 'minPowDifficulty' | 'createdAtLowerLimit' | 'createdAtUpperLimit';
type BoolField = 'authRequired' | 'paymentRequired' | 'restrictedWrites';

const INT_FIELDS: ReadonlyArray<[string, IntField, number, number]> = [
  ['max_message_length', 'maxMessageLength', 1, 2 ** 40],
  ['max_content_length', 'maxContentLength', 1, 2 ** 40],
  ['max_event_tags', 'maxEventTags', 1, 2 ** 31],
  ['min_pow_difficulty', 'minPowDifficulty', 0, MAX_POW_DIFFICULTY],
  ['created_at_lower_limit', 'createdAtLowerLimit', 0, 2 ** 40],
  ['created_at_upper_limit', 'createdAtUpperLimit', 0, 2 ** 40],
];

const BOOL_FIELDS: ReadonlyArray<[string, BoolField]> = [
  ['auth_required', 'authRequired'],
  ['payment_required', 'paymentRequired'],
  ['restricted_writes', 'restrictedWrites'],
];

/**
 * The policy a NIP-11 document states. `text` is the body as received; a body over
 * MAX_RELAY_INFO_BYTES, not JSON, or not an object states nothing (`ignored` says why).
 */
export function parseRelayInfo(text: string): RelayPolicy {
  if (Buffer.byteLength(text, 'utf8') > MAX_RELAY_INFO_BYTES) return { ignored: [`document over ${MAX_RELAY_INFO_BYTES} bytes`] };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { ignored: ['document is not JSON'] };
  }
  return relayPolicyOf(doc);
}

/** The policy of an already parsed NIP-11 document (anything: only a well-typed `limitation` counts). */
export function relayPolicyOf(doc: unknown): RelayPolicy {
  if (!isObject(doc)) return { ignored: ['document is not a JSON object'] };
  const limitation = doc['limitation'];
  if (limitation === undefined) return { ignored: [] };
  if (!isObject(limitation)) return { ignored: ['limitation'] };
  const policy: RelayPolicy = { ignored: [] };
  for (const [name, field, min, max] of INT_FIELDS) {
    const v = limitation[name];
    if (v === undefined || v === null) continue;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max) policy[field] = v;
    else policy.ignored.push(`limitation.${name}`);
  }
  for (const [name, field] of BOOL_FIELDS) {
    const v = limitation[name];
    if (v === undefined || v === null) continue;
    if (typeof v === 'boolean') policy[field] = v;
    else policy.ignored.push(`limitation.${name}`);
  }
  return policy;
}

/** What a relay's policy means for one event. */
export type PolicyVerdict =
  /** Send it (mined to `pow` bits when above 0, with `created_at` moved to now when `refreshCreatedAt`). */
  | { send: true; pow: number; refreshCreatedAt: boolean }
  /** The relay can never take it: mark the relay failed for this event with `reason`. */
  | { send: false; reason: string };

/** Bytes the nonce tag adds to an event at most: `,["nonce","<up to 16 digits>","<3 digits>"]`. */
const NONCE_TAG_BYTES = 40;

/**
 * Checks `event` against `policy` at `nowSeconds`. `powNeeded` is the difficulty asked
 * (the policy's, or more when a `pow:` answer named it). What cannot change is final:
 * payment, restricted writes, a message or content too long; a `created_at` outside the
 * relay's window is met by sending a copy re-signed at now (when that copy fits the window).
 */
export function assessEvent(policy: RelayPolicy, event: SignedEvent, nowSeconds: number, powNeeded = policy.minPowDifficulty ?? 0): PolicyVerdict {
  if (policy.paymentRequired === true) return { send: false, reason: 'relay policy (NIP-11): payment_required' };
  if (policy.restrictedWrites === true) return { send: false, reason: 'relay policy (NIP-11): restricted_writes' };
  const pow = Math.max(0, powNeeded);
  if (policy.maxMessageLength !== undefined) {
    // measured only against a stated limit: the message that is sent (built once per event)
    const bytes = Buffer.byteLength(eventMessage(event), 'utf8') + (pow > 0 ? NONCE_TAG_BYTES : 0);
    if (bytes > policy.maxMessageLength) {
      return { send: false, reason: `relay policy (NIP-11): max_message_length ${policy.maxMessageLength} bytes, our event message is ${bytes}` };
    }
  }
  if (policy.maxContentLength !== undefined && event.content.length > policy.maxContentLength) {
    return { send: false, reason: `relay policy (NIP-11): max_content_length ${policy.maxContentLength}, our content is ${event.content.length} characters` };
  }
  const tags = event.tags.filter((t) => t[0] !== 'nonce').length + (pow > 0 ? 1 : 0);
  if (policy.maxEventTags !== undefined && tags > policy.maxEventTags) {
    return { send: false, reason: `relay policy (NIP-11): max_event_tags ${policy.maxEventTags}, our event has ${tags}` };
  }
  const inWindow = (t: number): boolean =>
    (policy.createdAtLowerLimit === undefined || t >= nowSeconds - policy.createdAtLowerLimit) &&
    (policy.createdAtUpperLimit === undefined || t <= nowSeconds + policy.createdAtUpperLimit);
  if (inWindow(event.created_at)) return { send: true, pow, refreshCreatedAt: false };
  // a copy signed now; a window that excludes now itself (claims that contradict) cannot be met
  if (inWindow(nowSeconds)) return { send: true, pow, refreshCreatedAt: true };
  return { send: false, reason: `relay policy (NIP-11): created_at window [now-${policy.createdAtLowerLimit ?? '∞'}, now+${policy.createdAtUpperLimit ?? '∞'}] admits no time` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
