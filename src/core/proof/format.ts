/**
 * `aer1-anchor-proof-v1` (SPEC section 5): what the daemon exports for a subject and
 * what `aer1-verify-anchor` consumes. Pure types and a strict shape parser; the
 * cryptographic checks live in src/core/verify/.
 */
import { InputError } from '../errors/errors.js';
import { TsaFormatError } from '../tsa/errors.js';
import { parseCheckpointTimestamps } from '../tsa/checkpoint-timestamps.js';
import type { SignedEvent } from '../nostr/keys.js';
import { quoteBounded } from '../aer1/json-limits.js';

export const PROOF_VERSION = 'aer1-anchor-proof-v1';

export type WitnessStatus = 'pending' | 'partial' | 'confirmed' | 'failed';
export const WITNESS_STATUSES: readonly WitnessStatus[] = ['pending', 'partial', 'confirmed', 'failed'];

/** A signed NIP-01 event, as the Nostr witness publishes it. */
export type NostrEventJson = SignedEvent;

export interface RelayReport {
  url: string;
  status: string;
  message: string;
  at: string;
  /**
   * The copy of `nostr.event` this relay was sent instead, when it is not that event: the
   * same content, tags and signer with a NIP-13 `nonce` tag mined for a relay that asked
   * for proof of work, and/or `created_at` moved into the relay's window.
   */
  event?: NostrEventJson;
}

export interface BatchInclusion {
  index: number;
  size: number;
  path: string[];
}

/** Which kind of event anchors the subject: its own envelope event, or a batch event (with `batch`). */
export type NostrProofMode = 'envelope' | 'batch';

export interface NostrProof {
  status: WitnessStatus;
  /**
   * Optional, informative (docs/nostr.md, auto mode): the kind of event the daemon gave the
   * subject; absent while not decided. The verifier goes by the proof's shape (`batch`
   * present or not) and refuses a `mode` that contradicts it.
   */
  mode?: NostrProofMode;
  event: NostrEventJson | null;
  relays: RelayReport[];
  batch?: BatchInclusion;
}

export interface CalendarReport {
  url: string;
  status: string;
}

export interface BitcoinConfirmation {
  height: number;
  block_hash: string;
  time: number;
}

export interface OtsProof {
  status: WitnessStatus;
  proof: string | null;
  calendars: CalendarReport[];
  bitcoin?: BitcoinConfirmation;
}

/**
 * The subject in the issuer's anchor log (docs/log.md): its entry's index, the signed
 * checkpoint that covers it, and the RFC 6962 inclusion path (leaf upward) against the
 * checkpoint's size. The entry itself is rebuilt from the envelope by the verifier.
 */
export interface LogProof {
  origin: string;
  index: number;
  /** The signed note (C2SP tlog-checkpoint), with any witness cosignature/v1 lines. */
  checkpoint: string;
  path: string[];
  /** RFC 3161 tokens over the checkpoint's note body (docs/time.md): checked by the verifier's `tsa` stage. */
  timestamps?: Array<{ url: string; token: string }>;
}

export interface AnchorProof {
  version: typeof PROOF_VERSION;
  envelope: Record<string, unknown>;
  digest: string;
  status: WitnessStatus;
  nostr?: NostrProof;
  ots?: OtsProof;
  log?: LogProof;
}

/** Most hashes an inclusion path holds (a tree below 2^64 entries). */
const MAX_LOG_PATH = 64;
/** Longest checkpoint note read (the log's MAX_NOTE_BYTES). */
const MAX_CHECKPOINT_CHARS = 64 * 1024;
const LOG_MEMBERS = new Set(['origin', 'index', 'checkpoint', 'path', 'timestamps']);

function parseLog(v: unknown): LogProof {
  const f = 'anchor_proof.log';
  if (!isObject(v)) fail(f, 'expected an object');
  for (const k of Object.keys(v)) if (!LOG_MEMBERS.has(k)) fail(f, `unknown member ${quoteBounded(k)} (a log proof has origin, index, checkpoint, path and timestamps)`);
  const origin = str(v.origin, `${f}.origin`);
  if (origin === '' || origin.length > 1024 || origin.includes('\n')) fail(`${f}.origin`, 'expected one non-empty line of at most 1024 characters');
  const checkpoint = str(v.checkpoint, `${f}.checkpoint`);
  if (checkpoint.length > MAX_CHECKPOINT_CHARS) fail(`${f}.checkpoint`, `longer than ${MAX_CHECKPOINT_CHARS} characters`);
  if (!Array.isArray(v.path) || v.path.length > MAX_LOG_PATH || !v.path.every((p) => typeof p === 'string' && HEX64.test(p))) {
    fail(`${f}.path`, `expected a list of at most ${MAX_LOG_PATH} 64-hex hashes`);
  }
  const out: LogProof = { origin, index: nonNegInt(v.index, `${f}.index`), checkpoint, path: v.path as string[] };
  if (v.timestamps !== undefined) {
    try {
      out.timestamps = parseCheckpointTimestamps(v.timestamps, `${f}.timestamps`);
    } catch (err) {
      if (!(err instanceof TsaFormatError)) throw err;
      const field = err.field ?? `${f}.timestamps`;
      fail(field, err.message.startsWith(`${field}: `) ? err.message.slice(field.length + 2) : err.message);
    }
  }
  return out;
}

const HEX64 = /^[0-9a-f]{64}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(field: string, message: string): never {
  throw new InputError('bad_proof', message, field);
}

