/**
 * Structural mutations of a JSON document for fuzzing: pick any node (by index into a
 * depth-first list of paths) and replace, delete, duplicate, swap, or edit it slightly.
 */
import fc from 'fast-check';

export type JsonPath = Array<string | number>;

export function paths(value: unknown, base: JsonPath = [], out: JsonPath[] = []): JsonPath[] {
  out.push(base);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...base, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...base, k], out);
  return out;
}

function get(value: unknown, path: JsonPath): unknown {
  let v = value;
  for (const p of path) v = (v as Record<string | number, unknown>)[p];
  return v;
}

export interface JsonMutation {
  node: number;
  op: 'replace' | 'delete' | 'duplicate' | 'swap' | 'editString' | 'editNumber' | 'addMember';
  value: unknown;
  n: number;
}

export const jsonMutation: fc.Arbitrary<JsonMutation> = fc.record({
  node: fc.nat(100_000),
  op: fc.constantFrom('replace', 'delete', 'duplicate', 'swap', 'editString', 'editNumber', 'addMember'),
  value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(null, 0, -1, 1.5, 2 ** 53, '', 'x', '\ud800', [], {}, true)),
  n: fc.nat(1000),
});

function editString(s: string, n: number): string {
  if (s.length === 0) return 'x';
  const i = n % s.length;
  const c = s.charCodeAt(i);
  const choices = [String.fromCharCode(c ^ 1), s[i]!.toUpperCase() === s[i] ? s[i]!.toLowerCase() : s[i]!.toUpperCase(), '', s[i]! + s[i]!];
  return s.slice(0, i) + choices[n % choices.length]! + s.slice(i + 1);
}

/** A mutated deep copy of `doc` (the original is untouched). */
export function mutateJson<T>(doc: T, m: JsonMutation): T {
  const copy = JSON.parse(JSON.stringify(doc)) as T;
  const all = paths(copy);
  const path = all[m.node % all.length]!;
  if (path.length === 0) return (m.op === 'replace' ? m.value : copy) as T;
  const parent = get(copy, path.slice(0, -1)) as Record<string | number, unknown> | unknown[];
  const key = path[path.length - 1]!;
  const cur = (parent as Record<string | number, unknown>)[key];
  const set = (v: unknown): void => {
    (parent as Record<string | number, unknown>)[key] = v;
  };
  switch (m.op) {
    case 'replace':
      set(m.value);
      break;
    case 'delete':
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete (parent as Record<string, unknown>)[key as string];
      break;
    case 'duplicate':
      if (Array.isArray(parent)) parent.splice(key as number, 0, JSON.parse(JSON.stringify(cur)));
      else (parent as Record<string, unknown>)[`${String(key)}_`] = cur;
      break;
    case 'swap':
      if (Array.isArray(parent) && parent.length > 1) {
        const j = (m.n % (parent.length - 1) + (key as number) + 1) % parent.length;
        [parent[key as number], parent[j]] = [parent[j], parent[key as number]];
      } else set(m.value);
      break;
    case 'editString':
      set(typeof cur === 'string' ? editString(cur, m.n) : m.value);
      break;
    case 'editNumber':
      set(typeof cur === 'number' ? [cur + 1, cur - 1, cur * 2, -cur, cur + 0.5, String(cur)][m.n % 6] : m.value);
      break;
    case 'addMember':
      if (cur !== null && typeof cur === 'object' && !Array.isArray(cur)) (cur as Record<string, unknown>)[`m${m.n}`] = m.value;
      else set(m.value);
      break;
  }
  return copy;
}
