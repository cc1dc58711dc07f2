import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  constructionRoot, DEFAULT_MERKLE_VERSION, MERKLE_CONSTRUCTIONS, merkleConstruction, merkleRoot, receiptIdV0Root,
} from '../../src/core/aer1/merkle.js';
import { parseWorkflowClose } from '../../src/core/aer1/workflow.js';
import { InputError } from '../../src/core/errors/errors.js';
import { loadFixture, type MerkleVector, type WorkflowExample } from '../fixtures/index.js';

const h = (data: string | Buffer) => createHash('sha256').update(data).digest();
const vectors = loadFixture<{ construction: string; vectors: MerkleVector[] }>('aer1-merkle-receipt-id-v0');

describe('receipt-id-v0 vectors', () => {
  it('is the construction the vector file names', () => {
    expect(vectors.construction).toBe('receipt-id-v0');
    expect(vectors.vectors.length).toBe(5);
  });

  for (const v of vectors.vectors.filter((x) => x.verdict === undefined)) {
    it(`recomputes the root of ${v.name}`, () => {
      expect(receiptIdV0Root(v.receipt_ids)).toBe(v.root);
    });
  }

  it('rejects the duplicate-last-id vector although its raw root collides with the 5-step root', () => {
    const dup = vectors.vectors.find((x) => x.name === 'duplicate-last-id-must-be-rejected')!;
    expect(dup.verdict).toMatch(/^invalid/);
    // The collision the rule guards against:
    expect(receiptIdV0Root(dup.receipt_ids)).toBe(dup.root);
    const wf = loadFixture<WorkflowExample>('workflow-receipt-example');
    wf.steps = dup.receipt_ids.map((id, i) => ({ seq: i + 1, receipt_id: id }));
    wf.merkle_root = dup.root;
    let err: unknown;
    try {
      parseWorkflowClose(wf);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).code).toBe('duplicate_receipt_id');
    expect((err as InputError).field).toBe('steps[5].receipt_id');
    expect((err as InputError).message).toContain('first at steps[4]');
  });
});

describe('Merkle tree shape', () => {
  const a = h('a');
  const b = h('b');
  const c = h('c');

  it('a single leaf is the root', () => {
    expect(merkleRoot([a]).equals(a)).toBe(true);
  });

  it('parents are SHA-256(left || right) with no prefix byte', () => {
    expect(merkleRoot([a, b]).equals(h(Buffer.concat([a, b])))).toBe(true);
  });

  it('pairs an odd node with itself at every level', () => {
    const ab = h(Buffer.concat([a, b]));
    const cc = h(Buffer.concat([c, c]));
    expect(merkleRoot([a, b, c]).equals(h(Buffer.concat([ab, cc])))).toBe(true);
  });

  it('refuses an empty tree', () => {
    expect(() => merkleRoot([])).toThrow(InputError);
  });
});

describe('construction registry', () => {
  it('uses receipt-id-v0 when merkle_version is absent', () => {
    expect(DEFAULT_MERKLE_VERSION).toBe('receipt-id-v0');
    expect(merkleConstruction(undefined)?.name).toBe('receipt-id-v0');
  });

  it('marks only receipt-id-v0 as confirmed', () => {
    expect([...MERKLE_CONSTRUCTIONS.values()].map((c) => [c.name, c.confirmed])).toEqual([
      ['receipt-id-v0', true],
      ['seq-output-v1', false],
    ]);
  });

  it('knows no other version', () => {
    expect(merkleConstruction('receipt-id-v1')).toBeUndefined();
    expect(merkleConstruction('')).toBeUndefined();
  });

  it('seq-output-v1 leaf is SHA-256 of canonical {"output_hash","seq"} (the documented preimage)', () => {
    const hash = '11c3a071051a42cbf5cf4da60a7577b1dffeb0419e6dd8a258b19c4c0d0d108e';
    const c = merkleConstruction('seq-output-v1')!;
    const leaf = c.leaf({ seq: 1, receiptId: 'ignored', receiptHash: hash, field: 'steps[0]' });
    expect(leaf.equals(h(`{"output_hash":"${hash}","seq":1}`))).toBe(true);
    // Two steps: parent rule shared with receipt-id-v0.
    const leaf2 = h(`{"output_hash":"${hash}","seq":2}`);
    const root = constructionRoot(c, [
      { seq: 1, receiptId: 'x', receiptHash: hash, field: 'steps[0]' },
      { seq: 2, receiptId: 'y', receiptHash: hash, field: 'steps[1]' },
    ]);
    expect(root).toBe(h(Buffer.concat([leaf, leaf2])).toString('hex'));
  });

  it('seq-output-v1 names the step whose receipt_hash is missing', () => {
    const c = merkleConstruction('seq-output-v1')!;
    expect(() => c.leaf({ seq: 3, receiptId: 'x', receiptHash: undefined, field: 'steps[2]' })).toThrow('steps[2].receipt_hash');
  });
});
