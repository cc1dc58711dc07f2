/**
 * The Nostr events this project publishes (SPEC §4.1), pure and synchronous:
 * an envelope event per subject, a batch event per batch, and a verifier that
 * checks a freshly parsed copy of an event's JSON.
 */
import { getEventHash, verifyEvent, serializeEvent as nip01Commitment } from 'nostr-tools/pure';
import { isRegularKind } from 'nostr-tools/kinds';
import { canonicalJson } from '../aer1/canonical-json.js';
import { isHex64, sha256Hex } from '../aer1/hash.js';
import { InputError } from '../errors/errors.js';
import type { SignedEvent, SigningKey } from './keys.js';
import { parseCheckpointText, type Checkpoint } from '../log/checkpoint.js';
import { parseNote } from '../log/note.js';

export type { SignedEvent } from './keys.js';

/**
 * Default event kind: a regular (stored) kind in 1000–9999 that no NIP or the
 * kinds registry claims (1040 is NIP-03 OpenTimestamps; 5000–7000 are NIP-90).
 */
export const DEFAULT_EVENT_KIND = 3099;

export const BATCH_CONTENT_TYPE = 'aer1-anchor-batch/1';
export const BATCH_TREE = 'rfc6962-sha256';

/**
 * The indexed subject tag of an envelope-mode event (SPEC §4.1): `["i", "aer1:<subject key>"]`.
 * Single-letter, so relays index it and an auditor can ask for `{"#i": ["aer1:<key>"]}`
 * without the proof (see docs/verify.md, "Without the proof: discovery and audit").
 */
export const SUBJECT_TAG = 'i';
export const SUBJECT_TAG_PREFIX = 'aer1:';

/**
 * Longest subject tag value written verbatim, in UTF-8 bytes. Relays cap tag values
 * (strfry and @nostr-relay at 1,024 bytes): a longer key is named by its SHA-256 instead.
 */
export const MAX_SUBJECT_TAG_BYTES = 256;

/**
 * The `i` tag value naming a subject key (`receipt_uuid`, or `job_id` for chain heads):
 * `aer1:<key>`, or `aer1:sha256:<hex of SHA-256 of the key's UTF-8>` when that would be
 * over MAX_SUBJECT_TAG_BYTES. Either way a function of the key alone, so anyone holding
 * the document can compute it; the verifier still checks the event's envelope names the key.
 */
export function subjectTagValue(key: string): string {
  const verbatim = `${SUBJECT_TAG_PREFIX}${key}`;
  if (Buffer.byteLength(verbatim, 'utf8') <= MAX_SUBJECT_TAG_BYTES) return verbatim;
  return `${SUBJECT_TAG_PREFIX}sha256:${sha256Hex(key)}`;
}

/**
 * What a batch-mode event carries instead: it cannot name its thousands of subjects, so a
 * marker tag `["t", "aer1-batch"]` lets its signer's batch events be listed and counted.
 */
export const BATCH_MARKER_TAG: readonly [string, string] = ['t', 'aer1-batch'];

const RFC3339_UTC_SECONDS = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;

export interface EnvelopeEventInput {
  /** The envelope's canonical JSON text (SPEC §3); becomes the event content as is. */
  canonical: string;
  /** SHA-256 of `canonical`, lowercase hex (checked). */
  digestHex: string;
  /** Event kind; `DEFAULT_EVENT_KIND` when absent. Must be a regular kind. */
  kind?: number;
  /**
   * Unix seconds. When absent, the envelope's `anchored_at`: a deterministic
   * created_at makes a re-signed event keep its id, so relays answer `duplicate:`.
   */
  createdAt?: number;
  /** Human summary for the `alt` tag; derived from the envelope when absent. */
  summary?: string;
  /**
   * The envelope `canonical` is the canonical JSON of, when the caller built both (the
   * intake's prepared subject): taken as it is, not read back from the text.
   */
  envelope?: object;
}

/** One event per subject: content = the envelope's canonical bytes; tags alt, x = d and i = aer1:<subject key>. */
export function envelopeEvent(input: EnvelopeEventInput, key: SigningKey): SignedEvent {
  return key.sign(envelopeTemplate(input));
}

