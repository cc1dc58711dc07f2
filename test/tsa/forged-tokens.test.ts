/**
 * Tokens our checker must refuse, each made for real (the dev TSA's responder signing with a
 * broken certificate, or a sound token altered or checked against the wrong thing): other
 * imprint, another checkpoint's body, an expired TSA certificate, the timeStamping EKU
 * missing, non-critical or replaced, no ESSCertID binding, a CA the caller did not give,
 * a tampered signature or TSTInfo, a wrong nonce. openssl refuses the broken certificates too.
 */
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey, parseNote } from '../../src/core/log/note.js';
import {
  checkCheckpointTimestamps, checkTimeStampToken, decodeTimeStampResponse, encodeTimeStampRequest, nonceFromRandom,
  parseTsaTrustAnchors, TsaFormatError, type TsaTrustAnchors,
} from '../../src/core/tsa/index.js';
import { makeDevCa, makeDevTsaCertificate, TsaResponder, type DevCertificate, type ResponderOptions, type TsaCertificateOptions } from '../../src/dev/tsa/index.js';
import { tempDir } from '../helpers/harness.js';
import { opensslVerifyToken } from './openssl-tsa-wrapper.js';

const dir = tempDir('tsa-forged');
const { signer } = generateSignerKey('example.com/aer1');
const checkpoint = (size: number): string =>
  parseNote(signCheckpoint({ origin: 'example.com/aer1', size, root: createHash('sha256').update(`root ${size}`).digest(), extensions: [] }, signer)).text;
