/**
 * Guards for untrusted JSON before anything walks it: a nesting-depth limit checked
 * without recursion (on the text before parsing, or on a value already parsed), and a
 * bounded way to quote an untrusted value in a message. Every recursive walk in the
 * project (canonical JSON, proof and document parsers) runs only on values that passed.
 */
import { InputError, jsonSyntaxReason, UsageError } from '../errors/errors.js';

/**
 * Deepest nesting accepted in any JSON input (files, HTTP bodies, job data). Real inputs
 * stay under 10 (an event's tags inside a proof inside a receipt wrapper); 64 leaves room.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Nesting depth of JSON text, counted without parsing: brackets outside strings. Returns
 * the depth reached, stopping early once it passes `limit` (so a huge input costs at most
 * one scan up to that point).
 */
export function jsonTextDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** Nesting depth of a parsed value, iteratively; stops once it passes `limit`. */
export function valueDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  let visited = 0;
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (++visited > 10_000_000) break; // bounded: a value this large is refused by size first
    if (d > max) {
      max = d;
      if (max > limit) return max;
    }
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const child of children) if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
  }
  return max;
}

function tooDeep(what: string, limit: number): InputError {
  return new InputError('too_deep', `${what} is nested deeper than ${limit} levels (the limit for any JSON input)`, '$');
}

/** Parses JSON text after checking its depth; InputError `too_deep` when over the limit, SyntaxError when not JSON. */
export function parseJsonBounded(text: string, what: string, limit = MAX_JSON_DEPTH): unknown {
  if (jsonTextDepth(text, limit) > limit) throw tooDeep(what, limit);
  return JSON.parse(text) as unknown;
}

/** Throws InputError `too_deep` when a parsed value is nested over the limit. */
export function assertValueDepth(value: unknown, what: string, limit = MAX_JSON_DEPTH): void {
  if (valueDepth(value, limit) > limit) throw tooDeep(what, limit);
}

/**
 * An untrusted value quoted for a message, bounded: strings as a JSON string of at most
 * `max` characters (then `…`), other values by their type, never serialized whole.
 */
export function quoteBounded(value: unknown, max = 60): string {
  if (typeof value === 'string') return value.length > max ? `${JSON.stringify(value.slice(0, max))}…` : JSON.stringify(value);
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return 'an object';
}

/**
 * JSON text a user handed in (a file, stdin, a dropped file in the browser verifier), parsed
 * with the depth limit: unparseable or too deeply nested text is a UsageError (exit 2)
 * naming `source`, never quoting the text; so is text with a member name twice in one
 * object (it reads two ways: JSON.parse keeps the last, other readers the first).
 */
export function parseJsonText(text: string, source: string): unknown {
  if (jsonTextDepth(text) > MAX_JSON_DEPTH) {
    throw new UsageError(`${source} is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for any JSON input)`, 'too_deep');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not JSON: ${jsonSyntaxReason(err)}`, 'not_json');
  }
  const twice = duplicateMember(text);
  if (twice) throw new UsageError(`${source} reads two ways: member ${quoteBounded(twice.name, 60)} twice in ${twice.at.length > 200 ? `${twice.at.slice(0, 200)}…` : twice.at} (JSON.parse keeps the last, other readers the first)`, 'ambiguous');
  return value;
}

/**
 * The first member name that appears twice in one object of JSON text (escapes decoded:
 * `"id"` and `"\u0069d"` are one name), with where that object is (`anchor_proof.nostr`,
 * `x.p[1]`, `(top level)`), or null. Such a file reads two ways (JSON.parse keeps the last,
 * other readers the first). One scan, no recursion; meant for text JSON.parse accepted.
 */
export function duplicateMember(text: string): { name: string; at: string } | null {
  type Frame = { obj: true; keys: Set<string>; expectKey: boolean; key: string | null } | { obj: false; index: number };
  const stack: Frame[] = [];
  const where = (): string => {
    let out = '';
    for (let f = 0; f < stack.length - 1; f++) {
      const frame = stack[f]!;
      const key = frame.obj ? (/^[A-Za-z0-9_$-]{1,40}$/.test(frame.key ?? '') ? frame.key! : quoteBounded(frame.key ?? '', 40)) : '';
      out += frame.obj ? `${out ? '.' : ''}${key}` : `[${frame.index}]`;
    }
    return out || '(top level)';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      for (; j < text.length; j++) {
        const d = text.charCodeAt(j);
        if (d === 0x5c) j++;
        else if (d === 0x22) break;
      }
      const top = stack[stack.length - 1];
      if (top?.obj && top.expectKey) {
        const raw = text.slice(i, j + 1);
        const name = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (top.keys.has(name)) return { name, at: where() };
        top.keys.add(name);
        top.key = name;
        top.expectKey = false;
      }
      i = j;
    } else if (c === 0x7b) stack.push({ obj: true, keys: new Set(), expectKey: true, key: null });
    else if (c === 0x5b) stack.push({ obj: false, index: 0 });
    else if (c === 0x7d || c === 0x5d) stack.pop();
    else if (c === 0x2c) {
      const top = stack[stack.length - 1];
      if (top?.obj) top.expectKey = true;
      else if (top) top.index++;
    }
  }
  return null;
}

/** A hash or key from untrusted input, for a message: as it is when it is 64 (or 128) hex characters, else quoted bounded. */
export function hexOrQuoted(value: string, max = 70): string {
  return /^[0-9a-f]{64}([0-9a-f]{64})?$/.test(value) ? value : quoteBounded(value, max);
}

/** A list of untrusted strings for a message: the first three (each as hexOrQuoted), then how many more. */
export function listBounded(values: readonly string[]): string {
  const shown = values.slice(0, 3).map((v) => hexOrQuoted(v)).join(', ');
  return values.length > 3 ? `${shown} and ${values.length - 3} more` : shown;
}
