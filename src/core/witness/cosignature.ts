/**
 * C2SP tlog-cosignature, the Ed25519 `cosignature/v1` type: a witness's note signature
 * over `cosignature/v1\ntime <ts>\n<checkpoint note text>`, written as a signed-note line
 * `— <name> base64(key ID ‖ u64 big-endian timestamp ‖ 64-byte signature)`, key ID =
 * SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]. Witness keys are vkeys with type 0x04:
 * `<name>+<8 hex>+base64(0x04 ‖ public key)`; signer keys `PRIVATE+KEY+<name>+<8 hex>+base64(0x04 ‖ seed)`.
 */
import { createPublicKey, verify } from 'node:crypto';
import { LogFormatError } from '../log/errors.js';
import { MAX_NOTE_SIGNATURES, parseNote, type NoteSignature } from '../log/note.js';
import { badKey, chop, decodeKeyData, formatNoteKey, generateNoteSignerKey, hex8, isValidKeyName, noteKeyId, parseNoteSignerKey, SPKI_ED25519, type NoteSigner } from '../log/signer-key.js';

/** signed-note's signature type for timestamped Ed25519 checkpoint cosignatures. */
export const COSIGNATURE_V1_TYPE = 0x04;
/** tlog-cosignature: `timestamp` MUST NOT exceed 2^63 - 1. */
export const MAX_COSIGNATURE_TIME = 2n ** 63n - 1n;
const SIG_PREFIX = '\u2014 ';
/** 8-byte timestamp + 64-byte Ed25519 signature, after the 4-byte key ID. */
const TIMESTAMPED_SIGNATURE_BYTES = 72;

export function cosignerKeyId(name: string, publicKey: Uint8Array): number {
  return noteKeyId(name, COSIGNATURE_V1_TYPE, publicKey);
}

export function formatWitnessKey(name: string, publicKey: Uint8Array): string {
  return formatNoteKey(name, COSIGNATURE_V1_TYPE, publicKey);
}

/** A witness's cosignature/v1 verifier key, as the caller gives it. */
export interface WitnessKey {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Buffer;
  /** `<name>+<hash>+<base64(0x04 ‖ key)>`. */
  readonly text: string;
}

/** Parses `<name>+<hash>+<base64(0x04 ‖ 32-byte key)>`; a log key (0x01) is refused by its type. */
export function parseWitnessKey(text: string, field = 'witness key'): WitnessKey {
  if (text.length > 1024) throw badKey('longer than 1024 characters', field);
  const parts = chop(text.trim(), 3);
  if (parts === null) throw badKey('not <name>+<hash>+<base64 key>', field);
  const [name, hash, b64] = parts as [string, string, string];
  if (!isValidKeyName(name)) throw badKey('the name is empty or holds a space or "+"', field);
  if (!/^[0-9a-fA-F]{8}$/.test(hash)) throw badKey(`the hash ${JSON.stringify(hash.slice(0, 20))} is not 8 hex digits`, field);
  const data = decodeKeyData(b64, field);
  const type = data[0] ?? 0;
  if (type !== COSIGNATURE_V1_TYPE) {
    const what = type === 0x01 ? ' (0x01 is a log key: a witness key has type 0x04)' : '';
    throw badKey(`key type 0x${type.toString(16).padStart(2, '0')} is not a cosignature/v1 Ed25519 key (0x04)${what}`, field);
  }
  if (data.length !== 33) throw badKey(`an Ed25519 key is 32 bytes, not ${data.length - 1}`, field);
  const publicKey = data.subarray(1);
  const id = cosignerKeyId(name, publicKey);
  if (id !== parseInt(hash, 16)) throw badKey(`the hash ${hash} does not match the name and key (${hex8(id)})`, field);
  return { name, keyId: id, publicKey, text: formatWitnessKey(name, publicKey) };
}

/** A witness's signing key; the seed stays inside `sign`. */
export type CosignerKey = NoteSigner;

/** Parses `PRIVATE+KEY+<name>+<hash>+<base64(0x04 ‖ 32-byte seed)>`. */
export function parseCosignerKey(text: string, field = 'witness key'): CosignerKey {
  return parseNoteSignerKey(text, field, COSIGNATURE_V1_TYPE, 'a cosignature/v1 Ed25519 seed (0x04 and 32 bytes)');
}

/** A fresh witness key: its secret text and the key. */
export function generateCosignerKey(name: string): { signerKeyText: string; key: CosignerKey } {
  const { signerKeyText, signer } = generateNoteSignerKey(name, COSIGNATURE_V1_TYPE);
  return { signerKeyText, key: signer };
}

