/**
 * Anchor events as relays serve them, read without a proof (discovery and audit): each
 * JSON text is verified on its own fresh parse (id, BIP-340 signature), its signer must be
 * one the caller trusts and its kind one asked for; an envelope-mode event's content must
 * be a valid envelope in canonical form, its `x` tag that envelope's digest and its `i`
 * tag the envelope's subject key. A batch-mode event is recognized and counted, never
 * tied to a subject. Pure: no I/O.
 */
import { isObject } from '../aer1/fields.js';
import { sha256Hex } from '../aer1/hash.js';
import { Aer1Error } from '../errors/errors.js';
import { envelopeCanonical, parseEnvelope, subjectKey, type Envelope } from '../envelope/envelope.js';
import type { NostrEventJson } from '../proof/format.js';
import { BATCH_CONTENT_TYPE, BATCH_MARKER_TAG, SUBJECT_TAG, SUBJECT_TAG_PREFIX, subjectTagValue, verifySignedEvent } from '../nostr/events.js';
import { xTags } from './nostr.js';

export type AnchorEvent =
  | {
    readonly ok: true;
    readonly mode: 'envelope';
    readonly event: NostrEventJson;
    readonly envelope: Envelope;
    readonly digest: string;
    readonly key: string;
  }
  | { readonly ok: true; readonly mode: 'batch'; readonly event: NostrEventJson }
  | { readonly ok: false; readonly id: string | null; readonly reason: string };

export interface AnchorEventPolicy {
  /** Hex x-only keys the caller trusts; any other signer is refused. */
  readonly trusted: ReadonlySet<string>;
  readonly kinds: ReadonlySet<number>;
}

/** A bounded one-line quote of an untrusted string. */
export function quote(text: string, max = 80): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return JSON.stringify(line.length > max ? `${line.slice(0, max)}…` : line);
}

function idOf(json: string): string | null {
  const m = /"id"\s*:\s*"([0-9a-f]{64})"/.exec(json.slice(0, 4096));
  return m ? m[1]! : null;
}

/** Reads one event text from a relay. */
export function readAnchorEvent(json: string, policy: AnchorEventPolicy): AnchorEvent {
  const refuse = (reason: string, id: string | null = idOf(json)): AnchorEvent => ({ ok: false, id, reason });
  const verified = verifySignedEvent(json);
  if (!verified.ok) return refuse(verified.reason);
  const event = verified.event;
  if (!policy.trusted.has(event.pubkey)) return refuse(`signed by ${event.pubkey}, not a trusted key`, event.id);
  if (!policy.kinds.has(event.kind)) return refuse(`kind ${event.kind} was not asked for`, event.id);
  if (event.tags.some((t) => t[0] === BATCH_MARKER_TAG[0] && t[1] === BATCH_MARKER_TAG[1])) {
    return batchEvent(event) ?? refuse('marked aer1-batch but its content is not an aer1-anchor-batch/1 object', event.id);
  }
  let value: unknown;
  try {
    value = JSON.parse(event.content);
  } catch {
    return refuse('its content is not JSON', event.id);
  }
  // An envelope holds only scalars: anything nested is refused before any deeper reading.
  if (!isObject(value) || Object.values(value).some((v) => v !== null && typeof v === 'object')) {
    return refuse('its content is not a flat JSON object (an envelope has scalar members only)', event.id);
  }
  if (value.type === BATCH_CONTENT_TYPE) return batchEvent(event) ?? refuse('its batch content is malformed', event.id);
  let envelope: Envelope;
  try {
    envelope = parseEnvelope(value);
  } catch (err) {
    if (!(err instanceof Aer1Error)) throw err;
    return refuse(`its content is not a valid envelope: ${err.message}`, event.id);
  }
  if (envelopeCanonical(envelope) !== event.content) return refuse('its content is not the envelope\'s canonical bytes', event.id);
  const digest = sha256Hex(event.content);
  if (!xTags(event).includes(digest)) return refuse(`its x tag is not the envelope's digest ${digest}`, event.id);
  const key = subjectKey(envelope);
  // events signed before the tag existed carry none; one naming another subject is refused
  const named = event.tags.filter((t) => t[0] === SUBJECT_TAG && t[1]?.startsWith(SUBJECT_TAG_PREFIX));
  if (named.length && !named.some((t) => t[1] === subjectTagValue(key))) {
    return refuse(`its i tag does not name the envelope's subject key ${quote(key)}`, event.id);
  }
  return { ok: true, mode: 'envelope', event, envelope, digest, key };
}

function batchEvent(event: NostrEventJson): AnchorEvent | null {
  try {
    const v: unknown = JSON.parse(event.content);
    return isObject(v) && v.type === BATCH_CONTENT_TYPE ? { ok: true, mode: 'batch', event } : null;
  } catch {
    return null;
  }
}
