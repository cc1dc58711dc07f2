/**
 * Canonical JSON: Python's `json.dumps(obj, sort_keys=True, separators=(",", ":"))`
 * byte for byte (ensure_ascii on). SPEC section 2. `JSON.stringify` is not it:
 * it leaves non-ASCII unescaped and orders keys by insertion.
 */
import { InputError } from '../errors/errors.js';

const SHORT_ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0c: '\\f',
  0x0d: '\\r',
};

export function canonicalString(s: string): string {
  let out = '"';
  let runStart = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(runStart, i);
    const short = SHORT_ESCAPES[c];
    // UTF-16 code units map one to one onto Python's \uXXXX escapes (surrogate pairs included).
    out += short ?? '\\u' + c.toString(16).padStart(4, '0');
    runStart = i + 1;
  }
  return out + s.slice(runStart) + '"';
}

/** Python's float repr: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
function pythonFloat(n: number): string {
  const [mantissa, expText] = n.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const frac = digits.slice(exp + 1);
  return `${sign}${intPart}.${frac.length > 0 ? frac : '0'}`;
}

/**
 * A JS number as Python writes the value it reads from the JSON text JS writes for it
 * (`json.dumps(json.loads(JSON.stringify(x)))`): integers below 1e21 in magnitude as plain
 * digits (Python reads them as int), everything else as Python's float repr. Integers past
 * 2^53 have already lost digits in JSON.parse; no serializer can restore them.
 */
function canonicalNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n); // -0 too: '0', like JSON.stringify
  return pythonFloat(n);
}

function compareByIterator(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx - cy;
  }
}

function compareCodePoints(a: string, b: string): number {
  // Python orders str keys by code point; JS `<` compares UTF-16 units, which differs above
  // U+FFFF. Below the surrogates the two orders agree, so units are compared in place (no
  // allocation) and only a difference between two units from U+D800 up goes code point by code point.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    return x >= 0xd800 && y >= 0xd800 ? compareByIterator(a, b) : x - y;
  }
  return a.length - b.length;
}

function inOrder(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (compareCodePoints(keys[i - 1]!, keys[i]!) > 0) return false;
  return true;
}

/** A member or element that needs no path: its text cannot fail (a string, a boolean, null). */
function writePlain(value: unknown, parts: string[]): boolean {
  if (typeof value === 'string') parts.push(canonicalString(value));
  else if (value === null) parts.push('null');
  else if (typeof value === 'boolean') parts.push(value ? 'true' : 'false');
  else return false;
  return true;
}

function write(value: unknown, path: string, depth: number, parts: string[]): void {
  if (depth > 512) throw new InputError('too_deep', 'nesting deeper than 512 levels', path || '$');
  if (writePlain(value, parts)) {
    // string, boolean or null
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InputError('not_finite', 'number is not finite', path || '$');
    parts.push(canonicalNumber(value));
  } else if (typeof value === 'bigint') {
    parts.push(value.toString());
  } else if (Array.isArray(value)) {
    parts.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) parts.push(',');
      // the element's path is only built for what can fail or nest (or would be too deep)
      if (depth >= 512 || !writePlain(value[i], parts)) write(value[i], `${path}[${i}]`, depth + 1, parts);
    }
    parts.push(']');
  } else if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
    // most objects hashed here are built in order already (envelopes): sorted only when not
    if (!inOrder(keys)) keys.sort(compareCodePoints);
    parts.push('{');
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const v = obj[k];
      if (i > 0) parts.push(',');
      parts.push(canonicalString(k), ':');
      if (depth >= 512 || !writePlain(v, parts)) write(v, path ? `${path}.${k}` : k, depth + 1, parts);
    }
    parts.push('}');
  } else {
    throw new InputError('not_json', `${typeof value} is not a JSON value`, path || '$');
  }
}

/** Canonical JSON text (pure ASCII). Members whose value is `undefined` are left out. */
export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, '', 0, parts);
  return parts.join('');
}

/** Canonical JSON as bytes (ASCII, so UTF-8 and Latin-1 agree). */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'ascii');
}
