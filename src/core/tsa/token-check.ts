/**
 * Checks one RFC 3161 `TimeStampToken` (a CMS SignedData over a TSTInfo) against the data
 * it should time-stamp and the trust anchors the caller gives. Pure apart from WebCrypto
 * (signature checks), so the browser verifier runs it too. Results are values: PASS, FAIL
 * (the token is broken or not for this data) or untrusted (sound, but its chain does not
 * reach a CA the caller gave, or the caller gave none).
 */
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js';
import { sha1 } from '@noble/hashes/legacy.js';
import * as asn1js from 'asn1js';
import {
  Certificate, CertificateChainValidationEngine, GeneralNames, IssuerAndSerialNumber, SignedData, SignerInfo, TSTInfo, getCrypto,
} from 'pkijs';
import { TsaFormatError } from './errors.js';
import { OID_SHA256, decodeContentInfo, parseWhole } from './rfc3161.js';
import type { TsaTrustAnchors } from './trust-anchors.js';

const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const OID_TST_INFO = '1.2.840.113549.1.9.16.1.4';
const OID_CONTENT_TYPE = '1.2.840.113549.1.9.3';
const OID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const OID_RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
const OID_SIGNING_CERTIFICATE = '1.2.840.113549.1.9.16.2.12';
const OID_SIGNING_CERTIFICATE_V2 = '1.2.840.113549.1.9.16.2.47';
const OID_EXT_KEY_USAGE = '2.5.29.37';
const OID_KP_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';
/** A token's genTime may be this far ahead of the checker's clock (clocks drift). */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;
/** A token larger than this is refused before parsing. */
export const MAX_TOKEN_BYTES = 64 * 1024;

const HASHES: Record<string, { name: string; fn: (data: Uint8Array) => Uint8Array }> = {
  '1.3.14.3.2.26': { name: 'SHA-1', fn: sha1 },
  [OID_SHA256]: { name: 'SHA-256', fn: sha256 },
  '2.16.840.1.101.3.4.2.2': { name: 'SHA-384', fn: sha384 },
  '2.16.840.1.101.3.4.2.3': { name: 'SHA-512', fn: sha512 },
};

const NAME_ATTRIBUTES: Record<string, string> = {
  '2.5.4.3': 'CN', '2.5.4.6': 'C', '2.5.4.7': 'L', '2.5.4.8': 'ST', '2.5.4.10': 'O', '2.5.4.11': 'OU',
};

export type TimestampStatus = 'PASS' | 'FAIL' | 'untrusted';

export interface TimestampCheck {
  readonly status: TimestampStatus;
  /** The TSA's time (TSTInfo genTime), ISO 8601, when the token parsed that far. */
  readonly genTime: string | null;
  /** The signer certificate's subject (`CN=…, O=…`), when found. */
  readonly tsa: string | null;
  /** The token's serial number, hex. */
  readonly serial: string | null;
  /** One sentence: what passed, or the first check that did not. */
  readonly detail: string;
}

export interface TokenExpectations {
  /** The bytes the token must time-stamp (a checkpoint's note body). */
  readonly data: Uint8Array;
  /** The nonce we sent (client side); the verifier has none to compare. */
  readonly nonce?: Uint8Array;
  readonly trustAnchors: TsaTrustAnchors;
  /** The checker's clock, for the genTime-not-in-the-future check (default: now). */
  readonly now?: Date;
}

class CheckFailed extends Error {}

const fail = (detail: string): never => {
  throw new CheckFailed(detail);
};

const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** `CN=…, O=…` for a certificate's subject (or issuer); attributes we do not name are shown as OIDs. */
export function formatName(name: Certificate['subject']): string {
  return name.typesAndValues
    .map((tv) => `${NAME_ATTRIBUTES[tv.type] ?? tv.type}=${String((tv.value.valueBlock as { value?: unknown }).value ?? '')}`)
    .join(', ');
}

/** The DER of a certificate as it came (pkijs keeps the signed TBS bytes as read). */
function certificateDer(cert: Certificate): Uint8Array {
  return new Uint8Array(cert.toSchema(false).toBER(false));
}

