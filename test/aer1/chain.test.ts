import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkChain, GENESIS_DIGEST, parseTimeline, recomputeChain } from '../../src/core/aer1/chain.js';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { claimsFromDocument } from '../../src/core/envelope/from-document.js';
import { inputErrorOf, loadFixture, type ChainVector } from '../fixtures/index.js';

const vector = () => loadFixture<ChainVector>('aer1-chain-v07');
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('chain vector v07', () => {
  it('states the rule this code implements', () => {
    expect(vector().rule).toContain('{close (false when absent), id, job_id, output_hash (bare hex SHA-256 of the decoded canonical_bytes), prev_digest, provenance_class, seq (integer), tool}');
  });

  it('recomputes every entry digest: each is the next entry prev_digest, the last is final_entry_digest', () => {
    const v = vector();
    const r = checkChain(parseTimeline(v));
    expect(r.digests.slice(0, -1)).toEqual(v.entries.slice(1).map((e) => e.prev_digest));
    expect(r.digests.at(-1)).toBe(v.final_entry_digest);
    expect(r.head).toEqual({ job_id: 'job-7a1f', final_entry_digest: v.final_entry_digest, entry_count: v.entry_count });
  });

  it('matches the rule computed by hand for the first entry', () => {
    const e = vector().entries[0]!;
    const outputHash = sha(Buffer.from(String(e.canonical_bytes), 'base64'));
    const text = `{"close":false,"id":"${String(e.id)}","job_id":"job-7a1f","output_hash":"${outputHash}","prev_digest":"${GENESIS_DIGEST}","provenance_class":"LOGGED BY AGENT","seq":1,"tool":"price_lookup"}`;
    expect(canonicalJson({ ...e, canonical_bytes: undefined, close: false, output_hash: outputHash })).toBe(text);
    expect(recomputeChain(parseTimeline(vector().entries)).digests[0]).toBe(sha(text));
  });

  it('reads a bare JSON array of entries too', () => {
    const t = parseTimeline(vector().entries);
    expect(t.path).toBe('');
    expect(recomputeChain(t).head.final_entry_digest).toBe(vector().final_entry_digest);
  });
});

describe('timeline rules', () => {
  it('refuses a broken link, naming the entry', () => {
    const v = vector();
    v.entries[2]!.prev_digest = v.entries[1]!.prev_digest;
    const err = inputErrorOf(() => recomputeChain(parseTimeline(v)));
    expect(err.code).toBe('broken_link');
    expect(err.field).toBe('entries[2].prev_digest');
    expect(err.message).toContain('the digest of entries[1] is c225aa22');
  });

  it('an altered payload breaks the next link', () => {
    const v = vector();
    v.entries[1]!.canonical_bytes = Buffer.from('{"job":"job-7a1f","entry":1,"tag":"x"}').toString('base64');
    expect(inputErrorOf(() => recomputeChain(parseTimeline(v))).field).toBe('entries[2].prev_digest');
  });

  it('the first entry must link to 64 zeros', () => {
    const v = vector();
    v.entries[0]!.prev_digest = 'f'.repeat(64);
    const err = inputErrorOf(() => recomputeChain(parseTimeline(v.entries)));
    expect(err.field).toBe('$[0].prev_digest');
    expect(err.message).toContain('64 zeros');
  });

  it('refuses close anywhere but the last entry', () => {
    const v = vector();
    v.entries[1]!.close = true;
    const err = inputErrorOf(() => parseTimeline(v));
    expect(err.code).toBe('close_not_last');
    expect(err.field).toBe('entries[1].close');
  });

  it('refuses an open timeline (no close on the last entry)', () => {
    const v = vector();
    delete v.entries[4]!.close;
    const err = inputErrorOf(() => parseTimeline(v));
    expect(err.code).toBe('not_closed');
    expect(err.field).toBe('entries[4].close');
  });

  it('parses an open timeline only when asked to, and never makes claims from it', () => {
    const truncated = vector().entries.slice(0, 3);
    const t = parseTimeline(truncated, { allowOpenTimeline: true });
    expect(t.closed).toBe(false);
    // Digests are recomputed over what is written: entry 3 still links to the original entry 4.
    expect(recomputeChain(t).head).toEqual({ job_id: 'job-7a1f', final_entry_digest: vector().entries[3]!.prev_digest, entry_count: 3 });
    expect(parseTimeline(vector()).closed).toBe(true);
    const err = inputErrorOf(() => claimsFromDocument(truncated, undefined, { allowOpenTimeline: true }));
    expect(err.code).toBe('not_closed');
    expect(err.field).toBe('$[2].close');
  });

  it('refuses a non-boolean close', () => {
    const v = vector();
    v.entries[4]!.close = 'true';
    expect(inputErrorOf(() => parseTimeline(v)).code).toBe('not_boolean');
  });

  it('refuses a second job_id', () => {
    const v = vector();
    v.entries[3]!.job_id = 'job-other';
    const err = inputErrorOf(() => parseTimeline(v));
    expect(err.code).toBe('job_id_mismatch');
    expect(err.field).toBe('entries[3].job_id');
  });

  it('refuses a seq gap and a non-integer seq', () => {
    const v = vector();
    v.entries.splice(1, 1);
    expect(inputErrorOf(() => parseTimeline(v)).field).toBe('entries[1].seq');
    const w = vector();
    w.entries[0]!.seq = 1.5;
    expect(inputErrorOf(() => parseTimeline(w)).code).toBe('seq_not_integer');
  });

  it('refuses non-canonical base64 and non-UTF-8 payloads', () => {
    const v = vector();
    v.entries[3]!.canonical_bytes = String(v.entries[3]!.canonical_bytes).replace('=', '');
    const err = inputErrorOf(() => recomputeChain(parseTimeline(v)));
    expect(err.code).toBe('bad_base64');
    expect(err.field).toBe('entries[3].canonical_bytes');
    const w = vector();
    w.entries[0]!.canonical_bytes = '/w==';
    expect(inputErrorOf(() => recomputeChain(parseTimeline(w))).code).toBe('bad_utf8');
  });

  it('holds a declared output_hash to the bytes', () => {
    const v = vector();
    v.entries[2]!.output_hash = `sha256:${'0'.repeat(64)}`;
    const err = inputErrorOf(() => recomputeChain(parseTimeline(v)));
    expect(err.code).toBe('output_hash_mismatch');
    expect(err.field).toBe('entries[2].output_hash');
  });

  it('holds a declared final_entry_digest and entry_count to the entries', () => {
    const v = vector();
    v.final_entry_digest = v.entries[4]!.prev_digest as string;
    expect(inputErrorOf(() => checkChain(parseTimeline(v))).field).toBe('final_entry_digest');
    const w = vector();
    w.entry_count = 6;
    expect(inputErrorOf(() => checkChain(parseTimeline(w))).field).toBe('entry_count');
  });

  it('refuses an upper-case prev_digest (it is hashed as written)', () => {
    const v = vector();
    v.entries[1]!.prev_digest = String(v.entries[1]!.prev_digest).toUpperCase();
    expect(inputErrorOf(() => parseTimeline(v)).code).toBe('bad_hex');
  });

  it('refuses an empty timeline and names the maxEntries limit', () => {
    expect(inputErrorOf(() => parseTimeline([])).code).toBe('no_entries');
    const err = inputErrorOf(() => parseTimeline(vector(), { limits: { maxEntries: 3 } }));
    expect(err.code).toBe('limit_exceeded');
    expect(err.message).toContain('maxEntries = 3');
  });
});
