/**
 * Attestations: the leaves of a timestamp tree. Tags, limits and payload forms follow
 * python-opentimestamps `opentimestamps/core/notary.py`; an attestation of an unknown
 * kind is kept byte for byte.
 */
import { ByteReader, ByteWriter, encodeVaruint } from './bytes.js';
import { OtsFormatError } from './errors.js';

export const PENDING_TAG = Buffer.from('83dfe30d2ef90c8e', 'hex');
export const BITCOIN_TAG = Buffer.from('0588960d73d71901', 'hex');
export const LITECOIN_TAG = Buffer.from('06869a0d73d71b45', 'hex');

export const TAG_SIZE = 8;
export const MAX_PAYLOAD_SIZE = 8192;
export const MAX_URI_LENGTH = 1000;
const URI_CHARS = /^[A-Za-z0-9\-._/:]*$/;

export type Attestation =
  | { readonly kind: 'pending'; readonly uri: string }
  | { readonly kind: 'bitcoin'; readonly height: number }
  | { readonly kind: 'litecoin'; readonly height: number }
  | { readonly kind: 'unknown'; readonly tag: Buffer; readonly payload: Buffer };

/** Why a calendar URI is not acceptable in a pending attestation, or null when it is. */
export function uriProblem(uri: string): string | null {
  if (uri.length > MAX_URI_LENGTH) return `URI of ${uri.length} characters exceeds ${MAX_URI_LENGTH}`;
  if (!URI_CHARS.test(uri)) return `URI ${JSON.stringify(uri.slice(0, 80))} has characters outside A-Za-z0-9-._/:`;
  return null;
}

export function pendingAttestation(uri: string): Attestation {
  const problem = uriProblem(uri);
  if (problem) throw new OtsFormatError('ots_bad_uri', problem);
  return { kind: 'pending', uri };
}

export function bitcoinAttestation(height: number): Attestation {
  if (!Number.isSafeInteger(height) || height < 0) throw new RangeError(`block height out of range: ${height}`);
  return { kind: 'bitcoin', height };
}

export function attestationTag(a: Attestation): Buffer {
  switch (a.kind) {
    case 'pending':
      return PENDING_TAG;
    case 'bitcoin':
      return BITCOIN_TAG;
    case 'litecoin':
      return LITECOIN_TAG;
    case 'unknown':
      return a.tag;
  }
}

export function attestationPayload(a: Attestation): Buffer {
  switch (a.kind) {
    case 'pending': {
      const w = new ByteWriter();
      w.writeVarbytes(Buffer.from(a.uri, 'latin1'));
      return w.bytes();
    }
    case 'bitcoin':
    case 'litecoin':
      return encodeVaruint(a.height);
    case 'unknown':
      return a.payload;
  }
}

/** `tag || varbytes(payload)` (the bytes after the `00` marker). */
export function serializeAttestation(a: Attestation): Buffer {
  const w = new ByteWriter();
  w.write(attestationTag(a));
  w.writeVarbytes(attestationPayload(a));
  return w.bytes();
}

/** Reads `tag || varbytes(payload)` (the `00` marker already consumed). */
export function readAttestation(r: ByteReader): Attestation {
  const tag = r.readBytes(TAG_SIZE, 'attestation tag');
  const payloadStart = r.offset;
  const len = r.readVaruint('length of attestation payload');
  if (len > MAX_PAYLOAD_SIZE) {
    throw new OtsFormatError('ots_payload_too_long', `attestation payload of ${len} bytes exceeds ${MAX_PAYLOAD_SIZE}`, payloadStart);
  }
  const p = r.take(len, 'attestation payload');
  let a: Attestation;
  if (tag.equals(PENDING_TAG)) {
    const uriStart = p.offset;
    const uri = p.readVarbytes(0, MAX_URI_LENGTH, 'pending attestation URI', 'ots_bad_uri').toString('latin1');
    const problem = uriProblem(uri);
    if (problem) throw new OtsFormatError('ots_bad_uri', problem, uriStart);
    a = { kind: 'pending', uri };
  } else if (tag.equals(BITCOIN_TAG) || tag.equals(LITECOIN_TAG)) {
    const kind = tag.equals(BITCOIN_TAG) ? 'bitcoin' : 'litecoin';
    a = { kind, height: p.readVaruint(`${kind} block height`) };
  } else {
    return { kind: 'unknown', tag, payload: p.readBytes(len, 'attestation payload') };
  }
  if (!p.atEnd) throw new OtsFormatError('ots_payload_trailing', `${a.kind} attestation payload has ${p.remaining} bytes left over`, p.offset);
  return a;
}

/**
 * python-opentimestamps order: different kinds by tag; same kind by URI (pending), by
 * height (Bitcoin, Litecoin), by tag then payload (unknown).
 */
export function compareAttestations(a: Attestation, b: Attestation): number {
  if (a.kind === 'unknown' && b.kind === 'unknown') return Buffer.compare(a.tag, b.tag) || Buffer.compare(a.payload, b.payload);
  if (a.kind === 'pending' && b.kind === 'pending') return a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0;
  if (a.kind === 'bitcoin' && b.kind === 'bitcoin') return a.height - b.height;
  if (a.kind === 'litecoin' && b.kind === 'litecoin') return a.height - b.height;
  return Buffer.compare(attestationTag(a), attestationTag(b));
}

/** As `ots info` prints them: `PendingAttestation('https://…')`, `BitcoinBlockHeaderAttestation(358391)`. */
export function attestationToString(a: Attestation): string {
  switch (a.kind) {
    case 'pending':
      return `PendingAttestation('${a.uri}')`;
    case 'bitcoin':
      return `BitcoinBlockHeaderAttestation(${a.height})`;
    case 'litecoin':
      return `LitecoinBlockHeaderAttestation(${a.height})`;
    case 'unknown':
      return `UnknownAttestation(${a.tag.toString('hex')}, ${a.payload.toString('hex')})`;
  }
}
