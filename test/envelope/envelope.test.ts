import { describe, expect, it } from 'vitest';
import {
  buildEnvelope, checkAnchoredAt, claimsOf, ENVELOPE_TYPE, envelopeCanonical, envelopeDigest, formatAnchoredAt,
  parseEnvelope, sameRoot, subjectKey, type SubjectClaims,
} from '../../src/core/envelope/envelope.js';
import { claimsFromDocument } from '../../src/core/envelope/from-document.js';
import { inputErrorOf, loadFixture } from '../fixtures/index.js';

const HEX = 'ab'.repeat(32);
const AT = '2026-01-01T00:00:00Z';
const receiptClaims: SubjectClaims = { subject: 'receipt', receipt_uuid: 'r-1', output_sha256: HEX };
const workflowClaims: SubjectClaims = {
  subject: 'workflow-close', receipt_uuid: 'w-1', output_sha256: HEX, workflow_id: 'wf-1', merkle_root: HEX, merkle_version: 'receipt-id-v0', step_count: 12,
};
const chainClaims: SubjectClaims = { subject: 'chain-head', job_id: 'job-1', final_entry_digest: HEX, entry_count: 3 };

describe('buildEnvelope', () => {
  it('has exactly the SPEC section 3 members for each subject', () => {
    expect(Object.keys(buildEnvelope(receiptClaims, AT))).toEqual(['anchored_at', 'output_sha256', 'receipt_uuid', 'subject', 'type']);
    expect(Object.keys(buildEnvelope(workflowClaims, AT))).toEqual([
      'anchored_at', 'merkle_root', 'merkle_version', 'output_sha256', 'receipt_uuid', 'step_count', 'subject', 'type', 'workflow_id',
    ]);
    expect(Object.keys(buildEnvelope(chainClaims, AT))).toEqual(['anchored_at', 'entry_count', 'final_entry_digest', 'job_id', 'subject', 'type']);
    expect(buildEnvelope(chainClaims, AT).type).toBe('zambo-receipt-anchor/1');
  });

  it('carries receipt evidence only when given, never as null', () => {
    const env = buildEnvelope({ ...receiptClaims, evidence_sha256: HEX, evidence_byte_length: 10, evidence_url: 'https://e.test/x' }, AT);
    expect(env).toMatchObject({ evidence_sha256: HEX, evidence_byte_length: 10, evidence_url: 'https://e.test/x' });
    const canonical = envelopeCanonical(buildEnvelope({ ...receiptClaims, evidence_url: undefined } as SubjectClaims, AT));
    expect(canonical).not.toContain('evidence');
    expect(canonical).not.toContain('null');
  });

  it('re-checks the claims it is given', () => {
    expect(inputErrorOf(() => buildEnvelope({ ...chainClaims, entry_count: 0 }, AT)).field).toBe('entry_count');
    expect(inputErrorOf(() => buildEnvelope({ ...receiptClaims, merkle_root: HEX } as unknown as SubjectClaims, AT)).field).toBe('merkle_root');
  });

  it('stamps a Date as RFC 3339 UTC, whole seconds, Z', () => {
    expect(buildEnvelope(receiptClaims, new Date('2026-03-04T05:06:07.999Z')).anchored_at).toBe('2026-03-04T05:06:07Z');
    expect(formatAnchoredAt(new Date(Date.UTC(2026, 0, 1)))).toBe(AT);
    expect(inputErrorOf(() => formatAnchoredAt(new Date('nonsense'))).field).toBe('anchored_at');
  });

  it.each([
    '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00+00:00', '2026-01-01t00:00:00z', '2026-01-01 00:00:00Z',
    '2026-02-30T00:00:00Z', '2026-12-31T23:59:60Z', '2026-01-01T24:00:00Z', '26-01-01T00:00:00Z', '',
  ])('refuses anchored_at %j', (at) => {
    const err = inputErrorOf(() => buildEnvelope(receiptClaims, at));
    expect(err.field).toBe('anchored_at');
  });

  it('accepts a leap day and the year 0000', () => {
    expect(checkAnchoredAt('2024-02-29T12:00:00Z')).toBe('2024-02-29T12:00:00Z');
    expect(checkAnchoredAt('0000-02-29T00:00:00Z')).toBe('0000-02-29T00:00:00Z');
  });
});

