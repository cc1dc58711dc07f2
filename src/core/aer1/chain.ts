/**
 * Job timelines (draft-zambo-aer1 section 7.1, revision 07 and later): every entry's digest
 * over canonical JSON of exactly {close, id, job_id, output_hash, prev_digest,
 * provenance_class, seq, tool}, linked through `prev_digest`, ending in a chain head.
 */
import { InputError } from '../errors/errors.js';
import { decodeBase64Strict, decodeUtf8Strict } from './base64.js';
import { canonicalBytes } from './canonical-json.js';
import {
  checkCount, checkHex64, checkLength, checkSeq, checkSeqPosition, describeValue, indexPath, isObject, memberPath,
  parseDigest, requireObject, requireText,
} from './fields.js';
import { sha256Hex } from './hash.js';
import { limitExceeded, resolveLimits, type ParseOptions } from './limits.js';
import { quoteBounded } from './json-limits.js';

/** `prev_digest` of the first entry. */
export const GENESIS_DIGEST = '0'.repeat(64);

export interface TimelineEntry {
  readonly seq: number;
  readonly jobId: string;
  readonly id: string;
  readonly tool: string;
  readonly provenanceClass: string;
  readonly canonicalBase64: string;
  /** `output_hash` when the entry declares one, bare lowercase hex. */
  readonly declaredOutputHash: string | undefined;
  readonly declaredByteLength: number | undefined;
  readonly prevDigest: string;
  /** `close`, false when absent. */
  readonly close: boolean;
  /** Path of the entry in the input (`entries[3]`). */
  readonly field: string;
}

export interface Timeline {
  /** '' for a bare array, 'entries' for `{"entries": [...]}`. */
  readonly path: string;
  readonly jobId: string;
  readonly entries: readonly TimelineEntry[];
  /** Declared on the `{"entries": [...]}` wrapper, when present. */
  readonly declaredFinalEntryDigest: string | undefined;
  readonly declaredEntryCount: number | undefined;
  /** True when the last entry has `close: true` (always, unless parsed with `allowOpenTimeline`). */
  readonly closed: boolean;
}

/** The chain head: the third kind of anchored root (SPEC section 3). */
export interface ChainHead {
  readonly job_id: string;
  readonly final_entry_digest: string;
  readonly entry_count: number;
}

export interface ChainRecomputation {
  /** Entry digests in order, lowercase hex. */
  readonly digests: readonly string[];
  readonly head: ChainHead;
}

/**
 * Parses a job timeline. A timeline must be closed: `close` is true on the last entry and
 * only there. An open timeline is refused (unless `allowOpenTimeline`) because its chain
 * head would take the job's subject key and the final head could never be anchored.
 */
export function parseTimeline(doc: unknown, options: ParseOptions = {}): Timeline {
  const limits = resolveLimits(options.limits);
  let path = '';
  let list: unknown;
  let wrapper: Record<string, unknown> | undefined;
  if (Array.isArray(doc)) {
    list = doc;
  } else if (isObject(doc) && 'entries' in doc) {
    wrapper = doc;
    path = 'entries';
    list = doc.entries;
  } else {
    throw new InputError('not_timeline', `expected a JSON array of entries or {"entries": [...]}, got ${describeValue(doc)}`, '$');
  }
  if (!Array.isArray(list)) throw new InputError('not_array', `expected an array, got ${describeValue(list)}`, path || '$');
  if (list.length === 0) throw new InputError('no_entries', 'a job timeline needs at least one entry', path || '$');
  if (list.length > limits.maxEntries) throw limitExceeded('maxEntries', list.length, limits.maxEntries, path || '$');

  const entries: TimelineEntry[] = [];
  let jobId = '';
  list.forEach((raw, i) => {
    const field = indexPath(path, i);
    const e = requireObject(raw, field);
    const seqField = memberPath(field, 'seq');
    if (!('seq' in e)) throw new InputError('missing', 'required member is missing', seqField);
    const seq = checkSeq(e.seq, seqField);
    checkSeqPosition(seq, i, seqField);

    const entryJob = requireText(e, 'job_id', field, limits);
    if (i === 0) jobId = entryJob;
    else if (entryJob !== jobId) {
      throw new InputError('job_id_mismatch', `job_id ${quoteBounded(entryJob)} differs from ${quoteBounded(jobId)} of the first entry`, memberPath(field, 'job_id'));
    }

    const closeField = memberPath(field, 'close');
    let close = false;
    if ('close' in e) {
      if (typeof e.close !== 'boolean') throw new InputError('not_boolean', `expected true or false, got ${describeValue(e.close)}`, closeField);
      close = e.close;
    }
    const last = i === list.length - 1;
    if (close && !last) {
      throw new InputError('close_not_last', `close is true on entry ${i + 1} of ${list.length}; only the last entry may close the timeline`, closeField);
    }
    if (!close && last && !options.allowOpenTimeline) {
      throw new InputError('not_closed', 'the last entry must have close: true (open timelines are not anchored)', closeField);
    }

    const bytesField = memberPath(field, 'canonical_bytes');
    if (!('canonical_bytes' in e)) throw new InputError('missing', 'required member is missing (the output hash cannot be recomputed without it)', bytesField);
    if (typeof e.canonical_bytes !== 'string') throw new InputError('not_string', `expected base64 text, got ${describeValue(e.canonical_bytes)}`, bytesField);
    if (e.canonical_bytes.length > Math.ceil(limits.maxCanonicalBytes / 3) * 4) {
      throw limitExceeded('maxCanonicalBytes', Math.floor(e.canonical_bytes.length / 4) * 3, limits.maxCanonicalBytes, bytesField);
    }

    const prevField = memberPath(field, 'prev_digest');
    if (!('prev_digest' in e)) throw new InputError('missing', 'required member is missing', prevField);

    entries.push({
      seq,
      jobId: entryJob,
      id: requireText(e, 'id', field, limits),
      tool: requireText(e, 'tool', field, limits),
      provenanceClass: requireText(e, 'provenance_class', field, limits),
      canonicalBase64: e.canonical_bytes,
      declaredOutputHash: 'output_hash' in e ? parseDigest(e.output_hash, memberPath(field, 'output_hash')) : undefined,
      declaredByteLength: 'canonical_byte_length' in e ? checkLength(e.canonical_byte_length, memberPath(field, 'canonical_byte_length')) : undefined,
      // Hashed as written, so it must already be the bare lowercase form the digests take.
      prevDigest: checkHex64(e.prev_digest, prevField),
      close,
      field,
    });
  });

  let declaredFinalEntryDigest: string | undefined;
  let declaredEntryCount: number | undefined;
  if (wrapper) {
    if ('job_id' in wrapper && wrapper.job_id !== jobId) {
      throw new InputError('job_id_mismatch', `job_id ${quoteBounded(wrapper.job_id)} differs from the entries' ${quoteBounded(jobId)}`, 'job_id');
    }
    if ('final_entry_digest' in wrapper) declaredFinalEntryDigest = parseDigest(wrapper.final_entry_digest, 'final_entry_digest');
    if ('entry_count' in wrapper) declaredEntryCount = checkCount(wrapper.entry_count, 'entry_count');
  }
  return { path, jobId, entries, declaredFinalEntryDigest, declaredEntryCount, closed: entries.at(-1)!.close };
}

