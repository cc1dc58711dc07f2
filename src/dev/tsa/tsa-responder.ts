/**
 * The dev TSA's answer to a `TimeStampReq`: a `TimeStampResp` whose token is a CMS
 * SignedData over a TSTInfo (policy, the request's imprint and nonce, a serial number,
 * genTime in whole seconds), signed with signed attributes contentType, messageDigest and
 * signingCertificateV2 (ESSCertIDv2, SHA-256, with issuerSerial), and the TSA certificate
 * attached when the request asks for it. Options make broken tokens for tests.
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import * as asn1js from 'asn1js';
import {
  Attribute, ContentInfo, EncapsulatedContentInfo, GeneralName, GeneralNames, IssuerAndSerialNumber, MessageImprint, PKIStatusInfo,
  SignedAndUnsignedAttributes, SignedData, SignerInfo, TSTInfo, TimeStampReq, TimeStampResp,
} from 'pkijs';
import { OID_SHA256 } from '../../core/tsa/index.js';
import type { DevCertificate } from './dev-pki.js';

const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const OID_TST_INFO = '1.2.840.113549.1.9.16.1.4';
/** The dev TSA's policy: the example arc (RFC 9384 reserves 2.999 for examples). */
export const DEV_TSA_POLICY = '2.999.3161.1';

export interface ResponderOptions {
  /** The TSA's clock (default: now). */
  readonly now?: () => Date;
  /** `v2` (default), `v1` (ESSCertID, SHA-1), or `none`: which attribute binds the certificate. */
  readonly essCertId?: 'v1' | 'v2' | 'none';
  /** Certificates attached after the TSA's (a chain's intermediates), when the request asks for certificates. */
  readonly chain?: readonly DevCertificate[];
}

const ab = (b: Uint8Array): ArrayBuffer => new Uint8Array(b).buffer;

function rejection(failBit: number, text: string): Uint8Array {
  const bits = new Uint8Array(4);
  bits[failBit >> 3] = 0x80 >> (failBit & 7);
  const status = new PKIStatusInfo({
    status: 2,
    statusStrings: [new asn1js.Utf8String({ value: text })],
    failInfo: new asn1js.BitString({ valueHex: ab(bits.subarray(0, (failBit >> 3) + 1)), unusedBits: 7 - (failBit & 7) }),
  });
  return new Uint8Array(new TimeStampResp({ status }).toSchema().toBER(false));
}

function signingCertificateAttribute(tsa: DevCertificate, version: 'v1' | 'v2'): Attribute {
  const issuerSerial = new asn1js.Sequence({
    value: [
      new GeneralNames({ names: [new GeneralName({ type: 4, value: tsa.certificate.issuer })] }).toSchema(),
      new asn1js.Integer({ valueHex: ab(new Uint8Array(tsa.certificate.serialNumber.valueBlock.valueHexView)) }),
    ],
  });
  // ESSCertIDv2's hashAlgorithm is DEFAULT sha256, so DER leaves it out.
  const hash = version === 'v2' ? sha256(tsa.der) : sha1(tsa.der);
  const essCertId = new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: ab(hash) }), issuerSerial] });
  return new Attribute({
    type: version === 'v2' ? '1.2.840.113549.1.9.16.2.47' : '1.2.840.113549.1.9.16.2.12',
    values: [new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertId] })] })],
  });
}

export class TsaResponder {
  private serial = BigInt(Date.now()) * 1000n;

  constructor(
    private readonly tsa: DevCertificate,
    private readonly opts: ResponderOptions = {},
  ) {}

  /** Answers one DER `TimeStampReq` with a DER `TimeStampResp` (a rejection for a request it cannot serve). */
  async respond(requestDer: Uint8Array): Promise<Uint8Array> {
    let req: TimeStampReq;
    try {
      req = TimeStampReq.fromBER(ab(requestDer));
    } catch {
      return rejection(5, 'not a DER TimeStampReq');
    }
    if (req.version !== 1) return rejection(2, `version ${req.version}, expected 1`);
    if (req.messageImprint.hashAlgorithm.algorithmId !== OID_SHA256 || req.messageImprint.hashedMessage.valueBlock.valueHexView.length !== 32) {
      return rejection(0, 'only SHA-256 message imprints');
    }
    if (req.reqPolicy !== undefined && req.reqPolicy !== DEV_TSA_POLICY) return rejection(15, `only policy ${DEV_TSA_POLICY}`);
    if (req.extensions?.length) return rejection(16, 'no extensions are supported');

    const now = this.opts.now?.() ?? new Date();
    const genTime = new Date(Math.floor(now.getTime() / 1000) * 1000);
    this.serial += 1n;
    const tst = new TSTInfo({
      version: 1,
      policy: DEV_TSA_POLICY,
      messageImprint: new MessageImprint({ hashAlgorithm: req.messageImprint.hashAlgorithm, hashedMessage: req.messageImprint.hashedMessage }),
      serialNumber: asn1js.Integer.fromBigInt(this.serial),
      genTime,
      ...(req.nonce ? { nonce: req.nonce } : {}),
    });
    const tstDer = new Uint8Array(tst.toSchema().toBER(false));

    const attributes = [
      new Attribute({ type: '1.2.840.113549.1.9.3', values: [new asn1js.ObjectIdentifier({ value: OID_TST_INFO })] }),
      new Attribute({ type: '1.2.840.113549.1.9.4', values: [new asn1js.OctetString({ valueHex: ab(sha256(tstDer)) })] }),
    ];
    const ess = this.opts.essCertId ?? 'v2';
    if (ess !== 'none') attributes.push(signingCertificateAttribute(this.tsa, ess));
    const signed = new SignedData({
      version: 3,
      encapContentInfo: new EncapsulatedContentInfo({ eContentType: OID_TST_INFO, eContent: new asn1js.OctetString({ valueHex: ab(tstDer) }) }),
      signerInfos: [
        new SignerInfo({
          version: 1,
          sid: new IssuerAndSerialNumber({ issuer: this.tsa.certificate.issuer, serialNumber: this.tsa.certificate.serialNumber }),
          signedAttrs: new SignedAndUnsignedAttributes({ type: 0, attributes }),
        }),
      ],
      ...(req.certReq ? { certificates: [this.tsa.certificate, ...(this.opts.chain ?? []).map((c) => c.certificate)] } : {}),
    });
    await signed.sign(this.tsa.privateKey, 0, 'SHA-256');
    const token = new ContentInfo({ contentType: OID_SIGNED_DATA, content: signed.toSchema(true) });
    return new Uint8Array(new TimeStampResp({ status: new PKIStatusInfo({ status: 0 }), timeStampToken: token }).toSchema().toBER(false));
  }
}
