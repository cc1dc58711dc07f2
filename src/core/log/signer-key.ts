/**
 * Ed25519 keys of C2SP signed notes, whatever their signature type (0x01 a log's note
 * signature, 0x04 a witness's cosignature/v1): key IDs, the `<name>+<hash>+<base64>` texts and
 * Go's `PRIVATE+KEY+<name>+<hash>+<base64(type ‖ seed)>` signer-key text.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { decodeBase64Strict } from '../aer1/base64.js';
import { sha256 } from '../aer1/hash.js';
import { InputError } from '../errors/errors.js';
import { LogFormatError } from './errors.js';

export const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
export const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

export const hex8 = (id: number): string => id.toString(16).padStart(8, '0');

/** A key name: non-empty, no white space and no '+', valid UTF-8. */
export function isValidKeyName(name: string): boolean {
  return name !== '' && !/[\p{White_Space}+]/u.test(name) && Buffer.from(name, 'utf8').toString('utf8') === name;
}

/** signed-note's key ID: the first 4 bytes of SHA-256(name ‖ 0x0A ‖ type ‖ key), big-endian. */
export function noteKeyId(name: string, type: number, publicKey: Uint8Array): number {
  return sha256(Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0x0a, type]), publicKey])).readUInt32BE(0);
}

/** `<name>+<hash>+<base64(type ‖ key)>`. */
export function formatNoteKey(name: string, type: number, publicKey: Uint8Array): string {
  return `${name}+${hex8(noteKeyId(name, type, publicKey))}+${Buffer.concat([Buffer.from([type]), publicKey]).toString('base64')}`;
}

/** Splits at the first `count - 1` '+' (as Go's chop): the base64 key at the end may hold '+'. */
export function chop(text: string, count: number): string[] | null {
  const parts: string[] = [];
  let rest = text;
  for (let i = 0; i < count - 1; i++) {
    const at = rest.indexOf('+');
    if (at < 0) return null;
    parts.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
  }
  parts.push(rest);
  return parts;
}

export function badKey(message: string, field: string): LogFormatError {
  return new LogFormatError('log_bad_key', message, field);
}

export function decodeKeyData(b64: string, field: string): Buffer {
  try {
    return decodeBase64Strict(b64, field);
  } catch (err) {
    throw badKey((err as Error).message.replace(`${field}: `, ''), field);
  }
}

/** A signing key of one signature type; the seed stays inside `sign`. */
export interface NoteSigner {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Buffer;
  /** `<name>+<hash>+<base64(type ‖ key)>`. */
  readonly verifierKey: string;
  sign(message: Uint8Array): Buffer;
}

function signerOf(name: string, type: number, privateKey: KeyObject): NoteSigner {
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const publicKey = Buffer.from(spki.subarray(SPKI_ED25519.length));
  return { name, keyId: noteKeyId(name, type, publicKey), publicKey, verifierKey: formatNoteKey(name, type, publicKey), sign: (m) => sign(null, m, privateKey) };
}

/** Parses `PRIVATE+KEY+<name>+<hash>+<base64(type ‖ 32-byte seed)>`; `seedWhat` names the seed expected, for the error. */
export function parseNoteSignerKey(text: string, field: string, type: number, seedWhat: string): NoteSigner {
  if (text.length > 1024) throw badKey('longer than 1024 characters', field);
  const parts = chop(text.trim(), 5);
  if (parts === null || parts[0] !== 'PRIVATE' || parts[1] !== 'KEY') throw badKey('not PRIVATE+KEY+<name>+<hash>+<base64 key>', field);
  const [, , name, hash, b64] = parts as [string, string, string, string, string];
  if (!isValidKeyName(name)) throw badKey('the name is empty or holds a space or "+"', field);
  if (!/^[0-9a-fA-F]{8}$/.test(hash)) throw badKey('the hash is not 8 hex digits', field);
  const data = decodeKeyData(b64, field);
  if (data[0] !== type || data.length !== 33) throw badKey(`not ${seedWhat}`, field);
  const der = Buffer.concat([PKCS8_ED25519, data.subarray(1)]);
  data.fill(0);
  const signer = signerOf(name, type, createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }));
  der.fill(0);
  if (signer.keyId !== parseInt(hash, 16)) throw badKey('the hash does not match the name and key', field);
  return signer;
}

/** A fresh Ed25519 key of signature type `type`: the signer-key text (secret) and its signer. */
export function generateNoteSignerKey(name: string, type: number): { signerKeyText: string; signer: NoteSigner } {
  if (!isValidKeyName(name)) throw new InputError('bad_option', 'a key name is non-empty, with no spaces and no "+"', 'name');
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = signerOf(name, type, privateKey);
  const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'der' });
  const seed = Buffer.concat([Buffer.from([type]), pkcs8.subarray(PKCS8_ED25519.length)]);
  const signerKeyText = `PRIVATE+KEY+${name}+${hex8(signer.keyId)}+${seed.toString('base64')}`;
  seed.fill(0);
  pkcs8.fill(0);
  return { signerKeyText, signer };
}
