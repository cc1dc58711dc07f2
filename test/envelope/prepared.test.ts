/**
 * A subject prepared once (core/envelope/prepared.ts): its envelope, canonical text, digest
 * and fingerprint are what buildEnvelope, canonicalJson and SHA-256 give each on their own —
 * the fingerprint's text cut from the envelope's, for every kind of subject and for values
 * that look like the members cut (quotes, backslashes, `,"type":…` inside a string).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { buildEnvelope, parseClaims, type SubjectClaims } from '../../src/core/envelope/envelope.js';
import { claimsCanonicalOf, prepareSubject, rootFingerprint } from '../../src/core/envelope/prepared.js';
import { verifyEvent } from 'nostr-tools/pure';
import { envelopeEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';

const hex = (): string => randomBytes(32).toString('hex');
const AT = '2026-12-02T09:30:00Z';
const TRICKY = [
  'plain',
  'é ü ☃ 😀',
  '"quoted", \\ back\\slash',
  ',"type":"zambo-receipt-anchor/1"',
  '","type":"zambo-receipt-anchor/1","x":"',
  '{"anchored_at":"2026-01-01T00:00:00Z",',
  '\\",\\"type\\":\\"zambo-receipt-anchor/1\\"',
  'tab\tnew\nline\u0001',
];

const cases: Array<[string, Record<string, unknown>]> = [
  ['a receipt', { subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: hex() }],
  ...TRICKY.map((s, i): [string, Record<string, unknown>] => [`a receipt with evidence, key ${i}`, { subject: 'receipt', receipt_uuid: `k-${s}`, output_sha256: hex(), evidence_sha256: hex(), evidence_byte_length: i, evidence_url: `https://example.org/${i}` }]),
  ...TRICKY.map((s, i): [string, Record<string, unknown>] => [`a workflow close, workflow_id ${i}`, { subject: 'workflow-close', receipt_uuid: randomUUID(), output_sha256: hex(), workflow_id: s, merkle_root: hex(), merkle_version: s, step_count: 3 }]),
  ...TRICKY.map((s, i): [string, Record<string, unknown>] => [`a chain head, job_id ${i}`, { subject: 'chain-head', job_id: s, final_entry_digest: hex(), entry_count: 9_007_199_254_740_991 }]),
];

describe('prepareSubject', () => {
  it.each(cases)('%s: envelope, text, digest and fingerprint as each is computed on its own', (_name, given) => {
    const claims = parseClaims(given) as SubjectClaims;
    const p = prepareSubject(claims, AT);
    const envelope = buildEnvelope(claims, AT);
    expect(p.envelope).toEqual(envelope);
    expect(p.envelopeCanonical).toBe(canonicalJson(envelope));
    expect(p.digest).toBe(sha256Hex(canonicalJson(envelope)));
    expect(claimsCanonicalOf(p.envelopeCanonical)).toBe(canonicalJson(claims));
    expect(p.fingerprint).toBe(sha256Hex(canonicalJson(claims)));
    expect(p.fingerprint).toBe(rootFingerprint(envelope));
    expect(p.key).toBe(claims.subject === 'chain-head' ? claims.job_id : claims.receipt_uuid);
    expect(p.kind).toBe(claims.subject);
  });

  it('refuses to cut a text that is not an envelope\'s canonical JSON', () => {
    const text = canonicalJson(buildEnvelope(parseClaims(cases[0]![1]) as SubjectClaims, AT));
    for (const bad of ['{}', text.replace(',"type":"zambo-receipt-anchor/1"', ''), ` ${text}`, text.replace(AT, '2026-12-02T09:30:00.5Z')]) {
      expect(() => claimsCanonicalOf(bad)).toThrow(/not the canonical text of an envelope/);
    }
  });

  it('signs the same event from the envelope it built as from its text', () => {
    const key = generateSecretKey();
    for (const [, given] of cases) {
      const p = prepareSubject(parseClaims(given) as SubjectClaims, AT);
      const { sig: _s, ...fromText } = envelopeEvent({ canonical: p.envelopeCanonical, digestHex: p.digest }, key);
      const fromEnvelope = envelopeEvent({ canonical: p.envelopeCanonical, digestHex: p.digest, envelope: p.envelope }, key);
      // the same event (its id covers every member); BIP-340 signatures differ by their random aux
      expect({ ...fromEnvelope, sig: undefined }).toEqual({ ...fromText, sig: undefined });
      expect(verifyEvent({ ...fromEnvelope })).toBe(true);
    }
  });
});
