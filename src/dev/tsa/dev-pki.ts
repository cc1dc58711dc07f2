/**
 * Certificates for the dev TSA, made with pkijs and WebCrypto (ECDSA P-256): a CA and a TSA
 * certificate it issues, with the critical `timeStamping` extended key usage RFC 3161 asks
 * for. Options make the broken certificates tests need (expired, EKU missing or non-critical).
 */
import { randomBytes, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import { AttributeTypeAndValue, BasicConstraints, Certificate, ExtKeyUsage, Extension } from 'pkijs';

const KEY_ALGORITHM: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const OID_KP_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';
const OID_KP_CODE_SIGNING = '1.3.6.1.5.5.7.3.3';
const DAY_MS = 86_400_000;

export interface DevCertificate {
  readonly certificate: Certificate;
  readonly der: Uint8Array;
  readonly pem: string;
  readonly privateKey: webcrypto.CryptoKey;
}

export interface TsaCertificateOptions {
  /** The TSA certificate's common name (default `aer1-anchor dev TSA`). */
  readonly name?: string;
  /** `critical` (right), `non-critical`, `none`, or `codeSigning` (another purpose, critical). */
  readonly eku?: 'critical' | 'non-critical' | 'none' | 'codeSigning';
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

export function toPem(der: Uint8Array, label = 'CERTIFICATE'): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

function name(cn: string): AttributeTypeAndValue[] {
  return [
    new AttributeTypeAndValue({ type: '2.5.4.10', value: new asn1js.Utf8String({ value: 'aer1-anchor development' }) }),
    new AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: cn }) }),
  ];
}

/** keyUsage bits as a DER BIT STRING: `bits` is the first byte, `unused` its trailing unused bits. */
function keyUsage(bits: number, unused: number): Extension {
  const value = new asn1js.BitString({ valueHex: new Uint8Array([bits]).buffer, unusedBits: unused });
  return new Extension({ extnID: '2.5.29.15', critical: true, extnValue: value.toBER(false) });
}

async function issue(
  subject: string,
  issuer: { name: AttributeTypeAndValue[]; key: webcrypto.CryptoKey } | null,
  extensions: Extension[],
  notBefore: Date,
  notAfter: Date,
): Promise<DevCertificate> {
  const keys = (await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = new Certificate();
  cert.version = 2;
  const serial = randomBytes(12);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  cert.serialNumber = new asn1js.Integer({ valueHex: serial.buffer.slice(serial.byteOffset, serial.byteOffset + serial.length) });
  cert.subject.typesAndValues.push(...name(subject));
  cert.issuer.typesAndValues.push(...(issuer?.name ?? name(subject)));
  cert.notBefore.value = notBefore;
  cert.notAfter.value = notAfter;
  cert.extensions = extensions;
  await cert.subjectPublicKeyInfo.importKey(keys.publicKey);
  await cert.sign(issuer?.key ?? keys.privateKey, 'SHA-256');
  const der = new Uint8Array(cert.toSchema(true).toBER(false));
  return { certificate: Certificate.fromBER(der.slice().buffer), der, pem: toPem(der), privateKey: keys.privateKey };
}

/** A self-signed CA (basicConstraints cA, keyCertSign and cRLSign), valid from a day ago for ten years. */
export async function makeDevCa(cn = 'aer1-anchor dev TSA CA', now = new Date()): Promise<DevCertificate> {
  return issue(
    cn,
    null,
    [
      new Extension({ extnID: '2.5.29.19', critical: true, extnValue: new BasicConstraints({ cA: true }).toSchema().toBER(false) }),
      keyUsage(0x06, 1),
    ],
    new Date(now.getTime() - DAY_MS),
    new Date(now.getTime() + 3650 * DAY_MS),
  );
}

/** A TSA certificate issued by `ca`: digitalSignature, and (by default) the critical timeStamping EKU alone. */
export async function makeDevTsaCertificate(ca: DevCertificate, opts: TsaCertificateOptions = {}, now = new Date()): Promise<DevCertificate> {
  const extensions = [keyUsage(0x80, 7)];
  const eku = opts.eku ?? 'critical';
  if (eku !== 'none') {
    const purpose = eku === 'codeSigning' ? OID_KP_CODE_SIGNING : OID_KP_TIME_STAMPING;
    const value = new ExtKeyUsage({ keyPurposes: [purpose] }).toSchema().toBER(false);
    extensions.push(new Extension({ extnID: '2.5.29.37', critical: eku !== 'non-critical', extnValue: value }));
  }
  return issue(
    opts.name ?? 'aer1-anchor dev TSA',
    { name: ca.certificate.subject.typesAndValues, key: ca.privateKey },
    extensions,
    opts.notBefore ?? new Date(now.getTime() - DAY_MS),
    opts.notAfter ?? new Date(now.getTime() + 3650 * DAY_MS),
  );
}