/** What envelopeEvent signs (checked as it checks), without the signature: the one recipe for signing and for rebuilding a stored event. */
export function envelopeTemplate(input: EnvelopeEventInput): { kind: number; created_at: number; tags: string[][]; content: string } {
  if (typeof input.canonical !== 'string' || input.canonical === '') {
    throw new InputError('bad_event_input', 'must be the non-empty canonical envelope text', 'canonical');
  }
  if (!isHex64(input.digestHex)) {
    throw new InputError('bad_event_input', 'must be 64 lowercase hex characters', 'digestHex');
  }
  if (sha256Hex(input.canonical) !== input.digestHex) {
    throw new InputError('bad_event_input', 'is not the SHA-256 of the canonical envelope text', 'digestHex');
  }
  const envelope = (input.envelope as Record<string, unknown> | undefined) ?? parseObject(input.canonical);
  if (envelope === undefined || (input.envelope === undefined && canonicalJson(envelope) !== input.canonical)) {
    throw new InputError('bad_event_input', 'must be a JSON object in canonical form (SPEC §2)', 'canonical');
  }
  const kind = checkKind(input.kind);
  let createdAt: number;
  if (input.createdAt !== undefined) {
    createdAt = checkCreatedAt(input.createdAt, 'createdAt');
  } else {
    const anchoredAt = envelope['anchored_at'];
    if (typeof anchoredAt !== 'string') {
      throw new InputError('bad_event_input', 'is required when the envelope has no anchored_at', 'createdAt');
    }
    createdAt = rfc3339Seconds(anchoredAt, 'anchored_at');
  }
  const summary = input.summary ?? envelopeSummary(envelope, input.digestHex);
  return {
    kind,
    created_at: createdAt,
    tags: [
      ['alt', checkSummary(summary)],
      ['x', input.digestHex],
      [SUBJECT_TAG, subjectTagValue(envelopeKey(envelope))],
    ],
    content: input.canonical,
  };
}

/**
 * A subject's own envelope event rebuilt from what the state keeps of it (its envelope, the
 * signer's public key and kind, the signature): the very event signed, its id computed
 * anew and checked against `id`. Throws, saying what differs, when the id is not the one kept.
 */
export function rebuildEnvelopeEvent(input: { canonical: string; digestHex: string; kind: number; pubkey: string; id: string; sig: string }): SignedEvent {
  const t = envelopeTemplate({ canonical: input.canonical, digestHex: input.digestHex, kind: input.kind });
  // NIP-01's id, hashed by node:crypto as SigningKey.sign hashes it
  const id = sha256Hex(nip01Commitment({ ...t, pubkey: input.pubkey }));
  if (id !== input.id) throw new Error(`the event rebuilt from the stored envelope has id ${id}, not the stored ${input.id}`);
  return { id, pubkey: input.pubkey, created_at: t.created_at, kind: t.kind, tags: t.tags, content: t.content, sig: input.sig };
}

export interface BatchEventInput {
  /** RFC 3339 UTC, seconds, `Z` (as the envelopes' `anchored_at`). */
  anchoredAt: string;
  /** RFC 6962 root of the batch's digests, lowercase hex. */
  batchRootHex: string;
  /** Number of digests in the batch (≥ 1). */
  leafCount: number;
  kind?: number;
  /** Unix seconds; `anchoredAt` when absent (deterministic, see `EnvelopeEventInput`). */
  createdAt?: number;
  summary?: string;
}

/** The canonical JSON content of a batch event (SPEC §4.1). */
export function batchContent(anchoredAt: string, batchRootHex: string, leafCount: number): string {
  return canonicalJson({
    anchored_at: anchoredAt,
    batch_root: batchRootHex,
    leaf_count: leafCount,
    tree: BATCH_TREE,
    type: BATCH_CONTENT_TYPE,
  });
}

/** One event per batch: content = canonical batch JSON; tags alt, x = batch root and the batch marker. */
export function batchEvent(input: BatchEventInput, key: SigningKey): SignedEvent {
  const anchoredSeconds = rfc3339Seconds(input.anchoredAt, 'anchoredAt');
  if (!isHex64(input.batchRootHex)) {
    throw new InputError('bad_event_input', 'must be 64 lowercase hex characters', 'batchRootHex');
  }
  if (!Number.isSafeInteger(input.leafCount) || input.leafCount < 1) {
    throw new InputError('bad_event_input', 'must be a positive integer', 'leafCount');
  }
  const kind = checkKind(input.kind);
  const createdAt = input.createdAt !== undefined ? checkCreatedAt(input.createdAt, 'createdAt') : anchoredSeconds;
  const summary =
    input.summary ??
    `AER-1 anchor batch: ${input.leafCount} subject${input.leafCount === 1 ? '' : 's'}, root ${input.batchRootHex}`;
  return key.sign({
    kind,
    created_at: createdAt,
    tags: [
      ['alt', checkSummary(summary)],
      ['x', input.batchRootHex],
      [...BATCH_MARKER_TAG],
    ],
    content: batchContent(input.anchoredAt, input.batchRootHex, input.leafCount),
  });
}

