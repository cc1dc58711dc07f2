/**
 * C2SP signed-note with Ed25519 keys, as Go's golang.org/x/mod/sumdb/note: a text ending
 * in a newline, a blank line, then lines `— <name> base64(key ID || signature)`. Key ID =
 * SHA-256(name || 0x0A || 0x01 || public key)[:4], big-endian. Keys are written as Go
 * writes them: verifier `<name>+<8 hex>+base64(0x01 || public key)`, signer
 * `PRIVATE+KEY+<name>+<8 hex>+base64(0x01 || 32-byte seed)`.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { decodeBase64Strict, decodeUtf8Strict } from '../aer1/base64.js';
import { LogFormatError } from './errors.js';
import { badKey, chop, decodeKeyData, formatNoteKey, generateNoteSignerKey, hex8, isValidKeyName, noteKeyId, parseNoteSignerKey, SPKI_ED25519, type NoteSigner } from './signer-key.js';

export { isValidKeyName } from './signer-key.js';

const ALG_ED25519 = 0x01;
const SIG_PREFIX = '\u2014 ';
/** Go's note.Open stops at 100 signatures; the spec asks for at least 16. */
export const MAX_NOTE_SIGNATURES = 100;
/** 100 post-quantum signatures would not fit; Ed25519 lines are under 200 bytes. */
export const MAX_NOTE_BYTES = 64 * 1024;

// RFC 8410 DER wrappers around a raw Ed25519 seed / public key, for node:crypto.

/** Non-empty, no Unicode space (Go: unicode.IsSpace, the White_Space property), no '+'. */
export function keyId(name: string, publicKey: Uint8Array): number {
  return noteKeyId(name, ALG_ED25519, publicKey);
}

export interface VerifierKey {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Buffer;
  /** `<name>+<hash>+<base64>`. */
  readonly text: string;
}

export function formatVerifierKey(name: string, publicKey: Uint8Array): string {
  return formatNoteKey(name, ALG_ED25519, publicKey);
}

/** Parses `<name>+<hash>+<base64(0x01 || 32-byte key)>`; only Ed25519 keys (type 0x01). */
export function parseVerifierKey(text: string, field = 'verifier key'): VerifierKey {
  if (text.length > 1024) throw badKey('longer than 1024 characters', field);
  const parts = chop(text.trim(), 3);
  if (parts === null) throw badKey('not <name>+<hash>+<base64 key>', field);
  const [name, hash, b64] = parts as [string, string, string];
  if (!isValidKeyName(name)) throw badKey('the name is empty or holds a space', field);
  if (!/^[0-9a-fA-F]{8}$/.test(hash)) throw badKey(`the hash ${JSON.stringify(hash.slice(0, 20))} is not 8 hex digits`, field);
  const data = decodeKeyData(b64, field);
  if (data[0] !== ALG_ED25519) throw badKey(`key type 0x${(data[0] ?? 0).toString(16).padStart(2, '0')} is not Ed25519 (0x01)`, field);
  if (data.length !== 33) throw badKey(`an Ed25519 key is 32 bytes, not ${data.length - 1}`, field);
  const publicKey = data.subarray(1);
  const id = keyId(name, publicKey);
  if (id !== parseInt(hash, 16)) throw badKey(`the hash ${hash} does not match the name and key (${hex8(id)})`, field);
  return { name, keyId: id, publicKey, text: formatVerifierKey(name, publicKey) };
}

/** A log's signing key: its name, key ID and public key; the seed stays inside `sign`. */
export type LogSigner = NoteSigner;

/** Parses `PRIVATE+KEY+<name>+<hash>+<base64(0x01 || seed)>` (Go's note.NewSigner format). */
export function parseSignerKey(text: string, field = 'log key'): LogSigner {
  return parseNoteSignerKey(text, field, ALG_ED25519, 'an Ed25519 seed (0x01 and 32 bytes)');
}

/** A fresh Ed25519 log key: the signer key text (secret) and its signer. */
export function generateSignerKey(name: string): { signerKeyText: string; signer: LogSigner } {
  return generateNoteSignerKey(name, ALG_ED25519);
}

function publicKeyObject(raw: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: 'der', type: 'spki' });
}

/** One signature line of a note. */
export interface NoteSignature {
  readonly name: string;
  readonly keyId: number;
  readonly signature: Buffer;
}

export interface ParsedNote {
  /** The signed text, with its final newline. */
  readonly text: string;
  readonly signatures: readonly NoteSignature[];
}