/** Checks a DER `TimeStampToken`; parse problems and failed checks are FAIL results, never throws on token content. */
export async function checkTimeStampToken(token: Uint8Array, expect: TokenExpectations, field = 'token'): Promise<TimestampCheck> {
  const seen: { genTime: string | null; tsa: string | null; serial: string | null } = { genTime: null, tsa: null, serial: null };
  try {
    const detail = await runChecks(token, expect, field, seen);
    return { status: detail.trusted ? 'PASS' : 'untrusted', ...seen, detail: detail.text };
  } catch (err) {
    if (err instanceof CheckFailed) return { status: 'FAIL', ...seen, detail: err.message };
    if (err instanceof TsaFormatError) return { status: 'FAIL', ...seen, detail: err.message };
    return { status: 'FAIL', ...seen, detail: `${field}: unreadable token (${(err as Error).message})` };
  }
}

async function runChecks(
  token: Uint8Array,
  expect: TokenExpectations,
  field: string,
  seen: { genTime: string | null; tsa: string | null; serial: string | null },
): Promise<{ trusted: boolean; text: string }> {
  if (token.length > MAX_TOKEN_BYTES) fail(`${field}: ${token.length} bytes is over ${MAX_TOKEN_BYTES}`);
  const contentInfo = decodeContentInfo(token, field);
  if (contentInfo.contentType !== OID_SIGNED_DATA) fail(`${field}: content type ${contentInfo.contentType}, not CMS SignedData`);
  let signed: SignedData;
  try {
    signed = new SignedData({ schema: contentInfo.content });
  } catch (err) {
    return fail(`${field}: not a CMS SignedData (${(err as Error).message})`);
  }
  if (signed.encapContentInfo.eContentType !== OID_TST_INFO) fail(`${field}: encapsulated content ${signed.encapContentInfo.eContentType}, not TSTInfo`);
  const eContent = signed.encapContentInfo.eContent;
  if (!eContent) return fail(`${field}: no TSTInfo in the token`);
  let tst: TSTInfo;
  try {
    tst = new TSTInfo({ schema: parseWhole(new Uint8Array(eContent.getValue()), 'TSTInfo', 'tsa_bad_token', field) });
  } catch (err) {
    if (err instanceof TsaFormatError) throw err;
    return fail(`${field}: the TSTInfo does not parse (${(err as Error).message})`);
  }
  seen.genTime = tst.genTime.toISOString();
  seen.serial = hex(tst.serialNumber.valueBlock.valueHexView);

  // The imprint: SHA-256 of the data, as we asked.
  const imprintAlg = tst.messageImprint.hashAlgorithm.algorithmId;
  if (imprintAlg !== OID_SHA256) fail(`the message imprint uses ${HASHES[imprintAlg]?.name ?? imprintAlg}, not SHA-256`);
  if (!equalBytes(new Uint8Array(tst.messageImprint.hashedMessage.valueBlock.valueHexView), sha256(expect.data))) {
    fail('the message imprint is not the SHA-256 of this data: the token time-stamps something else');
  }
  if (expect.nonce !== undefined) {
    const got = tst.nonce ? new Uint8Array(tst.nonce.valueBlock.valueHexView) : undefined;
    if (got === undefined) fail('the token carries no nonce, we sent one');
    else if (!equalBytes(got, expect.nonce)) fail(`the token's nonce ${hex(got)} is not the one we sent (${hex(expect.nonce)})`);
  }
  const now = expect.now ?? new Date();
  if (tst.genTime.getTime() > now.getTime() + MAX_CLOCK_SKEW_MS) fail(`genTime ${seen.genTime} is in the future (now ${now.toISOString()})`);

  // The CMS signature over the signed attributes, whose messageDigest covers the TSTInfo.
  if (signed.signerInfos.length !== 1) fail(`${signed.signerInfos.length} signers, a time-stamp token has exactly one`);
  const signerInfo = signed.signerInfos[0]!;
  const signer = findSigner(signed, signerInfo);
  seen.tsa = formatName(signer.subject);
  await checkSignature(signerInfo, signer, new Uint8Array(eContent.getValue()));
  const attrs = signerInfo.signedAttrs?.attributes ?? [];
  const contentType = attrs.find((a) => a.type === OID_CONTENT_TYPE)?.values[0];
  if (!(contentType instanceof asn1js.ObjectIdentifier) || contentType.valueBlock.toString() !== OID_TST_INFO) {
    fail('the signed contentType attribute is not id-ct-TSTInfo');
  }
  checkSigningCertificate(attrs, signer);
  checkTsaCertificate(signer, tst.genTime);

  // The chain, at genTime, to a CA the caller gave.
  const anchors = expect.trustAnchors.certificates;
  const issuer = formatName(signer.issuer);
  if (anchors.length === 0) return { trusted: false, text: `TSA not trusted: no TSA CA given (give --tsa-ca); issued by ${issuer}` };
  const others = (signed.certificates ?? []).filter((c): c is Certificate => c instanceof Certificate && c !== signer);
  const engine = new CertificateChainValidationEngine({ trustedCerts: [...anchors], certs: [...others, signer], checkDate: tst.genTime });
  let chain: Awaited<ReturnType<CertificateChainValidationEngine['verify']>>;
  try {
    chain = await engine.verify();
  } catch (err) {
    chain = { result: false, resultCode: -1, resultMessage: (err as { resultMessage?: string }).resultMessage ?? String(err) };
  }
  if (!chain.result) return { trusted: false, text: `TSA not trusted: the certificate of ${seen.tsa} does not chain to a TSA CA given at genTime (${chain.resultMessage})` };
  return { trusted: true, text: `time-stamped at ${seen.genTime} by ${seen.tsa}, chained to ${formatName(chain.certificatePath?.at(-1)?.subject ?? signer.issuer)}` };
}

