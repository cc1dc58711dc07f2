import { describe, expect, it } from 'vitest';
import { canonicalBytes, canonicalJson, canonicalString } from '../../src/core/aer1/canonical-json.js';
import { InputError } from '../../src/core/errors/errors.js';

describe('canonical JSON (Python json.dumps sort_keys, compact, ensure_ascii)', () => {
  it('sorts keys and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: [1, { d: true, c: null }], '': 'x' })).toBe('{"":"x","a":[1,{"c":null,"d":true}],"b":1}');
  });

  it('sorts keys by code point, not UTF-16 unit (astral after U+FFFF)', () => {
    expect(canonicalJson({ '\u{1f600}': 1, '\uffff': 2, '\ue000': 3, a: 4 })).toBe('{"a":4,"\\ue000":3,"\\uffff":2,"\\ud83d\\ude00":1}');
  });

  it('uses the short escapes and lowercase \\u00XX for other controls and U+007F', () => {
    expect(canonicalString('"\\\b\t\n\f\r\u0000\u001f\u007f/')).toBe('"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001f\\u007f/"');
  });

  it('escapes non-ASCII as \\uXXXX, astral characters as surrogate pairs, lone surrogates as themselves', () => {
    expect(canonicalString('é€\u{1f600}\ud800\u2028')).toBe('"\\u00e9\\u20ac\\ud83d\\ude00\\ud800\\u2028"');
  });

  it('writes integers without a fraction and floats as Python repr', () => {
    expect(canonicalJson([0, -0, 1, -5, 2 ** 53 - 1, 1e20, 1e21, 0.1, 1.5, -2.5e-7, 1e-4, 1.2345e-5, 5e-324, 1.7976931348623157e308]))
      .toBe('[0,0,1,-5,9007199254740991,100000000000000000000,1e+21,0.1,1.5,-2.5e-07,0.0001,1.2345e-05,5e-324,1.7976931348623157e+308]');
  });

  it('leaves out undefined members and yields ASCII bytes', () => {
    expect(canonicalJson({ a: undefined, b: 'é' })).toBe('{"b":"\\u00e9"}');
    expect(canonicalBytes({ b: 'é' }).toString('latin1')).toBe('{"b":"\\u00e9"}');
  });

  it('refuses values JSON cannot carry', () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(InputError);
    expect(() => canonicalJson([Infinity])).toThrow(/\[0\]/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(InputError);
  });
});
