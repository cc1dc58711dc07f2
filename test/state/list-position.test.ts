/**
 * The list's order of keys (src/adapters/state/list-position.ts) is UTF-8 byte order, the
 * order Redis keeps members of one score in, not JS's UTF-16 order; cursors carry any key.
 */
import { describe, expect, it } from 'vitest';
import { compareKeys, decodeCursor, encodeCursor, listOrder, type Position } from '../../src/adapters/state/list-position.js';

const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('list positions', () => {
  it('compareKeys agrees with a byte comparison of the UTF-8, ASCII to astral planes', () => {
    const units = ['a', 'z', ':', 'é', '\u07ff', '\u0800', '\uD7FF', '\uE000', '\uFFFD', '\uFFFF', '\u{10000}', '\u{1F600}', '\u{10FFFF}'];
    const keys: string[] = [''];
    for (const x of units) for (const y of ['', ...units]) keys.push(x + y);
    for (const a of keys) for (const b of keys) expect(Math.sign(compareKeys(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(Math.sign(byBytes(a, b)));
  });

  it('listOrder: newer first, then the greater key first', () => {
    const items: Position[] = [[1, 'a'], [2, 'a'], [1, '\u{1F600}'], [1, '\uFFFD'], [2, 'b']];
    expect([...items].sort(listOrder)).toEqual([[2, 'b'], [2, 'a'], [1, '\u{1F600}'], [1, '\uFFFD'], [1, 'a']]);
  });

  it('a cursor gives back its position, a key with colons or beyond ASCII included', () => {
    for (const p of [[1_700_000_000_000, 'k'], [0, 'a:b:c'], [5, '\u{1F600}:\uFFFD']] as Position[]) expect(decodeCursor(encodeCursor(p))).toEqual(p);
  });
});
