import { describe, expect, it } from 'vitest';
import { checkReceipt, parseReceipt, recomputeReceipt } from '../../src/core/aer1/receipt.js';
import { inputErrorOf, loadFixture } from '../fixtures/index.js';

const minimal = () => loadFixture('receipt-minimal');
const MINIMAL_HASH = '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';

describe('the minimal receipt', () => {
  it('recomputes its output hash from canonical_bytes', () => {
    const r = parseReceipt(minimal());
    expect(r.id).toBe('00000000-0000-4000-8000-000000000001');
    expect(checkReceipt(r)).toEqual({ outputHash: MINIMAL_HASH, byteLength: 2, outputHashMatches: true, byteLengthMatches: true });
  });

  it('reads the bare, {"receipt": ...} and MCP _receipt shapes alike', () => {
    const bare = parseReceipt(minimal());
    const wrapped = parseReceipt({ receipt: minimal() });
    const mcp = parseReceipt({ content: [{ type: 'text', text: '{}' }], _receipt: minimal() });
    expect([bare.shape, wrapped.shape, mcp.shape]).toEqual(['bare', 'wrapped', 'mcp']);
    for (const r of [bare, wrapped, mcp]) {
      expect(r.id).toBe(bare.id);
      expect(checkReceipt(r).outputHash).toBe(MINIMAL_HASH);
    }
  });

  it('accepts an output_hash without the sha256: prefix', () => {
    const doc = minimal();
    doc.output_hash = MINIMAL_HASH;
    expect(recomputeReceipt(parseReceipt(doc)).outputHashMatches).toBe(true);
  });
});

describe('bad receipts', () => {
  it('refuses an output_hash that does not match the bytes', () => {
    const doc = minimal();
    doc.canonical_bytes = 'W10=';
    doc.canonical_byte_length = 2;
    const err = inputErrorOf(() => checkReceipt(parseReceipt(doc)));
    expect(err.code).toBe('output_hash_mismatch');
    expect(err.field).toBe('output_hash');
  });

  it('refuses a canonical_byte_length that does not match the bytes', () => {
    const doc = minimal();
    doc.canonical_byte_length = 3;
    const err = inputErrorOf(() => checkReceipt(parseReceipt(doc)));
    expect(err.code).toBe('byte_length_mismatch');
    expect(err.field).toBe('canonical_byte_length');
  });

  it.each([['e30'], ['e31='], ['e30=\n'], ['e3-=']])('refuses non-canonical base64 %j', (text) => {
    const doc = minimal();
    doc.canonical_bytes = text;
    const err = inputErrorOf(() => checkReceipt(parseReceipt({ receipt: doc })));
    expect(err.code).toBe('bad_base64');
    expect(err.field).toBe('receipt.canonical_bytes');
  });

  it('refuses bytes that are not UTF-8', () => {
    const doc = minimal();
    doc.canonical_bytes = Buffer.from([0x7b, 0xc3, 0x28, 0x7d]).toString('base64');
    const err = inputErrorOf(() => checkReceipt(parseReceipt(doc)));
    expect(err.code).toBe('bad_utf8');
    expect(err.message).toContain('offset 1');
  });

  it('refuses a receipt without canonical_bytes, naming the field', () => {
    const doc = minimal();
    delete doc.canonical_bytes;
    const err = inputErrorOf(() => parseReceipt({ _receipt: doc }));
    expect(err.code).toBe('missing');
    expect(err.field).toBe('_receipt.canonical_bytes');
  });

  it('refuses a receipt without id or output_hash', () => {
    const noId = minimal();
    delete noId.id;
    expect(inputErrorOf(() => parseReceipt(noId)).field).toBe('id');
    const noHash = minimal();
    delete noHash.output_hash;
    expect(inputErrorOf(() => parseReceipt(noHash)).field).toBe('output_hash');
  });

  it('refuses a hash algorithm other than sha256 and a malformed output_hash', () => {
    const algo = minimal();
    algo.hash_algorithm = 'sha512';
    expect(inputErrorOf(() => parseReceipt(algo)).field).toBe('hash_algorithm');
    const bad = minimal();
    bad.output_hash = 'sha256:xyz';
    expect(inputErrorOf(() => parseReceipt(bad)).code).toBe('bad_digest');
  });

  it('refuses an MCP _receipt that is not an object', () => {
    expect(inputErrorOf(() => parseReceipt({ _receipt: 'x' })).field).toBe('_receipt');
  });

  it('names the maxCanonicalBytes limit', () => {
    const doc = minimal();
    doc.canonical_bytes = Buffer.alloc(300, 0x20).toString('base64');
    const err = inputErrorOf(() => parseReceipt(doc, { limits: { maxCanonicalBytes: 100 } }));
    expect(err.code).toBe('limit_exceeded');
    expect(err.message).toContain('maxCanonicalBytes = 100');
  });
});