/**
 * A checkpoint event (SPEC §4.4, docs/log.md): the anchor log's signed checkpoint note as
 * the content, byte for byte; tags `alt`, `x` = the root in hex and the marker
 * `["t", "aer1-checkpoint"]`, so a monitor lists a signer's checkpoints with
 * `{"authors": [...], "#t": ["aer1-checkpoint"]}`. The Nostr signature says who published
 * it; the note's own signature (the log key) is what a verifier trusts it by.
 */
export const CHECKPOINT_MARKER_TAG: readonly [string, string] = ['t', 'aer1-checkpoint'];

export interface CheckpointEventInput {
  /** The signed checkpoint note (C2SP tlog-checkpoint), as the log folder holds it. */
  note: string;
  /** Unix seconds: when the checkpoint was written. */
  createdAt: number;
  kind?: number;
}

export function checkpointEvent(input: CheckpointEventInput, key: SigningKey): SignedEvent {
  const { checkpoint } = readCheckpointNote(input.note, 'note');
  return key.sign({
    kind: checkKind(input.kind),
    created_at: checkCreatedAt(input.createdAt, 'createdAt'),
    tags: [
      ['alt', checkSummary(`AER-1 anchor log checkpoint: ${checkpoint.origin.slice(0, 200)}, size ${checkpoint.size}`)],
      ['x', checkpoint.root.toString('hex')],
      [...CHECKPOINT_MARKER_TAG],
    ],
    content: input.note,
  });
}

/** Whether an event says it is a checkpoint event (its marker tag); its content is still to be read. */
export function isCheckpointEvent(event: Pick<SignedEvent, 'tags'>): boolean {
  return event.tags.some((t) => t[0] === CHECKPOINT_MARKER_TAG[0] && t[1] === CHECKPOINT_MARKER_TAG[1]);
}

/**
 * The checkpoint a checkpoint event's content holds (format errors throw LogFormatError
 * naming `field`). Its signature is not checked here: that is openCheckpoint's, against
 * the log keys the caller trusts.
 */
export function readCheckpointNote(note: string, field = 'content'): { note: string; checkpoint: Checkpoint } {
  return { note, checkpoint: parseCheckpointText(parseNote(note, field).text, field) };
}

/** JSON text of an event with NIP-01 field order (what relays send back). */
/** Exactly the seven NIP-01 fields of an event, in NIP-01 order (nothing a library attached). */
export function eventFields(event: SignedEvent): SignedEvent {
  return {
    id: event.id,
    pubkey: event.pubkey,
    created_at: event.created_at,
    kind: event.kind,
    tags: event.tags,
    content: event.content,
    sig: event.sig,
  };
}

export function serializeEvent(event: SignedEvent): string {
  return JSON.stringify(eventFields(event));
}

/** Messages built, by event object (events are never changed once signed: a copy is a new object). */
const messages = new WeakMap<SignedEvent, string>();

/**
 * The NIP-01 message that publishes `event`, `["EVENT",<its seven fields>]`: built once per
 * event object, so the relays a drain sends one event to share one text (and a relay's size
 * limit is checked against exactly what is sent).
 */
export function eventMessage(event: SignedEvent): string {
  let m = messages.get(event);
  if (m === undefined) {
    m = `["EVENT",${serializeEvent(event)}]`;
    messages.set(event, m);
  }
  return m;
}

/**
 * Canonical JSON of the seven NIP-01 fields only: two events are the same event,
 * byte for byte in every field, exactly when these texts are equal (field order and
 * extra members a relay may add do not matter).
 */
export function canonicalEventJson(event: SignedEvent): string {
  return canonicalJson({
    content: event.content,
    created_at: event.created_at,
    id: event.id,
    kind: event.kind,
    pubkey: event.pubkey,
    sig: event.sig,
    tags: event.tags,
  });
}

/** True when both JSON texts (or events) carry the same seven NIP-01 fields. */
export function sameSignedEvent(a: string | SignedEvent, b: string | SignedEvent): boolean {
  const ea = typeof a === 'string' ? parseEventShape(a) : { ok: true as const, event: a };
  const eb = typeof b === 'string' ? parseEventShape(b) : { ok: true as const, event: b };
  if (!ea.ok || !eb.ok) return false;
  return canonicalEventJson(ea.event) === canonicalEventJson(eb.event);
}

export type VerifiedEventResult = { ok: true; event: SignedEvent } | { ok: false; reason: string };

/**
 * Verifies an event given as JSON text: shape, id recomputed (NIP-01), BIP-340
 * signature. Parses its own fresh copy every time, because nostr-tools' verifyEvent
 * caches its verdict on the object it is given.
 */
