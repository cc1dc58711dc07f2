/**
 * The packed facts a subject retired lean keeps in its log:idx value (retired-facts.ts): what
 * goes in comes back, the three kinds' claims and both witnesses' batch ids; the bytes stay
 * few; bytes that are not facts are refused with a message naming what is wrong.
 */
import { describe, expect, it } from 'vitest';
import { decodeFacts, encodeFacts, packableBatchId, readLogIndex, retiredValue, type RetiredFacts } from '../../src/adapters/log/retired-facts.js';
import { envelopeOfFacts } from '../../src/adapters/proof/retired.js';
import { packEnvelope } from '../../src/core/envelope/compact.js';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';

const hex = (c: string): string => c.repeat(64);

describe('retired facts', () => {
  it('a receipt with both witnesses comes back as it went in, in under 60 bytes', () => {
    const envelope = { anchored_at: '2026-12-03T07:00:05Z', output_sha256: hex('a'), receipt_uuid: '0b7e2c8a-1d3f-4e5a-9b6c-7d8e9f0a1b2c', subject: 'receipt', type: 'zambo-receipt-anchor/1' };
    const claims = packEnvelope(envelope, envelope.receipt_uuid, Date.parse(envelope.anchored_at))!;
    const facts: RetiredFacts = { batches: { nostr: '17-a1b2c3d4e5f6', ots: '123456-000000000001' }, anchoredAt: Date.parse(envelope.anchored_at) / 1000, claims };
    const bytes = encodeFacts(facts);
    expect(bytes.length).toBeLessThan(60);
    const back = decodeFacts(bytes);
    expect(back).toEqual(facts);
    expect(envelopeOfFacts('receipt', envelope.receipt_uuid, back)).toBe(canonicalJson(envelope));
  });

  it('a workflow close and a chain head with one witness each', () => {
    const close = { anchored_at: '2030-01-01T00:00:00Z', merkle_root: hex('b'), merkle_version: 'rfc6962-v1', output_sha256: hex('c'), receipt_uuid: 'k1', step_count: 300, subject: 'workflow-close', type: 'zambo-receipt-anchor/1', workflow_id: 'wf-9' };
    const head = { anchored_at: '2030-01-01T00:00:01Z', entry_count: 0, final_entry_digest: hex('d'), job_id: 'job-1', subject: 'chain-head', type: 'zambo-receipt-anchor/1' };
    for (const [kind, env, key, w] of [['workflow-close', close, 'k1', 'ots'], ['chain-head', head, 'job-1', 'nostr']] as const) {
      const at = Date.parse(env.anchored_at);
      const facts: RetiredFacts = { batches: { [w]: '1-ffffffffffff' }, anchoredAt: at / 1000, claims: packEnvelope(env, key, at)! };
      const back = decodeFacts(encodeFacts(facts));
      expect(back).toEqual(facts);
      expect(envelopeOfFacts(kind, key, back)).toBe(canonicalJson(env));
    }
  });

  it('the log:idx value: a bare index while in Redis, <index>:<facts> once retired', () => {
    expect(readLogIndex('42')).toEqual({ index: 42, facts: null });
    expect(readLogIndex(null)).toBeNull();
    const facts: RetiredFacts = { batches: { ots: '3-0123456789ab' }, anchoredAt: 1_800_000_000, claims: new Map() };
    const value = retiredValue(70_000, facts);
    expect(value.subarray(0, 6).toString()).toBe('70000:');
    const read = readLogIndex(value)!;
    expect(read.index).toBe(70_000);
    expect(decodeFacts(read.facts!)).toEqual(facts);
    expect(() => readLogIndex('x1')).toThrow(/is not an index/);
  });

  it('refuses bytes that are not facts, and batch ids it cannot keep', () => {
    expect(() => decodeFacts(Buffer.from([]))).toThrow(/cut short in flags/);
    expect(() => decodeFacts(Buffer.from([8, 1]))).toThrow(/unknown flags 8/);
    expect(() => decodeFacts(Buffer.from([1, 1, 2]))).toThrow(/cut short in nostr batch/);
    expect(() => decodeFacts(Buffer.from([0, 1, 99, 0]))).toThrow(/unknown claim code 99/);
    expect(() => decodeFacts(Buffer.from([0, 1, 0, 32, 1]))).toThrow(/cut short in output_sha256/);
    expect(() => decodeFacts(Buffer.from([0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]))).toThrow(/anchored_at is too long/);
    expect(packableBatchId('17-a1b2c3d4e5f6')).toBe(true);
    expect(packableBatchId('17-A1B2C3D4E5F6')).toBe(false);
    expect(packableBatchId('batch-1')).toBe(false);
    expect(() => encodeFacts({ batches: { nostr: 'batch-1' }, anchoredAt: 1, claims: new Map() })).toThrow(/is not <seq>-<12 hex>/);
  });
});
