/**
 * The entries of the state-change stream (`{prefix}:events`) and the subject events they
 * stand for. The state scripts write, atomically with the change:
 *
 * - one subject's change as one entry (its `data` is the subject event itself, the form every
 *   entry had before packing; conflicts, rejects and proofs always take it);
 * - a call's changes of many subjects as ONE packed entry, self-contained:
 *   - `{"type":"accepted","status":"pending","at":…,"subjects":[[key, digest], …]}`
 *     (accept.lua: the subjects it created, in order);
 *   - `{"type":"state","witness":…,"to":…,"at":…,"detail":…,"runs":[[from, previous,
 *     status, key, key, …], …]}` (set-witness.lua: the subjects whose status changed, in
 *     order, as runs of consecutive subjects that share the witness's old status `from`, the
 *     old overall `previous` and the new overall `status`);
 *   - `{"type":"retired","status":"confirmed","at":…,"keys":[key, …]}` (forget.lua: the
 *     subjects it removed, in order).
 *
 * A packed entry whose subjects' keys are all canonical UUIDs (lowercase `8-4-4-4-12` hex, what
 * AER-1 `receipt_uuid` values are) carries them as *tokens* instead (layout 6): each key as the
 * 22 characters of its 16 bytes in unpadded base64url (keyToken), each digest as the 43 of its
 * 32 bytes, concatenated without separators:
 *   - `{"type":"accepted","status":"pending","at":…,"u":"<key token><digest token>…"}`;
 *   - `{"type":"state","witness":…,"to":…,"at":…,"detail":…,"ru":[[from, previous, status,
 *     "<key token>…"], …]}`.
 * They expand to exactly the events of the plain form (keys and digests as lowercase hex).
 *
 * A packed entry `<ms>-<seq>` of n subjects expands to n subject events with ids
 * `<ms>-<seq>.0` … `<ms>-<seq>.<n-1>`, in the order the state changed; a one-subject entry keeps
 * its plain id. A plain id names the whole entry: resuming from `<ms>-<seq>` goes on after all
 * of it, from `<ms>-<seq>.<i>` after its subject event i.
 */

/** One subject's event, as the feed and the webhooks hand it on. */
export interface StateEvent {
  type: 'accepted' | 'state' | 'rejected' | 'conflict' | 'retired' | 'proof';
  key: string;
  status: string;
  at: string;
  witness?: string;
  from?: string;
  to?: string;
  previous?: string;
  detail?: string;
  reason?: string;
  digest?: string;
  /** `proof` entries (retention handing a proof to the webhooks): the aer1-anchor-proof-v1. */
  proof?: Record<string, unknown>;
}

/** A subject event with its id (the entry's, or `<entry id>.<i>` inside a packed entry). */
export interface SubjectEvent {
  id: string;
  event: StateEvent;
  /** The event's JSON: for a one-subject entry the stream's bytes as they are. */
  text: string;
}

export type RawEntry = [id: string, fields: string[]];

function dataOf(fields: string[]): string | null {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'data') return fields[i + 1]!;
  return null;
}

const isString = (v: unknown): v is string => typeof v === 'string';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;
/** Characters of one key token and one digest token in a packed entry. */
export const KEY_TOKEN_CHARS = 22;
export const DIGEST_TOKEN_CHARS = 43;

/** The key's token in a packed entry (its 16 bytes, unpadded base64url), or null when the key is not a canonical lowercase UUID. */
export function keyToken(key: string): string | null {
  if (!UUID.test(key)) return null;
  return Buffer.from(key.replaceAll('-', ''), 'hex').toString('base64url');
}

/** A digest's token (its 32 bytes, unpadded base64url), or null when it is not 64 lowercase hex characters. */
export function digestToken(digest: string): string | null {
  return /^[0-9a-f]{64}$/.test(digest) ? Buffer.from(digest, 'hex').toString('base64url') : null;
}

/** The bytes of a token as lowercase hex, or null when it is not the canonical token of `bytes` bytes. */
function tokenHex(token: string, bytes: number): string | null {
  if (!BASE64URL.test(token)) return null;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length !== bytes || raw.toString('base64url') !== token) return null;
  return raw.toString('hex');
}