/** The signer certificate among the token's certificates, by issuer and serial number or by subject key identifier. */
function findSigner(signed: SignedData, signerInfo: SignerInfo): Certificate {
  const certs = (signed.certificates ?? []).filter((c): c is Certificate => c instanceof Certificate);
  const sid: unknown = signerInfo.sid;
  const found = sid instanceof IssuerAndSerialNumber
    ? certs.find((c) => c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber))
    : certs.find((c) => {
        const ski = c.extensions?.find((e) => e.extnID === '2.5.29.14')?.parsedValue;
        const want = (sid as { valueBlock?: { valueHexView?: Uint8Array; value?: { valueBlock: { valueHexView: Uint8Array } }[] } }).valueBlock;
        const id = want?.valueHexView?.length ? want.valueHexView : want?.value?.[0]?.valueBlock.valueHexView;
        return ski instanceof asn1js.OctetString && id !== undefined && equalBytes(new Uint8Array(ski.valueBlock.valueHexView), id);
      });
  if (!found) return fail('the signer certificate is not in the token (was it asked for with certReq?)');
  return found;
}

/** CMS (RFC 5652 §5.4): messageDigest covers the TSTInfo, the signature covers the DER SET of signed attributes. */
async function checkSignature(signerInfo: SignerInfo, signer: Certificate, tstInfoDer: Uint8Array): Promise<void> {
  const attrs = signerInfo.signedAttrs;
  if (!attrs) return fail('the signer has no signed attributes');
  const digestOid = signerInfo.digestAlgorithm.algorithmId;
  const hash = HASHES[digestOid];
  if (!hash || hash.name === 'SHA-1') return fail(`the signer's digest algorithm ${hash?.name ?? digestOid} is not accepted (SHA-256, SHA-384, SHA-512)`);
  const digests = attrs.attributes.filter((a) => a.type === OID_MESSAGE_DIGEST);
  const digest = digests[0]?.values[0];
  if (digests.length !== 1 || !(digest instanceof asn1js.OctetString)) return fail('the signed attributes hold no single messageDigest');
  if (!equalBytes(new Uint8Array(digest.valueBlock.valueHexView), hash.fn(tstInfoDer))) fail('the messageDigest attribute is not the digest of the TSTInfo');
  let valid: boolean;
  try {
    const engine = getCrypto(true);
    valid = signerInfo.signatureAlgorithm.algorithmId === OID_RSA_ENCRYPTION
      ? await engine.verifyWithPublicKey(attrs.encodedValue, signerInfo.signature, signer.subjectPublicKeyInfo, signerInfo.signatureAlgorithm, hash.name)
      : await engine.verifyWithPublicKey(attrs.encodedValue, signerInfo.signature, signer.subjectPublicKeyInfo, signerInfo.signatureAlgorithm);
  } catch (err) {
    return fail(`the CMS signature does not check (${(err as Error).message})`);
  }
  if (!valid) fail('the CMS signature does not verify with the signer certificate');
}