/** Entry digest per section 7.1: SHA-256 over canonical JSON of exactly these eight members. */
export function entryDigest(entry: Omit<TimelineEntry, 'canonicalBase64' | 'declaredOutputHash' | 'declaredByteLength' | 'field'>, outputHash: string): string {
  return sha256Hex(canonicalBytes({
    close: entry.close,
    id: entry.id,
    job_id: entry.jobId,
    output_hash: outputHash,
    prev_digest: entry.prevDigest,
    provenance_class: entry.provenanceClass,
    seq: entry.seq,
    tool: entry.tool,
  }));
}

/**
 * Decodes every entry's bytes, recomputes every digest and checks every link; throws an
 * InputError on the first bad payload, output hash, byte length or broken link.
 */
export function recomputeChain(timeline: Timeline): ChainRecomputation {
  const digests: string[] = [];
  let prev = GENESIS_DIGEST;
  for (const [i, entry] of timeline.entries.entries()) {
    if (entry.prevDigest !== prev) {
      const expected = i === 0 ? 'the first entry links to 64 zeros' : `the digest of ${timeline.entries[i - 1]!.field} is ${prev}`;
      throw new InputError('broken_link', `broken chain link: prev_digest is ${entry.prevDigest}, ${expected}`, memberPath(entry.field, 'prev_digest'));
    }
    const bytesField = memberPath(entry.field, 'canonical_bytes');
    const bytes = decodeBase64Strict(entry.canonicalBase64, bytesField);
    decodeUtf8Strict(bytes, bytesField);
    if (entry.declaredByteLength !== undefined && entry.declaredByteLength !== bytes.length) {
      throw new InputError('byte_length_mismatch', `declares ${entry.declaredByteLength} bytes, canonical_bytes decodes to ${bytes.length}`, memberPath(entry.field, 'canonical_byte_length'));
    }
    const outputHash = sha256Hex(bytes);
    if (entry.declaredOutputHash !== undefined && entry.declaredOutputHash !== outputHash) {
      throw new InputError('output_hash_mismatch', `does not match the bytes: declared ${entry.declaredOutputHash}, recomputed ${outputHash}`, memberPath(entry.field, 'output_hash'));
    }
    prev = entryDigest(entry, outputHash);
    digests.push(prev);
  }
  return { digests, head: { job_id: timeline.jobId, final_entry_digest: prev, entry_count: digests.length } };
}

/** `recomputeChain`, also holding the wrapper's declared `final_entry_digest` and `entry_count` to the result. */
export function checkChain(timeline: Timeline): ChainRecomputation {
  const r = recomputeChain(timeline);
  if (timeline.declaredEntryCount !== undefined && timeline.declaredEntryCount !== r.head.entry_count) {
    throw new InputError('entry_count_mismatch', `declares ${timeline.declaredEntryCount} entries, the timeline has ${r.head.entry_count}`, 'entry_count');
  }
  if (timeline.declaredFinalEntryDigest !== undefined && timeline.declaredFinalEntryDigest !== r.head.final_entry_digest) {
    throw new InputError('final_entry_digest_mismatch', `does not match the entries: declared ${timeline.declaredFinalEntryDigest}, recomputed ${r.head.final_entry_digest}`, 'final_entry_digest');
  }
  return r;
}