function keyOfToken(token: string): string | null {
  const h = tokenHex(token, 16);
  return h === null ? null : `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The keys of a run of concatenated key tokens; null when the text is not whole tokens. */
function keysOfTokens(text: string): string[] | null {
  if (text.length % KEY_TOKEN_CHARS !== 0) return null;
  const keys: string[] = [];
  for (let i = 0; i < text.length; i += KEY_TOKEN_CHARS) {
    const key = keyOfToken(text.slice(i, i + KEY_TOKEN_CHARS));
    if (key === null) return null;
    keys.push(key);
  }
  return keys;
}

/**
 * The subject events of one stream entry, in order; none for an entry that is not one of
 * ours (no JSON `data`, or a shape this version does not know).
 */
export function expandEntry(entry: RawEntry): SubjectEvent[] {
  const [id, fields] = entry;
  const text = dataOf(fields);
  if (text === null) return [];
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return [];
  }
  if (typeof data !== 'object' || data === null) return [];
  if (isString(data.key)) return [{ id, event: data as unknown as StateEvent, text }];
  const out: StateEvent[] = [];
  if (data.type === 'accepted' && Array.isArray(data.subjects) && isString(data.at)) {
    const status = isString(data.status) ? data.status : 'pending';
    for (const s of data.subjects) {
      if (!Array.isArray(s) || !isString(s[0])) continue;
      out.push({ type: 'accepted', key: s[0], status, at: data.at, digest: isString(s[1]) ? s[1] : '' });
    }
  } else if (data.type === 'accepted' && isString(data.u) && isString(data.at)) {
    const status = isString(data.status) ? data.status : 'pending';
    const step = KEY_TOKEN_CHARS + DIGEST_TOKEN_CHARS;
    if (data.u.length % step !== 0) return [];
    for (let i = 0; i < data.u.length; i += step) {
      const key = keyOfToken(data.u.slice(i, i + KEY_TOKEN_CHARS));
      const digest = tokenHex(data.u.slice(i + KEY_TOKEN_CHARS, i + step), 32);
      if (key === null || digest === null) return [];
      out.push({ type: 'accepted', key, status, at: data.at, digest });
    }
  } else if (data.type === 'state' && Array.isArray(data.ru) && isString(data.at) && isString(data.witness) && isString(data.to)) {
    const detail = isString(data.detail) ? data.detail : '';
    for (const run of data.ru) {
      if (!Array.isArray(run) || run.length !== 4 || !run.every(isString)) return [];
      const [from, previous, status, tokens] = run as [string, string, string, string];
      const keys = keysOfTokens(tokens);
      if (keys === null) return [];
      for (const key of keys) out.push({ type: 'state', key, witness: data.witness, from, to: data.to, status, previous, at: data.at, detail });
    }
  } else if (data.type === 'state' && Array.isArray(data.runs) && isString(data.at) && isString(data.witness) && isString(data.to)) {
    const detail = isString(data.detail) ? data.detail : '';
    for (const run of data.runs) {
      if (!Array.isArray(run) || run.length < 4 || !run.every(isString)) continue;
      const [from, previous, status] = run as string[];
      for (let i = 3; i < run.length; i++) {
        out.push({ type: 'state', key: run[i] as string, witness: data.witness, from, to: data.to, status: status!, previous, at: data.at, detail });
      }
    }
  } else if (data.type === 'retired' && Array.isArray(data.keys) && isString(data.at)) {
    const status = isString(data.status) ? data.status : 'confirmed';
    for (const key of data.keys) if (isString(key)) out.push({ type: 'retired', key, status, at: data.at });
  } else {
    return [];
  }
  return out.map((event, i) => ({ id: `${id}.${i}`, event, text: JSON.stringify(event) }));
}

const EVENT_ID = /^(\d{1,20})(?:-(\d{1,20}))?(?:\.(\d{1,6}))?$/;

/** A subject event id: the entry's (ms, seq) and the index inside it (null: the whole entry). */
export type EventId = [ms: bigint, seq: bigint, sub: number | null];

/** The largest number a Redis stream id holds in either part (unsigned 64 bits). */
const ID_PART_MAX = 2n ** 64n - 1n;

/** Parses `ms-seq`, `ms` (meaning `ms-0`) or `ms-seq.i`; null when it is none of them (or a part is over 2^64 - 1, which no stream id has). */
export function parseEventId(text: string): EventId | null {
  const m = EVENT_ID.exec(text.trim());
  if (!m || (m[3] !== undefined && m[2] === undefined)) return null;
  const ms = BigInt(m[1]!);
  const seq = BigInt(m[2] ?? '0');
  // Redis refuses such an id in XRANGE: a replay from it would break the stream after its 200
  if (ms > ID_PART_MAX || seq > ID_PART_MAX) return null;
  return [ms, seq, m[3] === undefined ? null : Number(m[3])];
}

export function formatEventId(id: EventId): string {
  return `${id[0]}-${id[1]}${id[2] === null ? '' : `.${id[2]}`}`;
}

/** Event ids in stream order; a plain entry id comes after every subject event of its entry. */
export function compareEventIds(a: string, b: string): number {
  const x = parseEventId(a);
  const y = parseEventId(b);
  if (!x || !y) throw new Error(`not an event id: ${x ? b : a}`);
  if (x[0] !== y[0]) return x[0] < y[0] ? -1 : 1;
  if (x[1] !== y[1]) return x[1] < y[1] ? -1 : 1;
  const xs = x[2] ?? Infinity;
  const ys = y[2] ?? Infinity;
  return xs === ys ? 0 : xs < ys ? -1 : 1;
}