/** RFC 5035 / RFC 2634: the first ESSCertID(v2) of the signed signingCertificate(V2) attribute names the signer certificate. */
function checkSigningCertificate(attrs: readonly { type: string; values: unknown[] }[], signer: Certificate): void {
  const v2 = attrs.find((a) => a.type === OID_SIGNING_CERTIFICATE_V2);
  const v1 = attrs.find((a) => a.type === OID_SIGNING_CERTIFICATE);
  const attr = v2 ?? v1;
  if (!attr) return fail('no signingCertificate or signingCertificateV2 attribute binds the signer certificate');
  const which = v2 ? 'ESSCertIDv2' : 'ESSCertID';
  const value = attr.values[0];
  const certs = value instanceof asn1js.Sequence ? value.valueBlock.value[0] : undefined;
  const first = certs instanceof asn1js.Sequence ? certs.valueBlock.value[0] : undefined;
  if (!(first instanceof asn1js.Sequence)) return fail(`the ${which} attribute does not parse`);
  const parts = [...first.valueBlock.value];
  let hashOid = v2 ? OID_SHA256 : '1.3.14.3.2.26';
  if (v2 && parts[0] instanceof asn1js.Sequence) {
    const oid = parts.shift()!.valueBlock as unknown as { value: unknown[] };
    const id = oid.value[0];
    if (!(id instanceof asn1js.ObjectIdentifier)) return fail(`the ${which} hash algorithm does not parse`);
    hashOid = id.valueBlock.toString();
  }
  const certHash = parts.shift();
  if (!(certHash instanceof asn1js.OctetString)) return fail(`the ${which} certHash does not parse`);
  const hash = HASHES[hashOid];
  if (!hash) return fail(`the ${which} uses an unknown hash ${hashOid}`);
  if (!equalBytes(new Uint8Array(certHash.valueBlock.valueHexView), hash.fn(certificateDer(signer)))) {
    fail(`the ${which} certHash is not the ${hash.name} of the signer certificate`);
  }
  const issuerSerial = parts.shift();
  if (issuerSerial instanceof asn1js.Sequence) {
    const [names, serial] = issuerSerial.valueBlock.value;
    if (!(serial instanceof asn1js.Integer) || !serial.isEqual(signer.serialNumber)) fail(`the ${which} issuerSerial names another serial number`);
    let general: GeneralNames;
    try {
      general = new GeneralNames({ schema: names });
    } catch {
      return fail(`the ${which} issuerSerial issuer does not parse`);
    }
    const dn = general.names.find((n) => n.type === 4);
    if (!dn || !signer.issuer.isEqual(dn.value)) fail(`the ${which} issuerSerial names another issuer`);
  }
}

/** RFC 3161 §2.3: the TSA certificate has exactly one extended key usage, timeStamping, marked critical; and it is valid at genTime. */
function checkTsaCertificate(cert: Certificate, genTime: Date): void {
  const eku = cert.extensions?.find((e) => e.extnID === OID_EXT_KEY_USAGE);
  if (!eku) return fail('the TSA certificate has no extendedKeyUsage extension (timeStamping is required)');
  if (eku.critical !== true) fail('the TSA certificate\'s extendedKeyUsage is not critical');
  const purposes = (eku.parsedValue as { keyPurposes?: string[] } | undefined)?.keyPurposes ?? [];
  if (purposes.length !== 1 || purposes[0] !== OID_KP_TIME_STAMPING) {
    fail(`the TSA certificate's extendedKeyUsage is [${purposes.join(', ')}], not timeStamping alone`);
  }
  const from = cert.notBefore.value;
  const to = cert.notAfter.value;
  if (genTime < from || genTime > to) {
    fail(`the TSA certificate is not valid at genTime ${genTime.toISOString()} (valid ${from.toISOString()} to ${to.toISOString()})`);
  }
}
