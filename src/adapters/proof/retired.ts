/**
 * A subject retired lean (docs/reliability.md, Retention), read back as the record its proof
 * is built from: its log:idx value `<index>:<facts>` (src/adapters/log/retired-facts.ts)
 * and its entry in the log folder's tiles (`d`, kind, key). The envelope is rebuilt from the
 * facts' claims and `anchored_at` and must hash to the entry's `d`; every witness it had
 * confirmed, each linked to its batch with the log index as its place (a checkpoint batch).
 */
import type { RedisClient as Redis } from '../redis/connection.js';
import type { LogFolder } from '../log/log-folder.js';
import type { LogKeys } from '../log/log-sequencer.js';
import { decodeEntry, type EntryKind } from '../../core/log/entry.js';
import { unpackEnvelope } from '../../core/envelope/compact.js';
import { sha256Hex } from '../../core/aer1/hash.js';
import { WITNESSES } from '../state/keys.js';
import type { SubjectRecord } from '../state/subject-hash.js';
import { decodeFacts, readLogIndex, type RetiredFacts } from '../log/retired-facts.js';

const SUBJECT_OF_ENTRY: Record<EntryKind, string> = { receipt: 'receipt', workflow_close: 'workflow-close', job_timeline: 'chain-head' };

export interface RetiredSubject {
  record: SubjectRecord;
  /** The subject's log index. */
  index: number;
}

/** The envelope's canonical text the facts give for the subject `key` of `kind`. */
export function envelopeOfFacts(kind: string, key: string, facts: RetiredFacts): string {
  return unpackEnvelope(kind, key, facts.claims, facts.anchoredAt * 1000);
}

/** The record a subject retired lean is proven from, or null when `key` is not one (in Redis, never logged, or the folder does not cover its index). */
export async function retiredSubject(redis: Redis, logKeys: LogKeys, folder: LogFolder, key: string): Promise<RetiredSubject | null> {
  return (await retiredSubjects(redis, logKeys, folder, [key]))[0]!;
}

/** The log index of a subject retired lean, read from its log:idx value alone (no log folder); null when `key` is not one. */
export async function retiredLogIndex(redis: Redis, logKeys: LogKeys, key: string): Promise<number | null> {
  const value = readLogIndex(await redis.hgetBuffer(logKeys.index, key));
  return value !== null && value.facts !== null ? value.index : null;
}

/** retiredSubject of many keys, their log:idx values read in one round trip. */
export async function retiredSubjects(redis: Redis, logKeys: LogKeys, folder: LogFolder, keys: readonly string[]): Promise<Array<RetiredSubject | null>> {
  if (keys.length === 0) return [];
  const raw = await redis.hmgetBuffer(logKeys.index, ...keys);
  return keys.map((key, i) => fromValue(folder, key, raw[i] ?? null));
}

function fromValue(folder: LogFolder, key: string, raw: Buffer | null): RetiredSubject | null {
  const value = readLogIndex(raw);
  if (value === null || value.facts === null) return null;
  const cp = folder.checkpointCovering(value.index);
  if (cp === null) return null;
  const entry = decodeEntry(folder.entry(value.index, cp.size), `entry ${value.index}`);
  if (entry.key !== key) throw new Error(`subject ${key}: log entry ${value.index} is subject ${entry.key}'s`);
  const record = recordOfFacts(key, SUBJECT_OF_ENTRY[entry.kind], Buffer.from(entry.digest).toString('hex'), value.index, decodeFacts(value.facts));
  return { record, index: value.index };
}

/** The record the facts of the subject `key` of `kind` with digest `digest` at log index `index` give; throws when the envelope they give has another digest. */
export function recordOfFacts(key: string, kind: string, digest: string, index: number, facts: RetiredFacts): SubjectRecord {
  const envelope = envelopeOfFacts(kind, key, facts);
  if (sha256Hex(envelope) !== digest) throw new Error(`subject ${key}: the envelope rebuilt from its retired facts does not hash to its log entry's d`);
  const record: SubjectRecord = {
    key,
    kind,
    status: 'confirmed',
    envelopeCanonical: envelope,
    digest,
    createdMs: facts.anchoredAt * 1000,
    updatedMs: facts.anchoredAt * 1000,
    reason: null,
    witnesses: {},
    nostrEventId: null,
    batches: {},
  };
  for (const w of WITNESSES) {
    const id = facts.batches[w];
    if (id === undefined) continue;
    record.witnesses[w] = { status: 'confirmed', confirmedMs: null };
    record.batches[w] = { id, index };
  }
  return record;
}