const bodyA = checkpoint(10);
const bodyB = checkpoint(11);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const NONCE = nonceFromRandom(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
let ca: DevCertificate;
let anchors: TsaTrustAnchors;
let good: Uint8Array;

async function tokenFrom(cert: TsaCertificateOptions, opts: ResponderOptions = {}, body = bodyA): Promise<Uint8Array> {
  const tsa = await makeDevTsaCertificate(ca, cert);
  const answer = decodeTimeStampResponse(await new TsaResponder(tsa, opts).respond(encodeTimeStampRequest(bytes(body), NONCE)));
  if (!answer.granted) throw new Error(answer.failure);
  return answer.token;
}

const check = async (token: Uint8Array, body = bodyA, trust = anchors) =>
  (await checkCheckpointTimestamps(body, [{ url: 'http://127.0.0.1:1/', token: Buffer.from(token).toString('base64') }], trust))[0]!;

beforeAll(async () => {
  ca = await makeDevCa();
  writeFileSync(join(dir, 'ca.pem'), ca.pem);
  anchors = parseTsaTrustAnchors(ca.pem);
  good = await tokenFrom({});
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('forged and misapplied tokens', () => {
  it('the sound token passes (so each refusal below is the forgery\'s doing)', async () => {
    expect(await check(good)).toMatchObject({ status: 'PASS' });
    expect((await opensslVerifyToken(dir, good, bytes(bodyA), join(dir, 'ca.pem'), 'good')).ok).toBe(true);
  });

  it('a token for another checkpoint\'s body: FAIL, the imprint is not this body\'s', async () => {
    const r = await check(good, bodyB);
    expect(r).toMatchObject({ status: 'FAIL', detail: 'the message imprint is not the SHA-256 of this data: the token time-stamps something else' });
  });

  it('other imprint (the token is for bytes that are not a checkpoint at all): FAIL', async () => {
    const r = await check(good, 'example.com/aer1\n10\nAAAA\n');
    expect(r.status).toBe('FAIL');
    expect(r.detail).toMatch(/message imprint is not the SHA-256/);
  });

  it('an expired TSA certificate (not valid at genTime): FAIL, and openssl refuses it too', async () => {
    const day = 86_400_000;
    const token = await tokenFrom({ notBefore: new Date(Date.now() - 10 * day), notAfter: new Date(Date.now() - day) });
    const r = await check(token);
    expect(r.status).toBe('FAIL');
    expect(r.detail).toMatch(/^the TSA certificate is not valid at genTime .* \(valid .* to .*\)$/);
    expect((await opensslVerifyToken(dir, token, bytes(bodyA), join(dir, 'ca.pem'), 'expired')).ok).toBe(false);
  });

  it.each([
    ['none', /^the TSA certificate has no extendedKeyUsage extension/],
    ['non-critical', /^the TSA certificate's extendedKeyUsage is not critical$/],
    ['codeSigning', /^the TSA certificate's extendedKeyUsage is \[1\.3\.6\.1\.5\.5\.7\.3\.3\], not timeStamping alone$/],
  ] as const)('a TSA certificate with EKU %s: FAIL, and openssl refuses it too', async (eku, detail) => {
    const token = await tokenFrom({ eku });
    const r = await check(token);
    expect(r.status).toBe('FAIL');
    expect(r.detail).toMatch(detail);
    expect((await opensslVerifyToken(dir, token, bytes(bodyA), join(dir, 'ca.pem'), `eku-${eku}`)).ok).toBe(false);
  });

  it('no signingCertificate(V2) attribute binding the certificate: FAIL', async () => {
    const r = await check(await tokenFrom({}, { essCertId: 'none' }));
    expect(r).toMatchObject({ status: 'FAIL', detail: 'no signingCertificate or signingCertificateV2 attribute binds the signer certificate' });
  });

  it('ESSCertID (v1, SHA-1) is accepted like v2', async () => {
    expect(await check(await tokenFrom({}, { essCertId: 'v1' }))).toMatchObject({ status: 'PASS' });
  });

  it('a CA the caller did not give: untrusted, never PASS; no CA at all: untrusted', async () => {
    const other = parseTsaTrustAnchors((await makeDevCa('another CA')).pem);
    const r = await check(good, bodyA, other);
    expect(r.status).toBe('untrusted');
    expect(r.detail).toMatch(/^TSA not trusted: the certificate of .* does not chain to a TSA CA given at genTime/);
    expect((await check(good, bodyA, { certificates: [] })).status).toBe('untrusted');
  });

  it('a TSA certificate issued by a certificate that is not a CA (another TSA\'s): untrusted, and openssl refuses it too', async () => {
    const notACa = await makeDevTsaCertificate(ca, { name: 'a TSA posing as a CA' });
    const tsa = await makeDevTsaCertificate(notACa);
    // the token carries the whole path: TSA ← the non-CA ← the CA the caller gave
    const answer = decodeTimeStampResponse(await new TsaResponder(tsa, { chain: [notACa] }).respond(encodeTimeStampRequest(bytes(bodyA), NONCE)));
    if (!answer.granted) throw new Error(answer.failure);
    const r = await checkTimeStampToken(answer.token, { data: bytes(bodyA), trustAnchors: anchors });
    expect(r.status).toBe('untrusted');
    expect(r.detail).toMatch(/does not chain to a TSA CA given at genTime \(.*not a CA certificate.*\)/);
    expect((await opensslVerifyToken(dir, answer.token, bytes(bodyA), join(dir, 'ca.pem'), 'not-a-ca')).ok).toBe(false);
  });

  it('bytes after the token: FAIL (one token, one reading)', async () => {
    const r = await check(new Uint8Array([...good, 0x00]));
    expect(r).toMatchObject({ status: 'FAIL', detail: 'anchor_proof.log.timestamps[0].token: 1 bytes after the ContentInfo' });
  });

  it('a tampered signature: FAIL', async () => {
    const token = good.slice();
    token[token.length - 1]! ^= 0x01; // the SignerInfo's signature is the token's last field
    expect(await check(token)).toMatchObject({ status: 'FAIL', detail: 'the CMS signature does not verify with the signer certificate' });
  });

  it('a tampered TSTInfo (the genTime moved a year): FAIL, its digest no longer matches', async () => {
    const token = Buffer.from(good);
    const year = String(new Date().getUTCFullYear());
    const at = token.indexOf(Buffer.from(year + (new Date().getUTCMonth() + 1).toString().padStart(2, '0')));
    expect(at).toBeGreaterThan(0);
    token.write(String(Number(year) - 1), at, 'latin1');
    const r = await check(token);
    expect(r.status).toBe('FAIL');
    expect(r.detail).toBe('the messageDigest attribute is not the digest of the TSTInfo');
  });

  it('a wrong nonce (client side): FAIL', async () => {
    const r = await checkTimeStampToken(good, { data: bytes(bodyA), nonce: nonceFromRandom(new Uint8Array(8).fill(9)), trustAnchors: anchors });
    expect(r.status).toBe('FAIL');
    expect(r.detail).toMatch(/^the token's nonce 0102030405060708 is not the one we sent \(0909090909090909\)$/);
  });

  it('a genTime in the future of the checker\'s clock: FAIL', async () => {
    const r = (await checkCheckpointTimestamps(bodyA, [{ url: 'u', token: Buffer.from(good).toString('base64') }], anchors, new Date(Date.now() - 3_600_000)))[0]!;
    expect(r.status).toBe('FAIL');
    expect(r.detail).toMatch(/is in the future/);
  });

  it('garbage and broken lists: a FAIL naming the field for a token, a TsaFormatError naming the field for the list', async () => {
    const [notB64] = await checkCheckpointTimestamps(bodyA, [{ url: 'u', token: 'not base64!' }], anchors);
    expect(notB64).toMatchObject({ status: 'FAIL', genTime: null });
    expect(notB64!.detail).toMatch(/^anchor_proof\.log\.timestamps\[0\]\.token: /);
    const [junk] = await checkCheckpointTimestamps(bodyA, [{ url: 'u', token: Buffer.from('junk').toString('base64') }], anchors);
    expect(junk!.status).toBe('FAIL');
    expect(junk!.detail).toMatch(/^anchor_proof\.log\.timestamps\[0\]\.token: not a DER ContentInfo/);
    await expect(checkCheckpointTimestamps(bodyA, {}, anchors)).rejects.toThrow(TsaFormatError);
    await expect(checkCheckpointTimestamps(bodyA, [{ url: 'u', token: 'AA==', extra: 1 }], anchors)).rejects.toThrow(/timestamps\[0\]: unknown member "extra"/);
    await expect(checkCheckpointTimestamps(bodyA, Array(33).fill({ url: 'u', token: 'AA==' }), anchors)).rejects.toThrow(/33 tokens, over 32/);
  });

  it('a PEM bundle with a key or no certificate is refused, naming the block', () => {
    expect(() => parseTsaTrustAnchors('nothing here')).toThrow(/tsa-ca: no "-----BEGIN CERTIFICATE-----" block/);
    expect(() => parseTsaTrustAnchors(`${ca.pem}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`)).toThrow(/tsa-ca\[1\]: a PRIVATE KEY block/);
  });
});
