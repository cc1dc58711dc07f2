/**
 * Batch mode keeps a subject's envelope as its claims in the subject hash (when every value
 * fits in 64 bytes) and rebuilds the canonical text when read, checked against the digest;
 * a subject whose claims do not fit keeps `:e:<key>`, and so do those written before.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnchorStore } from '../../src/adapters/state/anchor-store.js';
import { buildEnvelope, envelopeCanonical, type SubjectClaims } from '../../src/core/envelope/envelope.js';
import { envelopeOfCanonical, packEnvelope, unpackEnvelope } from '../../src/core/envelope/compact.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { deletePrefix, SHARED_REDIS_URL, uniquePrefix } from '../helpers/harness.js';

const hex = (): string => randomBytes(32).toString('hex');
const CREATED = 1_764_590_000_123;
const receipt = (extra: Partial<SubjectClaims> = {}): SubjectClaims => ({ subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: hex(), ...extra }) as SubjectClaims;
const workflow = (extra: Record<string, unknown> = {}): SubjectClaims => ({ subject: 'workflow-close', receipt_uuid: randomUUID(), output_sha256: hex(), workflow_id: 'wf-é-1', merkle_root: hex(), merkle_version: 'receipt-id-v0', step_count: 12, ...extra }) as SubjectClaims;
const chainHead = (): SubjectClaims => ({ subject: 'chain-head', job_id: `job-${randomBytes(4).toString('hex')}`, final_entry_digest: hex(), entry_count: 9_007_199_254_740_991 });
const keyOf = (c: SubjectClaims): string => (c.subject === 'chain-head' ? c.job_id : c.receipt_uuid);
const canonicalOf = (c: SubjectClaims, atMs = CREATED): string => envelopeCanonical(buildEnvelope(c, new Date(atMs)));

describe('an envelope kept as its claims (core)', () => {
  it.each([
    ['a receipt', receipt()],
    ['a receipt with its evidence', receipt({ evidence_sha256: hex(), evidence_byte_length: 0, evidence_url: 'https://example.org/e/1' } as Partial<SubjectClaims>)],
    ['a workflow close', workflow()],
    ['a chain head', chainHead()],
  ])('%s rebuilds byte for byte, every value within 64 bytes', (_name, claims) => {
    const envelope = buildEnvelope(claims, new Date(CREATED - 3_000));
    const text = envelopeCanonical(envelope);
    const members = packEnvelope(envelope, keyOf(claims), CREATED)!;
    expect(members).not.toBeNull();
    for (const v of members.values()) expect(v.length).toBeLessThanOrEqual(64);
    expect(members.get('at')?.toString()).toBe('3');
    expect(unpackEnvelope(claims.subject, keyOf(claims), members, CREATED)).toBe(text);
  });

  it.each([
    ['an evidence_url over 64 bytes', buildEnvelope(receipt({ evidence_url: `https://example.org/${'a'.repeat(60)}` } as Partial<SubjectClaims>), new Date(CREATED))],
    ['a workflow_id over 64 bytes', buildEnvelope(workflow({ workflow_id: 'w'.repeat(65) }), new Date(CREATED))],
    // UTF-8 cannot carry a lone surrogate (kept as bytes it would come back as U+FFFD); parseClaims refuses one, packEnvelope does not rely on it
    ['a workflow_id with a lone surrogate', { ...buildEnvelope(workflow(), new Date(CREATED)), workflow_id: 'wf-\ud800' }],
    ['an object that is not an envelope', { k: 'x' }],
  ])('%s is not kept as claims', (_name, envelope) => {
    const key = (envelope as { receipt_uuid?: string }).receipt_uuid ?? 'x';
    expect(packEnvelope(envelope, key, CREATED)).toBeNull();
  });

  it('an envelope given as text is kept as claims only when the text is its canonical JSON', () => {
    const text = canonicalOf(receipt());
    expect(envelopeOfCanonical(text)).toEqual(JSON.parse(text));
    expect(envelopeOfCanonical(` ${text}`)).toBeNull();
    expect(envelopeOfCanonical(JSON.stringify(JSON.parse(text), null, 1))).toBeNull();
    expect(envelopeOfCanonical('{"k":')).toBeNull();
    expect(envelopeOfCanonical('[1]')).toBeNull();
  });
});

describe('AnchorStore in batch mode', () => {
  let redis: Redis;
  let prefix: string;
  let store: AnchorStore;
  beforeAll(() => {
    redis = new Redis(SHARED_REDIS_URL);
    prefix = uniquePrefix('claims');
    store = new AnchorStore(redis, prefix, () => CREATED);
  });
  afterAll(async () => {
    await deletePrefix(redis, store.keys.base);
    await redis.quit();
  });
  const accept = async (claims: SubjectClaims, atMs = CREATED) => {
    const text = canonicalOf(claims, atMs);
    const s = { key: keyOf(claims), kind: claims.subject, envelopeCanonical: text, digest: sha256Hex(text), fingerprint: hex() };
    expect((await store.subjects.acceptMany({ witnesses: ['nostr', 'ots'], inboxes: ['ots'] }, [s])).results).toEqual([{ result: 'created' }]);
    return s;
  };

  it('keeps no :e: key for a subject whose claims fit, and reads its envelope as accepted', async () => {
    for (const claims of [receipt(), workflow(), chainHead(), receipt({ evidence_sha256: hex(), evidence_byte_length: 42 } as Partial<SubjectClaims>)]) {
      const s = await accept(claims, CREATED - 1_000);
      expect(await redis.exists(store.keys.envelope(s.key))).toBe(0);
      expect(await redis.object('ENCODING', store.keys.subject(s.key))).toBe('listpack');
      const record = (await store.subjects.getRecord(s.key))!;
      expect(record.envelopeCanonical).toBe(s.envelopeCanonical);
      expect(record.digest).toBe(s.digest);
    }
  });

  it('keeps :e: for a subject whose claims do not fit, and reads it as before', async () => {
    const s = await accept(receipt({ evidence_url: `https://example.org/${'b'.repeat(80)}` } as Partial<SubjectClaims>));
    expect(await redis.get(store.keys.envelope(s.key))).toBe(s.envelopeCanonical);
    expect((await store.subjects.getRecord(s.key))!.envelopeCanonical).toBe(s.envelopeCanonical);
  });

  it('reads a subject whose envelope is under :e: (no claims in the hash) from there', async () => {
    const s = await accept(workflow());
    const fields = (await redis.hkeys(store.keys.subject(s.key))).filter((f) => f.startsWith('$'));
    expect(fields.length).toBeGreaterThan(0);
    // what accept.lua writes when the claims do not fit: the hash without them, the text beside it
    await redis.hdel(store.keys.subject(s.key), ...fields);
    await redis.set(store.keys.envelope(s.key), s.envelopeCanonical);
    expect((await store.subjects.getRecord(s.key))!.envelopeCanonical).toBe(s.envelopeCanonical);
  });

  it('refuses, naming the subject, an envelope whose rebuilt text does not match the stored digest', async () => {
    const s = await accept(receipt());
    await redis.hset(store.keys.subject(s.key), '$o', randomBytes(32));
    await expect(store.subjects.getRecord(s.key)).rejects.toThrow(new RegExp(`^subject ${s.key}: the envelope rebuilt from the claims stored with it has digest [0-9a-f]{64}, not the stored ${s.digest}$`));
  });
});