/** Splits a signed note into text and signature lines, checking the format (not the signatures). */
export function parseNote(note: string | Uint8Array, field = 'note'): ParsedNote {
  const size = typeof note === 'string' ? Buffer.byteLength(note, 'utf8') : note.length;
  if (size > MAX_NOTE_BYTES) throw new LogFormatError('log_too_large', `${size} bytes is over ${MAX_NOTE_BYTES}`, field);
  const msg = typeof note === 'string' ? note : decodeUtf8Strict(note, field);
  if (typeof note === 'string' && Buffer.from(msg, 'utf8').toString('utf8') !== msg) throw new LogFormatError('log_bad_note', 'not well-formed Unicode', field);
  // eslint-disable-next-line no-control-regex
  const control = /[\u0000-\u0009\u000b-\u001f]/.exec(msg);
  if (control) throw new LogFormatError('log_bad_note', `control character U+${control[0].charCodeAt(0).toString(16).padStart(4, '0')} at offset ${control.index}`, field);
  const split = msg.lastIndexOf('\n\n');
  if (split < 0) throw new LogFormatError('log_bad_note', 'no blank line before the signatures', field);
  const text = msg.slice(0, split + 1);
  const sigs = msg.slice(split + 2);
  if (sigs === '' || !sigs.endsWith('\n')) throw new LogFormatError('log_bad_note', 'no signature lines, or the last one does not end in a newline', field);
  const signatures: NoteSignature[] = [];
  const lines = sigs.slice(0, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES) throw new LogFormatError('log_too_large', `${lines.length} signature lines, over ${MAX_NOTE_SIGNATURES}`, field);
  lines.forEach((line, i) => {
    const where = `${field}.signatures[${i}]`;
    if (!line.startsWith(SIG_PREFIX)) throw new LogFormatError('log_bad_note', 'a signature line starts with "— " (em dash, space)', where);
    const rest = line.slice(SIG_PREFIX.length);
    const space = rest.indexOf(' ');
    const name = space < 0 ? rest : rest.slice(0, space);
    const b64 = space < 0 ? '' : rest.slice(space + 1);
    if (!isValidKeyName(name)) throw new LogFormatError('log_bad_note', 'the key name is empty or holds a space or "+"', where);
    let raw: Buffer;
    try {
      raw = decodeBase64Strict(b64, where);
    } catch {
      throw new LogFormatError('log_bad_note', 'the signature is not canonical base64', where);
    }
    if (raw.length < 5) throw new LogFormatError('log_bad_note', `the signature is ${raw.length} bytes: a key ID and a signature are 5 or more`, where);
    signatures.push({ name, keyId: raw.readUInt32BE(0), signature: raw.subarray(4) });
  });
  return { text, signatures };
}

export type NoteCheck =
  | { readonly ok: true; readonly text: string; readonly signedBy: readonly VerifierKey[] }
  | { readonly ok: false; readonly reason: 'no_trusted_signature' | 'bad_signature'; readonly message: string; readonly text: string };

/**
 * The signed-note rule: signatures by keys not given are ignored; one by a given key
 * (same name and key ID) must verify, else the whole note is refused; at least one must.
 */
export function checkNote(note: ParsedNote, trusted: readonly VerifierKey[]): NoteCheck {
  const message = Buffer.from(note.text, 'utf8');
  const signedBy: VerifierKey[] = [];
  for (const sig of note.signatures) {
    const key = trusted.find((k) => k.name === sig.name && k.keyId === sig.keyId);
    if (key === undefined || signedBy.includes(key)) continue;
    if (sig.signature.length !== 64 || !verify(null, message, publicKeyObject(key.publicKey), sig.signature)) {
      return { ok: false, reason: 'bad_signature', message: `the signature by ${key.text} does not verify`, text: note.text };
    }
    signedBy.push(key);
  }
  if (signedBy.length === 0) {
    const names = note.signatures.map((s) => `${s.name}+${hex8(s.keyId)}`).join(', ');
    return { ok: false, reason: 'no_trusted_signature', message: `signer not trusted: signed by ${names}, none of them a key given`, text: note.text };
  }
  return { ok: true, text: note.text, signedBy };
}

/** The note `text` (ending in a newline) signed by `signers`, one line each. */
export function signNote(text: string, signers: readonly LogSigner[]): string {
  if (!text.endsWith('\n')) throw new RangeError('a note text ends in a newline');
  const message = Buffer.from(text, 'utf8');
  const lines = signers.map((s) => {
    const id = Buffer.allocUnsafe(4);
    id.writeUInt32BE(s.keyId, 0);
    return `${SIG_PREFIX}${s.name} ${Buffer.concat([id, s.sign(message)]).toString('base64')}\n`;
  });
  return `${text}\n${lines.join('')}`;
}