export function verifySignedEvent(json: string): VerifiedEventResult {
  const parsed = parseEventShape(json);
  if (!parsed.ok) return parsed;
  const event = parsed.event;
  let hash: string;
  try {
    hash = getEventHash(event);
  } catch (err) {
    return { ok: false, reason: `event cannot be serialized for its id: ${(err as Error).message}` };
  }
  if (hash !== event.id) return { ok: false, reason: `id ${event.id} is not the NIP-01 hash of the event (${hash})` };
  // a second fresh parse for verifyEvent, so no cached verdict can be involved
  const fresh = JSON.parse(json) as SignedEvent;
  if (!verifyEvent(fresh)) return { ok: false, reason: 'signature is not a valid BIP-340 signature of the id by pubkey' };
  return { ok: true, event };
}

type ShapeResult = { ok: true; event: SignedEvent } | { ok: false; reason: string };

function parseEventShape(json: string): ShapeResult {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    return { ok: false, reason: `event is not JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'event is not a JSON object' };
  }
  const o = value as Record<string, unknown>;
  for (const field of ['id', 'pubkey'] as const) {
    if (!isHex64(o[field])) return { ok: false, reason: `${field} must be 64 lowercase hex characters` };
  }
  if (typeof o['sig'] !== 'string' || !/^[0-9a-f]{128}$/.test(o['sig'])) {
    return { ok: false, reason: 'sig must be 128 lowercase hex characters' };
  }
  for (const field of ['created_at', 'kind'] as const) {
    const v = o[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      return { ok: false, reason: `${field} must be a non-negative integer` };
    }
  }
  if (typeof o['content'] !== 'string') return { ok: false, reason: 'content must be a string' };
  const tags = o['tags'];
  if (!Array.isArray(tags)) return { ok: false, reason: 'tags must be an array' };
  for (let i = 0; i < tags.length; i++) {
    const tag: unknown = tags[i];
    if (!Array.isArray(tag) || !tag.every((v) => typeof v === 'string')) {
      return { ok: false, reason: `tags[${i}] must be an array of strings` };
    }
  }
  return {
    ok: true,
    event: {
      id: o['id'] as string,
      pubkey: o['pubkey'] as string,
      created_at: o['created_at'] as number,
      kind: o['kind'] as number,
      tags: tags as string[][],
      content: o['content'] as string,
      sig: o['sig'] as string,
    },
  };
}

function checkKind(kind: number | undefined): number {
  const k = kind ?? DEFAULT_EVENT_KIND;
  // low regular kinds (1 = text note, ...) have meanings clients display: keep to 1000-9999
  if (!Number.isSafeInteger(k) || k < 1000 || k > 9999 || !isRegularKind(k)) {
    throw new InputError('bad_event_input', `${String(k)} is not a regular (stored) kind in 1000-9999`, 'kind');
  }
  return k;
}

function checkCreatedAt(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InputError('bad_event_input', 'must be non-negative integer unix seconds', field);
  }
  return value;
}

function checkSummary(summary: string): string {
  if (typeof summary !== 'string' || summary === '') {
    throw new InputError('bad_event_input', 'must be a non-empty string', 'summary');
  }
  return summary;
}

/** The last time rfc3339Seconds read (the subjects of a bulk job share one `anchored_at`). */
let lastTime: { text: string; seconds: number } | null = null;

function rfc3339Seconds(text: string, field: string): number {
  if (lastTime !== null && lastTime.text === text) return lastTime.seconds;
  const m = typeof text === 'string' ? RFC3339_UTC_SECONDS.exec(text) : null;
  const ms = m ? Date.parse(text) : NaN;
  // Date.parse rolls over impossible dates (02-30); the round trip catches that
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().replace('.000Z', 'Z') !== text) {
    throw new InputError('bad_event_input', 'must be RFC 3339 UTC with seconds and Z (2025-01-31T12:00:00Z)', field);
  }
  if (ms < 0) throw new InputError('bad_event_input', 'must not be before 1970', field);
  lastTime = { text, seconds: ms / 1000 };
  return ms / 1000;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The envelope's subject key (SPEC §3): `job_id` for a chain head, else `receipt_uuid`. */
function envelopeKey(envelope: Record<string, unknown>): string {
  const key = envelope['subject'] === 'chain-head' ? envelope['job_id'] : envelope['receipt_uuid'];
  if (typeof key !== 'string' || key === '') {
    throw new InputError('bad_event_input', 'the envelope names no subject key (receipt_uuid, or job_id for a chain head)', 'canonical');
  }
  return key;
}

/** `AER-1 anchor: workflow-close <uuid>` (or `chain-head <job id>`), else by digest. */
function envelopeSummary(envelope: Record<string, unknown> | undefined, digestHex: string): string {
  const subject = envelope?.['subject'];
  const key = envelope?.['receipt_uuid'] ?? envelope?.['job_id'];
  if (typeof subject === 'string' && typeof key === 'string') return `AER-1 anchor: ${subject} ${key}`;
  return `AER-1 anchor: ${digestHex}`;
}
