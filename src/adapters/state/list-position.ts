/**
 * A subject's place in the list (GET /v1/anchors, SubjectIndexes.list, ShardedStore.list): its
 * acceptance time (ms, its score in every idx:st: and idx:w: index) and its key, newest first,
 * then the greater key first. Neither changes while the subject moves between statuses, so a
 * cursor (the last position a page gave) means the same in every index and every shard.
 * Keys compare in UTF-8 byte order, the order Redis keeps members of one score in.
 */
export type Position = [ms: number, key: string];

/** Negative when `a` sorts before `b` in UTF-8 byte order (= code point order; JS's `<` compares UTF-16 units). */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // a surrogate starts a code point above U+FFFF: after every other UTF-16 unit in byte order
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Negative when `a` lists before `b`: newer first, then the greater key first. */
export function listOrder(a: Position, b: Position): number {
  return b[0] - a[0] || compareKeys(b[1], a[1]);
}

export function encodeCursor(p: Position): string {
  return Buffer.from(`${p[0]}:${p[1]}`).toString('base64url');
}

/** The position a cursor names (the HTTP layer has checked its form: checkCursor). */
export function decodeCursor(cursor: string): Position {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return [Number(text), ''];
  return [Number(text.slice(0, colon)), text.slice(colon + 1)];
}
