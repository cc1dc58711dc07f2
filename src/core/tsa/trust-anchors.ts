/**
 * The TSA trust anchors a caller gives (`--tsa-ca FILE`): a PEM bundle of CA certificates.
 * Parsed once at the edge into certificates the checker trusts; the proof never brings its own.
 */
import { Certificate } from 'pkijs';
import { TsaFormatError } from './errors.js';
import { parseWhole } from './rfc3161.js';

/** A bundle with more certificates than this is refused (a CA list, not a trust store dump). */
export const MAX_TRUST_ANCHORS = 256;
const MAX_PEM_BYTES = 4 * 1024 * 1024;
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n]*?)-----END \1-----/g;

export interface TsaTrustAnchors {
  readonly certificates: readonly Certificate[];
}

export const NO_TSA_TRUST_ANCHORS: TsaTrustAnchors = { certificates: [] };

/** The `CERTIFICATE` blocks of a PEM text; other blocks (keys, CRLs) are refused, naming the block. */
export function parseTsaTrustAnchors(pem: string, field = 'tsa-ca'): TsaTrustAnchors {
  if (pem.length > MAX_PEM_BYTES) throw new TsaFormatError('tsa_too_large', `${pem.length} characters is over ${MAX_PEM_BYTES}`, field);
  const certificates: Certificate[] = [];
  let index = 0;
  for (const m of pem.matchAll(PEM_BLOCK)) {
    const where = `${field}[${index}]`;
    if (m[1] !== 'CERTIFICATE') throw new TsaFormatError('tsa_bad_pem', `a ${m[1]} block, only CERTIFICATE blocks are trust anchors`, where);
    if (certificates.length === MAX_TRUST_ANCHORS) throw new TsaFormatError('tsa_too_large', `more than ${MAX_TRUST_ANCHORS} certificates`, field);
    const der = Buffer.from(m[2]!.replace(/\s+/g, ''), 'base64');
    certificates.push(parseCertificate(der, where));
    index++;
  }
  if (certificates.length === 0) throw new TsaFormatError('tsa_bad_pem', 'no "-----BEGIN CERTIFICATE-----" block', field);
  return { certificates };
}

/** A DER X.509 certificate; trailing bytes or another structure are refused. */
export function parseCertificate(der: Uint8Array, field: string): Certificate {
  const schema = parseWhole(der, 'X.509 certificate', 'tsa_bad_pem', field);
  try {
    return new Certificate({ schema });
  } catch (err) {
    throw new TsaFormatError('tsa_bad_pem', `not an X.509 certificate (${(err as Error).message})`, field);
  }
}