function status(v: unknown, field: string): WitnessStatus {
  if (typeof v !== 'string' || !(WITNESS_STATUSES as readonly string[]).includes(v)) {
    fail(field, `expected one of ${WITNESS_STATUSES.join('|')}`);
  }
  return v as WitnessStatus;
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string') fail(field, 'expected a string');
  return v;
}

function nonNegInt(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(field, 'expected a non-negative integer');
  return v;
}

function parseEvent(v: unknown, field: string): NostrEventJson | null {
  if (v === null || v === undefined) return null;
  if (!isObject(v)) fail(field, 'expected a Nostr event object');
  const tags = v.tags;
  if (!Array.isArray(tags) || !tags.every((t) => Array.isArray(t) && t.every((x) => typeof x === 'string'))) {
    fail(`${field}.tags`, 'expected a list of string lists');
  }
  return {
    id: str(v.id, `${field}.id`),
    pubkey: str(v.pubkey, `${field}.pubkey`),
    created_at: nonNegInt(v.created_at, `${field}.created_at`),
    kind: nonNegInt(v.kind, `${field}.kind`),
    tags: tags as string[][],
    content: str(v.content, `${field}.content`),
    sig: str(v.sig, `${field}.sig`),
  };
}

function parseNostr(v: unknown): NostrProof {
  const f = 'anchor_proof.nostr';
  if (!isObject(v)) fail(f, 'expected an object');
  const relays = v.relays ?? [];
  if (!Array.isArray(relays)) fail(`${f}.relays`, 'expected a list');
  const out: NostrProof = {
    status: status(v.status, `${f}.status`),
    event: parseEvent(v.event, `${f}.event`),
    relays: relays.map((r, i) => {
      if (!isObject(r)) fail(`${f}.relays[${i}]`, 'expected an object');
      return {
        url: str(r.url, `${f}.relays[${i}].url`),
        status: str(r.status, `${f}.relays[${i}].status`),
        message: typeof r.message === 'string' ? r.message : '',
        at: typeof r.at === 'string' ? r.at : '',
        ...(r.event !== undefined && r.event !== null ? { event: parseEvent(r.event, `${f}.relays[${i}].event`)! } : {}),
      };
    }),
  };
  if (v.batch !== undefined) {
    const b = v.batch;
    if (!isObject(b)) fail(`${f}.batch`, 'expected an object');
    if (!Array.isArray(b.path) || !b.path.every((p) => typeof p === 'string' && HEX64.test(p))) {
      fail(`${f}.batch.path`, 'expected a list of 64-hex hashes');
    }
    out.batch = { index: nonNegInt(b.index, `${f}.batch.index`), size: nonNegInt(b.size, `${f}.batch.size`), path: b.path as string[] };
  }
  if (v.mode !== undefined) {
    if (v.mode !== 'envelope' && v.mode !== 'batch') fail(`${f}.mode`, 'expected "envelope" or "batch"');
    if ((v.mode === 'batch') !== (out.batch !== undefined)) {
      fail(`${f}.mode`, v.mode === 'batch' ? 'mode "batch" needs the batch inclusion path (nostr.batch)' : 'mode "envelope" with a batch inclusion path (nostr.batch): the proof contradicts itself');
    }
    out.mode = v.mode;
  }
  return out;
}

function parseOts(v: unknown): OtsProof {
  const f = 'anchor_proof.ots';
  if (!isObject(v)) fail(f, 'expected an object');
  const calendars = v.calendars ?? [];
  if (!Array.isArray(calendars)) fail(`${f}.calendars`, 'expected a list');
  const out: OtsProof = {
    status: status(v.status, `${f}.status`),
    proof: v.proof === null || v.proof === undefined ? null : str(v.proof, `${f}.proof`),
    calendars: calendars.map((c, i) => {
      if (!isObject(c)) fail(`${f}.calendars[${i}]`, 'expected an object');
      return { url: str(c.url, `${f}.calendars[${i}].url`), status: str(c.status, `${f}.calendars[${i}].status`) };
    }),
  };
  if (v.bitcoin !== undefined) {
    const b = v.bitcoin;
    if (!isObject(b)) fail(`${f}.bitcoin`, 'expected an object');
    out.bitcoin = {
      height: nonNegInt(b.height, `${f}.bitcoin.height`),
      block_hash: str(b.block_hash, `${f}.bitcoin.block_hash`),
      time: nonNegInt(b.time, `${f}.bitcoin.time`),
    };
  }
  return out;
}

/** Checks the shape of an `aer1-anchor-proof-v1` object; an unknown version is refused by name. */
export function parseAnchorProof(v: unknown): AnchorProof {
  if (!isObject(v)) fail('anchor_proof', 'expected an object');
  if (v.version !== PROOF_VERSION) {
    throw new InputError('unknown_proof_version', `unknown proof version ${quoteBounded(v.version)} (this tool reads ${PROOF_VERSION})`, 'anchor_proof.version');
  }
  if (!isObject(v.envelope)) fail('anchor_proof.envelope', 'expected an object');
  if (typeof v.digest !== 'string' || !HEX64.test(v.digest)) fail('anchor_proof.digest', 'expected 64 lowercase hex characters');
  const proof: AnchorProof = {
    version: PROOF_VERSION,
    envelope: v.envelope,
    digest: v.digest,
    status: status(v.status, 'anchor_proof.status'),
  };
  if (v.nostr !== undefined) proof.nostr = parseNostr(v.nostr);
  if (v.ots !== undefined) proof.ots = parseOts(v.ots);
  if (v.log !== undefined) proof.log = parseLog(v.log);
  return proof;
}