/** The signed message: `cosignature/v1\ntime <ts>\n` then the note text (with its final newline, no signatures). */
export function cosignedMessage(noteText: string, timestamp: bigint): Buffer {
  if (!noteText.endsWith('\n')) throw new RangeError('a note text ends in a newline');
  if (timestamp < 0n || timestamp > MAX_COSIGNATURE_TIME) throw new RangeError(`timestamp ${timestamp} is outside 0..2^63-1`);
  return Buffer.from(`cosignature/v1\ntime ${timestamp.toString(10)}\n${noteText}`, 'utf8');
}

/** One cosignature line (`— <name> <base64>\n`) over `noteText` at `timestamp` (POSIX seconds). */
export function cosign(noteText: string, key: CosignerKey, timestamp: bigint): string {
  const body = Buffer.alloc(4 + 8);
  body.writeUInt32BE(key.keyId, 0);
  body.writeBigUInt64BE(timestamp, 4);
  const sig = key.sign(cosignedMessage(noteText, timestamp));
  return `${SIG_PREFIX}${key.name} ${Buffer.concat([body, sig]).toString('base64')}\n`;
}

/** A note signature read as a timestamped signature; null when its length is not 8 + 64 bytes. */
export function readTimestampedSignature(sig: NoteSignature): { timestamp: bigint; signature: Buffer } | null {
  if (sig.signature.length !== TIMESTAMPED_SIGNATURE_BYTES) return null;
  return { timestamp: sig.signature.readBigUInt64BE(0), signature: sig.signature.subarray(8) };
}

/** Does `sig` (a line by `key`'s name and key ID) verify over `noteText`? Its time when it does. */
export function verifyCosignature(noteText: string, sig: NoteSignature, key: WitnessKey): { ok: true; timestamp: bigint } | { ok: false; reason: string } {
  if (sig.name !== key.name || sig.keyId !== key.keyId) return { ok: false, reason: 'another key' };
  const ts = readTimestampedSignature(sig);
  if (ts === null) return { ok: false, reason: `${sig.signature.length} bytes after the key ID, not 72 (timestamp and signature)` };
  if (ts.timestamp > MAX_COSIGNATURE_TIME) return { ok: false, reason: 'timestamp over 2^63 - 1' };
  const pub = createPublicKey({ key: Buffer.concat([SPKI_ED25519, key.publicKey]), format: 'der', type: 'spki' });
  if (!verify(null, cosignedMessage(noteText, ts.timestamp), pub, ts.signature)) return { ok: false, reason: 'the signature does not verify' };
  return { ok: true, timestamp: ts.timestamp };
}

/** Reads signature lines (`— <name> <base64>\n` each), as an add-checkpoint answer holds them. */
export function parseSignatureLines(text: string, field = 'signature lines'): NoteSignature[] {
  if (text === '' || !text.endsWith('\n')) throw new LogFormatError('log_bad_note', 'no signature lines, or the last one does not end in a newline', field);
  if (text.startsWith('\n') || text.includes('\n\n')) throw new LogFormatError('log_bad_note', 'an empty line among the signature lines', field);
  // parse as the signature part of a note whose text is one line
  return [...parseNote(`x\n\n${text}`, field).signatures];
}

/**
 * The note with `lines` (whole signature lines) added after its signatures; a line it
 * already holds is not added twice. Lines and note are checked for the signed-note format.
 */
export function attachCosignatures(note: string, lines: readonly string[], field = 'note'): string {
  parseNote(note, field);
  const have = new Set(note.slice(note.lastIndexOf('\n\n') + 2).split('\n').filter((l) => l !== ''));
  let out = note;
  for (const [i, line] of lines.entries()) {
    const text = line.endsWith('\n') ? line : `${line}\n`;
    parseSignatureLines(text, `${field}.cosignatures[${i}]`);
    if (text.indexOf('\n') !== text.length - 1) throw new LogFormatError('log_bad_note', 'one signature line at a time', `${field}.cosignatures[${i}]`);
    if (have.has(text.slice(0, -1))) continue;
    have.add(text.slice(0, -1));
    out += text;
  }
  const count = out.slice(out.lastIndexOf('\n\n') + 2).split('\n').length - 1;
  if (count > MAX_NOTE_SIGNATURES) throw new LogFormatError('log_too_large', `${count} signature lines, over ${MAX_NOTE_SIGNATURES}`, field);
  return out;
}
