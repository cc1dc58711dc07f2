/**
 * Hostile jobs on the intake queue, added with raw BullMQ (as any issuer in any language
 * could): malformed data, wrong types, oversized documents, broken documents, a job under
 * another name or id, and a conflicting root for a known key. Each is refused with its
 * reason recorded under its job id; the good subjects interleaved with them all confirm,
 * one event each on the relay.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, receiptFields, startDaemon, startRelays, testConfig, waitFor } from '../helpers/harness.js';
import { audit, report, tapRelay, type RelayTap } from '../reliability/audit.js';
import { receiptDoc, workflowDoc } from './documents.js';

const hex = 'ab'.repeat(32);
const MAX_JOB_BYTES = 12 * 1024 * 1024;

interface BadJob {
  label: string;
  data: unknown;
  /** Expected in the recorded reason. */
  reason: RegExp;
  name?: string;
  /** Default: a fresh key of its own. */
  jobId?: string;
}

function withStep(w: Record<string, unknown>, i: number, patch: Record<string, unknown>): Record<string, unknown> {
  const steps = (w.steps as Array<Record<string, unknown>>).map((s, j) => (j === i ? { ...s, ...patch } : s));
  return { ...w, steps };
}

/** [[[...]]] nested `depth` deep. */
function deepValue(depth: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

const bare = (extra: Record<string, unknown>): Record<string, unknown> => ({ subject: 'receipt', receipt_uuid: randomUUID(), output_sha256: hex, ...extra });

const BAD: BadJob[] = [
  // malformed job data
  { label: 'a string', data: 'just a string', reason: /not a receipt, a workflow close or a job timeline/ },
  { label: 'a number', data: 42, reason: /not a receipt, a workflow close or a job timeline/ },
  { label: 'a boolean', data: true, reason: /not a receipt, a workflow close or a job timeline/ },
  { label: 'null', data: null, reason: /not a receipt, a workflow close or a job timeline/ },
  { label: 'an array of junk', data: ['junk', 1, {}, null], reason: /\$\[0\]: expected an object, got a string/ },
  { label: 'an empty array', data: [], reason: /needs at least one entry/ },
  { label: 'an empty object', data: {}, reason: /not a receipt, a workflow close or a job timeline/ },
  { label: 'nested junk', data: { a: { b: [1, 2, { c: null }] } }, reason: /not a receipt/ },
  // wrong types
  { label: 'receipt_uuid a number', data: { subject: 'receipt', receipt_uuid: 12345, output_sha256: hex }, reason: /receipt_uuid: expected a string, got the number 12345/ },
  { label: 'output_sha256 uppercase', data: bare({ output_sha256: hex.toUpperCase() }), reason: /output_sha256: expected 64 lowercase hex/ },
  { label: 'output_sha256 short', data: bare({ output_sha256: 'abc' }), reason: /output_sha256: expected 64 lowercase hex/ },
  { label: 'evidence_byte_length negative', data: bare({ evidence_byte_length: -1 }), reason: /evidence_byte_length: expected a non-negative integer/ },
  { label: 'evidence_byte_length a string', data: bare({ evidence_byte_length: '10' }), reason: /evidence_byte_length: expected a non-negative integer, got a string/ },
  { label: 'evidence_url not a URL', data: bare({ evidence_url: 'not a url' }), reason: /evidence_url: expected an absolute URL/ },
  { label: 'unknown subject', data: { subject: 'nope' }, reason: /subject: expected one of receipt, workflow-close, chain-head/ },
  { label: 'subject an array', data: { subject: ['receipt'] }, reason: /subject: expected one of/ },
  { label: 'step_count 1.5', data: { subject: 'workflow-close', receipt_uuid: randomUUID(), output_sha256: hex, workflow_id: 'w', merkle_root: hex, step_count: 1.5 }, reason: /step_count: expected a positive integer/ },
  { label: 'an unknown member', data: bare({ colour: 'red' }), reason: /colour: unknown member/ },
  { label: 'seq a string', data: withStep(workflowDoc(3), 1, { seq: '2' }), reason: /steps\[1\]\.seq: seq must be an integer/ },
  { label: 'seq 1.5', data: withStep(workflowDoc(3), 0, { seq: 1.5 }), reason: /steps\[0\]\.seq: seq must be an integer/ },
  { label: 'a seq gap', data: withStep(workflowDoc(3), 2, { seq: 4 }), reason: /steps\[2\]\.seq: seq gap: expected 3, found 4/ },
  { label: 'a duplicate receipt_id', data: workflowDoc(3, { stepId: (i) => (i === 2 ? 'r0' : `r${i}`) }), reason: /duplicate receipt_id "r0"/ },
  { label: 'a merkle root that does not match', data: { ...workflowDoc(3), merkle_root: hex }, reason: /merkle_root: does not match the steps/ },
  { label: 'an output hash that does not match', data: { ...receiptDoc(), output_hash: `sha256:${hex}` }, reason: /output_hash: does not match the bytes/ },
  { label: 'non-canonical base64', data: { ...receiptDoc(), canonical_bytes: 'e30' }, reason: /canonical_bytes: not canonical base64/ },
  { label: 'bytes that are not UTF-8', data: (() => { const r = receiptDoc(); const b = Buffer.from([0xff, 0xfe]); return { ...r, canonical_bytes: b.toString('base64'), canonical_byte_length: 2, output_hash: `sha256:${'00'.repeat(32)}` }; })(), reason: /canonical_bytes/ },
  // oversized
  { label: 'a job over maxJobBytes', data: receiptDoc(randomUUID(), { pad: 'x'.repeat(MAX_JOB_BYTES) }), reason: /over the limit maxJobBytes = 12582912/ },
  { label: 'a timeline over maxEntries', data: Array.from({ length: 1001 }, () => ({})), reason: /1001 exceeds the limit maxEntries = 1000/ },
  { label: 'a string over maxStringLength', data: bare({ receipt_uuid: 'x'.repeat(4097) }), reason: /receipt_uuid: 4097 exceeds the limit maxStringLength = 4096/ },
  { label: 'a URL over maxUrlLength', data: bare({ evidence_url: `https://example.com/${'a'.repeat(8200)}` }), reason: /evidence_url: \d+ exceeds the limit maxUrlLength = 8192/ },
  { label: 'an envelope over 16 KiB (non-ASCII receipt)', jobId: '\u4e2d'.repeat(4096), data: bare({ receipt_uuid: '\u4e2d'.repeat(4096), evidence_url: `https://example.com/${'\u00e9'.repeat(8000)}` }), reason: /envelope would be \d+ bytes of canonical JSON, over the limit of 16384/ },
  { label: 'an envelope over 16 KiB (astral workflow close)', jobId: '\u{1f600}'.repeat(2048), data: { subject: 'workflow-close', receipt_uuid: '\u{1f600}'.repeat(2048), workflow_id: '\u{1f600}'.repeat(2048), merkle_version: '\u{1f600}'.repeat(2048), output_sha256: hex, merkle_root: hex, step_count: 1 }, reason: /envelope would be \d+ bytes of canonical JSON, over the limit of 16384/ },
  // two readings, and nesting nothing should walk (issue 13)
  { label: 'a workflow with another receipt inside', data: { ...workflowDoc(3), receipt: receiptDoc() }, reason: /\$: the document could be read two ways: it has its own output_hash, steps, merkle_root, workflow_id and a "receipt" member/ },
  { label: 'a workflow type nested 1,000 deep (deeper fails JSON.stringify in the producer itself)', data: { ...workflowDoc(3), type: deepValue(1000) }, reason: /job data is nested deeper than 64 levels/ },
  // the job itself
  { label: 'another job name', data: receiptFields(), name: 'anchr', reason: /unknown job name "anchr"/ },
];

describe('hostile jobs on the intake queue', () => {
  let relay: DevRelay;
  let tap: RelayTap;
  let daemon: Daemon;
  let issuer: Issuer;

  beforeAll(async () => {
    [relay] = (await startRelays(1)) as [DevRelay];
    tap = tapRelay(relay);
    const config = testConfig({ relays: [relay], overrides: { limits: { maxJobBytes: MAX_JOB_BYTES, maxEntries: 1000 } } });
    daemon = await startDaemon(config);
    issuer = new Issuer(config);
  });
  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await relay?.close();
  });

  it(`refuses ${BAD.length} kinds of bad job, each with its reason, and anchors the good ones around them`, { timeout: 120_000 }, async () => {
    const good = Array.from({ length: BAD.length + 1 }, () => receiptFields());
    const badKeys = BAD.map((b) => b.jobId ?? `bad-${randomUUID()}`);
    // one good subject before and after every bad job
    for (const [i, b] of BAD.entries()) {
      await issuer.enqueue(good[i]!, good[i]!.receipt_uuid);
      await issuer.queue.add(b.name ?? 'anchor', b.data, { jobId: badKeys[i], removeOnComplete: true, removeOnFail: true });
    }
    await issuer.enqueue(good.at(-1)!, good.at(-1)!.receipt_uuid);

    let missing: string[] = [];
    const refused = await waitFor('every bad job refused', async () => {
      const rs = await issuer.store.subjects.getRecords(badKeys);
      missing = BAD.filter((_, i) => rs[i]?.status !== 'rejected').map((b) => b.label);
      return missing.length === 0 ? rs : null;
    }, 60_000, 200).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; not refused: ${missing.join(', ')}`);
    });
    for (const [i, b] of BAD.entries()) {
      expect(refused![i]!.reason, b.label).toMatch(b.reason);
      expect(refused![i]!.reason!.length, b.label).toBeLessThan(2000);
    }
    const goodKeys = good.map((g) => g.receipt_uuid);
    await waitFor('the good subjects confirmed', async () => (await issuer.store.subjects.getRecords(goodKeys)).every((r) => r?.status === 'confirmed'), 60_000, 200);
    const result = await audit('bad-input-jobs', issuer, [...goodKeys, ...badKeys], [tap], { refused: new Set(badKeys) });
    expect(result.refused).toBe(BAD.length);
    expect(relay.eventCount()).toBe(good.length);
    report(result, { kinds: BAD.length });
  });

  it('anchors the largest envelope it accepts as an event that fits the 64 KiB common relays take', { timeout: 60_000 }, async () => {
    // 2,600 CJK characters: 15,600 bytes escaped, just under the envelope limit
    const s = { subject: 'receipt' as const, receipt_uuid: `${randomUUID()}-${'\u4e2d'.repeat(2600)}`, output_sha256: hex };
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    const record = await issuer.store.subjects.getRecord(s.receipt_uuid);
    expect(record!.envelopeCanonical!.length).toBeGreaterThan(15_000);
    expect(record!.envelopeCanonical!.length).toBeLessThanOrEqual(16_384);
    const event = relay.events().find((e) => e.id === record!.nostrEventId);
    expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThan(64 * 1024);
  });

  it('refuses a job whose id is not its subject key, recording why under that id', { timeout: 60_000 }, async () => {
    const s = receiptFields();
    await issuer.enqueue(s, 'someone-else');
    const r = await waitFor('refused', () => issuer.store.subjects.getRecord('someone-else'), 30_000);
    expect(r!.status).toBe('rejected');
    expect(r!.reason).toMatch(/job id "someone-else" is not the subject key/);
    expect(await issuer.store.subjects.getRecord(s.receipt_uuid)).toBeNull();
  });

  it('refuses a conflicting root for a known key, keeping the first anchor and saying so in its history', { timeout: 60_000 }, async () => {
    const s = receiptFields();
    await issuer.enqueue(s, s.receipt_uuid);
    await waitFor('confirmed', async () => (await issuer.store.subjects.getRecord(s.receipt_uuid))?.status === 'confirmed', 30_000);
    const before = await issuer.store.subjects.getRecord(s.receipt_uuid);
    await issuer.enqueue({ ...s, output_sha256: 'cd'.repeat(32) }, s.receipt_uuid);
    const history = await waitFor('conflict recorded', async () => {
      const h = await issuer.store.subjects.history(s.receipt_uuid);
      return h.some((e) => e.event === 'conflict') ? h : null;
    }, 30_000);
    expect(history!.find((e) => e.event === 'conflict')?.reason).toMatch(new RegExp(`conflict: subject ${s.receipt_uuid} is already anchored with another root \\(envelope digest ${before!.digest}\\)`));
    const after = await issuer.store.subjects.getRecord(s.receipt_uuid);
    expect(after).toMatchObject({ status: 'confirmed', digest: before!.digest, envelopeCanonical: before!.envelopeCanonical });
    expect(relay.events().filter((e) => e.tags.some((t) => t[0] === 'x' && t[1] === before!.digest))).toHaveLength(1);
    expect(relay.events().filter((e) => e.content.includes('cd'.repeat(32)))).toHaveLength(0);
  });

  it('takes a 100,000-step workflow (at maxSteps) and refuses 100,001 steps, both without stalling the queue', { timeout: 120_000 }, async () => {
    const stepId = (i: number): string => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const ok = workflowDoc(100_000, { stepId });
    const over: Record<string, unknown> = { ...workflowDoc(2), steps: [...(ok.steps as unknown[]), { seq: 100_001, receipt_id: 'one-more' }] };
    const okKey = ok.receipt_id as string;
    const overKey = over.receipt_id as string;
    const bytes = Buffer.byteLength(JSON.stringify(ok));
    const t0 = Date.now();
    await issuer.enqueue(ok, okKey);
    const accepted = await waitFor('100,000 steps accepted', () => issuer.store.subjects.getRecord(okKey), 60_000, 50);
    const acceptMs = Date.now() - t0;
    expect(accepted!.status).not.toBe('rejected');
    expect(JSON.parse(accepted!.envelopeCanonical!)).toMatchObject({ subject: 'workflow-close', step_count: 100_000, merkle_root: ok.merkle_root });
    const t1 = Date.now();
    await issuer.enqueue(over, overKey);
    const refused = await waitFor('100,001 steps refused', () => issuer.store.subjects.getRecord(overKey), 60_000, 50);
    const refuseMs = Date.now() - t1;
    expect(refused).toMatchObject({ status: 'rejected', reason: 'steps: 100001 exceeds the limit maxSteps = 100000' });
    await waitFor('the 100,000-step close confirmed', async () => (await issuer.store.subjects.getRecord(okKey))?.status === 'confirmed', 60_000);
    // measured, not asserted: the machine is shared
    console.log(`workflow-100k: ${bytes} bytes of JSON accepted in ${acceptMs} ms (queue to record); 100,001 steps refused in ${refuseMs} ms`);
  });
});