describe('canonical bytes and digest', () => {
  it('digest is SHA-256 of the canonical text (pinned against Python)', () => {
    const claims = claimsFromDocument(loadFixture('receipt-minimal'));
    const env = buildEnvelope(claims, AT);
    expect(envelopeCanonical(env)).toBe('{"anchored_at":"2026-01-01T00:00:00Z","output_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","receipt_uuid":"00000000-0000-4000-8000-000000000001","subject":"receipt","type":"zambo-receipt-anchor/1"}');
    // python3: hashlib.sha256(json.dumps(env, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    expect(envelopeDigest(env).toString('hex')).toBe('bda6f864c6aea27ba7e9846d47c9bd0985f01fb5b6505c8057e67a42404fa5ee');
  });

  it('escapes non-ASCII identifiers as Python does', () => {
    const env = buildEnvelope({ subject: 'chain-head', job_id: 'job-\u00e9\u{1f600}', final_entry_digest: '79b1e2e26842e7a49f7d0c0606e795c08d84d3877bb95988492601b7451074b0', entry_count: 5 }, AT);
    expect(envelopeCanonical(env)).toContain('"job_id":"job-\\u00e9\\ud83d\\ude00"');
    expect(envelopeDigest(env).toString('hex')).toBe('063ea64607e1fa38cff256941eb3867d32b70c63c32bb4874b83a0a6cde1fe48');
  });
});

describe('parseEnvelope (untrusted proofs)', () => {
  it('round-trips every subject kind', () => {
    for (const claims of [receiptClaims, workflowClaims, chainClaims]) {
      const env = buildEnvelope(claims, AT);
      const parsed = parseEnvelope(JSON.parse(JSON.stringify(env)));
      expect(parsed).toEqual(env);
      expect(envelopeCanonical(parsed)).toBe(envelopeCanonical(env));
    }
  });

  const env = () => JSON.parse(JSON.stringify(buildEnvelope(workflowClaims, AT))) as Record<string, unknown>;

  it.each([
    ['an unknown member', (e: Record<string, unknown>) => { e.extra = 1; }, 'extra'],
    ['a member of another subject', (e: Record<string, unknown>) => { e.job_id = 'j'; }, 'job_id'],
    ['evidence on a workflow close', (e: Record<string, unknown>) => { e.evidence_url = 'https://x.test/'; }, 'evidence_url'],
    ['a missing member', (e: Record<string, unknown>) => { delete e.step_count; }, 'step_count'],
    ['a missing merkle_version', (e: Record<string, unknown>) => { delete e.merkle_version; }, 'merkle_version'],
    ['a null member', (e: Record<string, unknown>) => { e.workflow_id = null; }, 'workflow_id'],
    ['the wrong type string', (e: Record<string, unknown>) => { e.type = 'zambo-receipt-anchor/2'; }, 'type'],
    ['a missing type', (e: Record<string, unknown>) => { delete e.type; }, 'type'],
    ['a missing anchored_at', (e: Record<string, unknown>) => { delete e.anchored_at; }, 'anchored_at'],
    ['fractional seconds', (e: Record<string, unknown>) => { e.anchored_at = '2026-01-01T00:00:00.5Z'; }, 'anchored_at'],
    ['a prefixed root', (e: Record<string, unknown>) => { e.merkle_root = `sha256:${HEX}`; }, 'merkle_root'],
    ['a string count', (e: Record<string, unknown>) => { e.step_count = '12'; }, 'step_count'],
    ['an unknown subject', (e: Record<string, unknown>) => { e.subject = 'batch'; }, 'subject'],
  ])('refuses %s', (_name, mutate, field) => {
    const e = env();
    mutate(e);
    expect(inputErrorOf(() => parseEnvelope(e)).field).toBe(field);
  });

  it('refuses a non-object', () => {
    expect(inputErrorOf(() => parseEnvelope([ENVELOPE_TYPE])).field).toBe('envelope');
  });
});

describe('subject keys and idempotency', () => {
  it('keys receipts and workflow closes by receipt_uuid, chain heads by job_id', () => {
    expect(subjectKey(receiptClaims)).toBe('r-1');
    expect(subjectKey(buildEnvelope(workflowClaims, AT))).toBe('w-1');
    expect(subjectKey(chainClaims)).toBe('job-1');
  });

  it('sameRoot ignores anchored_at and member order, and sees every other member', () => {
    const a = buildEnvelope(workflowClaims, AT);
    const b = buildEnvelope({ ...workflowClaims }, '2027-06-01T12:00:00Z');
    expect(sameRoot(a, b)).toBe(true);
    expect(sameRoot(a, workflowClaims)).toBe(true);
    expect(claimsOf(a)).toEqual(workflowClaims);
    for (const [key, value] of Object.entries({ step_count: 11, merkle_root: 'cd'.repeat(32), merkle_version: 'seq-output-v1', output_sha256: 'ef'.repeat(32), workflow_id: 'x' })) {
      expect(sameRoot(a, { ...workflowClaims, [key]: value } as SubjectClaims)).toBe(false);
    }
    expect(sameRoot(receiptClaims, { ...receiptClaims, evidence_url: 'https://e.test/' })).toBe(false);
  });
});
