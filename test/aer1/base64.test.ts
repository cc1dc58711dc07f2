import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeBase64Strict, decodeUtf8Strict, firstInvalidUtf8, isCanonicalBase64 } from '../../src/core/aer1/base64.js';
import { InputError } from '../../src/core/errors/errors.js';

function errorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (err) {
    if (err instanceof InputError) return err;
    throw err;
  }
  throw new Error('expected an InputError');
}

describe('strict base64', () => {
  it.each([
    ['', ''],
    ['e30=', '{}'],
    ['YQ==', 'a'],
    ['YWI=', 'ab'],
    ['YWJj', 'abc'],
    ['++//', Buffer.from([0xfb, 0xef, 0xff]).toString('latin1')],
  ])('decodes canonical %j', (text, expected) => {
    expect(decodeBase64Strict(text, 'canonical_bytes').toString('latin1')).toBe(expected);
  });

  it.each([
    ['e30', 'not a multiple of 4'],
    ['e30==', 'padding'],
    ['e3=0', "misplaced padding '=' at offset 2"],
    ['YQ===', "misplaced padding '=' at offset 2"],
    ['e3 0=', 'whitespace at offset 2'],
    ['e30=\n', 'whitespace at offset 4'],
    ['e30-', "'-' at offset 3 (url-safe alphabet)"],
    ['__8=', "'_' at offset 0 (url-safe alphabet)"],
    ['e31=', "non-zero pad bits in '1' at offset 2"],
    ['YR==', "non-zero pad bits in 'R' at offset 1"],
    ['e3*=', 'U+002A at offset 2'],
  ])('rejects %j naming the problem', (text, reason) => {
    const err = errorOf(() => decodeBase64Strict(text, 'canonical_bytes'));
    expect(err.code).toBe('bad_base64');
    expect(err.field).toBe('canonical_bytes');
    expect(err.message).toContain(reason);
  });

  it('accepts exactly what re-encodes to itself (property)', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n'.split('');
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 12 }), (s) => {
        const reencodes = /^[A-Za-z0-9+/=]*$/.test(s) && Buffer.from(s, 'base64').toString('base64') === s;
        expect(isCanonicalBase64(s)).toBe(reencodes);
      }),
      { numRuns: 5000 },
    );
  });

  it('round-trips every byte string (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64');
        expect(decodeBase64Strict(text, 'f').equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });
});

describe('strict UTF-8', () => {
  it('decodes well-formed text, astral characters and a BOM unchanged', () => {
    const text = '\ufeffa\u00e9\u20ac\u{1f600}';
    expect(decodeUtf8Strict(Buffer.from(text, 'utf8'), 'f')).toBe(text);
  });

  it.each([
    ['lone continuation', [0x61, 0x80], 1],
    ['0xff', [0xff], 0],
    ['overlong NUL', [0xc0, 0x80], 0],
    ['overlong 3-byte', [0xe0, 0x80, 0x80], 0],
    ['UTF-16 surrogate', [0x61, 0x62, 0xed, 0xa0, 0x80], 2],
    ['above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['truncated sequence', [0xe2, 0x82], 0],
  ])('rejects %s with its offset', (_name, bytes, offset) => {
    const err = errorOf(() => decodeUtf8Strict(Uint8Array.from(bytes), 'canonical_bytes'));
    expect(err.code).toBe('bad_utf8');
    expect(err.field).toBe('canonical_bytes');
    expect(err.message).toContain(`at offset ${offset}`);
  });

  it('locates an error exactly when the fatal TextDecoder refuses (property)', () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x80, 0xbf, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0x9f, 0xa0));
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 12 }), (arr) => {
        const bytes = Uint8Array.from(arr);
        let ok = true;
        try {
          decoder.decode(bytes);
        } catch {
          ok = false;
        }
        expect(firstInvalidUtf8(bytes) === -1).toBe(ok);
      }),
      { numRuns: 5000 },
    );
  });
});
