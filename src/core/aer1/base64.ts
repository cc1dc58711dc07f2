/**
 * Strict base64 (RFC 4648 section 4, standard alphabet, canonical padding and zero pad bits)
 * and strict UTF-8. SPEC section 2: `canonical_bytes` must decode one way only, or two
 * different texts could claim the same output hash.
 */
import { InputError } from '../errors/errors.js';

const ALPHABET = /^[A-Za-z0-9+/]$/;
/** The fast path: the whole text in the alphabet with at most two '=' at the end. */
const WELL_FORMED = /^[A-Za-z0-9+/]*={0,2}$/;

function badBase64(reason: string, field: string): InputError {
  return new InputError('bad_base64', `not canonical base64: ${reason}`, field);
}

function checkCanonicalBase64(text: string, field: string): void {
  // One regex for the usual case; the per-character walk only runs to name the first bad character.
  if (!WELL_FORMED.test(text)) {
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (ch === '=' || ALPHABET.test(ch)) continue;
      if (ch === '-' || ch === '_') throw badBase64(`'${ch}' at offset ${i} (url-safe alphabet)`, field);
      if (/^\s$/.test(ch)) throw badBase64(`whitespace at offset ${i}`, field);
      throw badBase64(`character U+${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at offset ${i}`, field);
    }
  }
  const firstPad = text.indexOf('=');
  const body = firstPad < 0 ? text.length : firstPad;
  const pad = text.length - body;
  if (pad > 2 || text.slice(body) !== '='.repeat(pad)) {
    throw badBase64(`misplaced padding '=' at offset ${body}`, field);
  }
  if (text.length % 4 !== 0) {
    throw badBase64(`length ${text.length} is not a multiple of 4 (missing or extra padding)`, field);
  }
  if (pad > 0) {
    // The bits of the last data character that fall past the final byte must be zero.
    const last = text[body - 1]!;
    const value = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.indexOf(last);
    const mask = pad === 2 ? 0x0f : 0x03;
    if ((value & mask) !== 0) throw badBase64(`non-zero pad bits in '${last}' at offset ${body - 1}`, field);
  }
}

/** True when `text` is canonical standard base64 (the empty string included). */
export function isCanonicalBase64(text: string): boolean {
  try {
    checkCanonicalBase64(text, '');
    return true;
  } catch {
    return false;
  }
}

/** Decodes canonical standard base64; anything else is an InputError naming `field` and the offset. */
export function decodeBase64Strict(text: string, field: string): Buffer {
  checkCanonicalBase64(text, field);
  return Buffer.from(text, 'base64');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629), or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b < 0x80) { i++; continue; }
    else if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b === 0xe0) { need = 2; lo = 0xa0; }
    else if (b === 0xed) { need = 2; hi = 0x9f; } // no UTF-16 surrogates
    else if (b >= 0xe1 && b <= 0xef) need = 2;
    else if (b === 0xf0) { need = 3; lo = 0x90; }
    else if (b === 0xf4) { need = 3; hi = 0x8f; } // nothing above U+10FFFF
    else if (b >= 0xf1 && b <= 0xf3) need = 3;
    else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      const [min, max] = k === 1 ? [lo, hi] : [0x80, 0xbf];
      if (c === undefined || c < min || c > max) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** Decodes UTF-8 with no replacement characters: malformed bytes are an InputError with their offset. */
export function decodeUtf8Strict(bytes: Uint8Array, field: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    throw new InputError('bad_utf8', at >= 0 ? `not UTF-8: malformed byte 0x${bytes[at]!.toString(16).padStart(2, '0')} at offset ${at}` : 'not UTF-8', field);
  }
}
