/**
 * Fuzzing the receipt, workflow-close and job-timeline parsers (src/core/aer1/document.ts):
 * arbitrary JSON and structural mutations of valid documents only ever raise typed errors
 * (Aer1Error), stay bounded in time, and a mutant accepted with the original's claims has
 * the original's bound content — the receipt's id and bytes, the close's ids, digests and
 * step receipt_ids in order, every timeline entry's digest members. A change to anything the
 * anchor binds never passes for the original root.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/aer1/canonical-json.js';
import { claimsFromInput } from '../../src/core/envelope/from-document.js';
import { sha256Hex } from '../../src/core/aer1/hash.js';
import { Aer1Error } from '../../src/core/errors/errors.js';
import type { SubjectClaims } from '../../src/core/envelope/claims.js';
import { loadFixture } from '../fixtures/index.js';
import { receiptDoc, timelineDoc, workflowDoc, type Json } from '../security/documents.js';
import { jsonMutation, mutateJson } from './json-mutation.js';
import { fuzzParams, timed } from './settings.js';

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const bareHex = (v: unknown): string => String(v).replace(/^sha256:/, '').toLowerCase();
const bytesHash = (b64: unknown): string => sha256Hex(Buffer.from(String(b64), 'base64'));

/** What the anchor binds, read from the raw document independently of the parser. */
function bound(doc: unknown, claims: SubjectClaims): string {
  if (claims.subject === 'chain-head') {
    const list = (Array.isArray(doc) ? doc : (doc as Json).entries) as Json[];
    return canonicalJson(list.map((e) => [e.seq, e.job_id, e.id, e.tool, e.provenance_class, e.prev_digest, e.close === true, bytesHash(e.canonical_bytes)]));
  }
  const d = doc as Json;
  const r = isObj(d.receipt) ? d.receipt : isObj(d._receipt) ? d._receipt : d;
  if (claims.subject === 'receipt') return canonicalJson([r.id, bytesHash(r.canonical_bytes)]);
  return canonicalJson([r.receipt_id, r.workflow_id, bareHex(r.output_hash), bareHex(r.merkle_root), r.merkle_version ?? 'receipt-id-v0', (r.steps as Json[]).map((s) => s.receipt_id)]);
}

const workflowFixture = loadFixture('workflow-receipt-example');
const chainFixture = loadFixture<{ entries: Json[] }>('aer1-chain-v07');
const BASES: Array<{ name: string; doc: unknown }> = [
  { name: 'receipt', doc: loadFixture('receipt-minimal') },
  { name: 'receipt (wrapped)', doc: { receipt: receiptDoc() } },
  { name: 'receipt (MCP)', doc: { content: [], _receipt: receiptDoc() } },
  { name: 'workflow close (vector)', doc: workflowFixture },
  { name: 'workflow close (built)', doc: workflowDoc(7, { text: 'ok' }) },
  { name: 'job timeline (vector)', doc: chainFixture.entries },
  { name: 'job timeline ({entries})', doc: { entries: timelineDoc(4) } },
];

function claimsOrNull(doc: unknown): SubjectClaims | null {
  try {
    return claimsFromInput(doc);
  } catch (err) {
    if (err instanceof Aer1Error) return null;
    throw err;
  }
}

describe('the document parsers under fuzzing', () => {
  const originals = BASES.map((b) => {
    const claims = claimsFromInput(b.doc);
    return { claims, text: canonicalJson(claims), bound: bound(b.doc, claims) };
  });

  it('arbitrary JSON: only typed errors', () => {
    let slowest = 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), (v) => {
        const { ms } = timed(() => claimsOrNull(v));
        slowest = Math.max(slowest, ms);
      }),
      fuzzParams(3000),
    );
    console.log(`fuzz documents arbitrary: slowest parse ${slowest.toFixed(1)} ms`);
  });

  it('mutated valid documents: only typed errors; accepted with the original claims ⇒ the bound content is unchanged', () => {
    const counts = { refused: 0, otherClaims: 0, sameClaims: 0 };
    let slowest = 0;
    fc.assert(
      fc.property(fc.nat(BASES.length - 1), fc.array(jsonMutation, { minLength: 1, maxLength: 3 }), (i, mutations) => {
        const mutant = mutations.reduce<unknown>((v, m) => mutateJson(v, m), BASES[i]!.doc);
        const { value: claims, ms } = timed(() => claimsOrNull(mutant));
        slowest = Math.max(slowest, ms);
        if (!claims) {
          counts.refused++;
          return;
        }
        if (canonicalJson(claims) !== originals[i]!.text) {
          counts.otherClaims++;
          return;
        }
        counts.sameClaims++;
        expect(bound(mutant, claims), `${BASES[i]!.name}: ${JSON.stringify(mutations)}`).toBe(originals[i]!.bound);
      }),
      fuzzParams(6000),
    );
    expect(counts.refused).toBeGreaterThan(0);
    expect(counts.sameClaims).toBeGreaterThan(0);
    console.log(`fuzz documents mutations: ${JSON.stringify(counts)}, slowest parse ${slowest.toFixed(1)} ms`);
  });
});
