/**
 * RFC 3161 messages through pkijs: the `TimeStampReq` we send (a SHA-256 message imprint,
 * a nonce, `certReq` true) and the `TimeStampResp` we read back (its status and the DER
 * `TimeStampToken`). Pure: bytes in, bytes or values out; checking the token is
 * token-check.ts's job.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import * as asn1js from 'asn1js';
import { AlgorithmIdentifier, ContentInfo, MessageImprint, TimeStampReq, TimeStampResp } from 'pkijs';
import { TsaFormatError, type TsaFormatErrorCode } from './errors.js';

export const OID_SHA256 = '2.16.840.1.101.3.4.2.1';
/** A `TimeStampResp` larger than this is refused before parsing (a token with a chain is a few KiB). */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** Nonce length we send: 64 bits, as openssl's `ts -query` does. */
export const NONCE_BYTES = 8;

/** RFC 3161 §2.4.2 PKIStatus names, by value. */
const STATUS_NAMES = ['granted', 'grantedWithMods', 'rejection', 'waiting', 'revocationWarning', 'revocationNotification'] as const;
/** RFC 3161 §2.4.2 PKIFailureInfo bit names, by bit number. */
const FAILURE_BITS: Record<number, string> = {
  0: 'badAlg', 2: 'badRequest', 5: 'badDataFormat', 14: 'timeNotAvailable', 15: 'unacceptedPolicy',
  16: 'unacceptedExtension', 17: 'addInfoNotAvailable', 25: 'systemFailure',
};

/** Bytes as a fresh ArrayBuffer (pkijs and asn1js read ArrayBuffers); a Buffer's `.buffer` may be Node's shared pool. */
export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return new Uint8Array(bytes).buffer;
}

/**
 * One BER/DER element filling `der` exactly: bytes after it are refused (pkijs's `fromBER`
 * would ignore them), so a token or answer has one reading.
 */
export function parseWhole(der: Uint8Array, what: string, code: TsaFormatErrorCode, field: string): asn1js.AsnType {
  const asn1 = asn1js.fromBER(toArrayBuffer(der));
  if (asn1.offset === -1) throw new TsaFormatError(code, `not a DER ${what} (${asn1.result.error})`, field);
  if (asn1.offset !== der.length) throw new TsaFormatError(code, `${der.length - asn1.offset} bytes after the ${what}`, field);
  return asn1.result;
}

/**
 * A nonce from random bytes, as a positive DER INTEGER's minimal content: the top bit is
 * cleared (so no sign byte is needed) and a leading zero byte is made non-zero.
 */
export function nonceFromRandom(random: Uint8Array): Uint8Array {
  if (random.length !== NONCE_BYTES) throw new RangeError(`a nonce is made from ${NONCE_BYTES} random bytes`);
  const nonce = random.slice();
  nonce[0] = (nonce[0]! & 0x7f) || 0x01;
  return nonce;
}

/** The DER `TimeStampReq` for `data`: version 1, SHA-256 imprint, the nonce, `certReq` true. */
export function encodeTimeStampRequest(data: Uint8Array, nonce: Uint8Array): Uint8Array {
  const req = new TimeStampReq({
    version: 1,
    messageImprint: new MessageImprint({
      hashAlgorithm: new AlgorithmIdentifier({ algorithmId: OID_SHA256, algorithmParams: new asn1js.Null() }),
      hashedMessage: new asn1js.OctetString({ valueHex: toArrayBuffer(sha256(data)) }),
    }),
    nonce: new asn1js.Integer({ valueHex: toArrayBuffer(nonce) }),
    certReq: true,
  });
  return new Uint8Array(req.toSchema().toBER(false));
}

export type TimeStampAnswer =
  | { readonly granted: true; readonly status: string; readonly token: Uint8Array }
  | { readonly granted: false; readonly status: string; readonly failure: string };

/** Reads a DER `TimeStampResp`: a granted status with its token, or why the TSA refused. */
export function decodeTimeStampResponse(der: Uint8Array, field = 'response'): TimeStampAnswer {
  if (der.length > MAX_RESPONSE_BYTES) throw new TsaFormatError('tsa_too_large', `${der.length} bytes is over ${MAX_RESPONSE_BYTES}`, field);
  const schema = parseWhole(der, 'TimeStampResp', 'tsa_bad_response', field);
  let resp: TimeStampResp;
  try {
    resp = new TimeStampResp({ schema });
  } catch (err) {
    throw new TsaFormatError('tsa_bad_response', `not a DER TimeStampResp (${(err as Error).message})`, field);
  }
  const code = resp.status.status;
  const status = STATUS_NAMES[code] ?? `status ${code}`;
  if (code !== 0 && code !== 1) {
    const bits = resp.status.failInfo ? failureNames(resp.status.failInfo) : [];
    const text = resp.status.statusStrings?.map((s) => s.valueBlock.value).join('; ') ?? '';
    const failure = [bits.join(', '), text.slice(0, 200)].filter((s) => s !== '').join(': ') || 'no reason given';
    return { granted: false, status, failure };
  }
  if (!resp.timeStampToken) throw new TsaFormatError('tsa_bad_response', `status ${status} without a timeStampToken`, field);
  return { granted: true, status, token: new Uint8Array(resp.timeStampToken.toSchema().toBER(false)) };
}

function failureNames(bits: asn1js.BitString): string[] {
  const view = bits.valueBlock.valueHexView;
  const names: string[] = [];
  for (let bit = 0; bit < view.length * 8 && bit < 64; bit++) {
    if ((view[bit >> 3]! >> (7 - (bit & 7))) & 1) names.push(FAILURE_BITS[bit] ?? `bit ${bit}`);
  }
  return names;
}

/** Parses a DER `ContentInfo` (the token's outer layer), for the checker. */
export function decodeContentInfo(der: Uint8Array, field: string): ContentInfo {
  const schema = parseWhole(der, 'ContentInfo', 'tsa_bad_token', field);
  try {
    return new ContentInfo({ schema });
  } catch (err) {
    throw new TsaFormatError('tsa_bad_token', `not a DER ContentInfo (${(err as Error).message})`, field);
  }
}
