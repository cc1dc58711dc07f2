/**
 * A TSA that is not ours: Debian's `openssl ts -reply` with its own CA and RSA TSA
 * certificate (made by openssl here), behind the test's loopback HTTP wrapper. Our client
 * talks to it and our checker accepts its tokens (ESSCertID with SHA-1, openssl's default,
 * and ESSCertIDv2), under the CA the caller gives and only then.
 */
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TsaClient } from '../../src/adapters/tsa/index.js';
import { checkCheckpointTimestamps, parseTsaTrustAnchors } from '../../src/core/tsa/index.js';
import { makeDevCa } from '../../src/dev/tsa/index.js';
import { tempDir } from '../helpers/harness.js';
import { opensslVerifyToken, startOpensslTsa, type OpensslTsa } from './openssl-tsa-wrapper.js';

const dir = tempDir('tsa-openssl');
const noteBody = 'example.com/aer1\n42\nqUiQTy8PR5uPgZdpSzAYSw0u0cHNKh7A+4XSmaGSpEc=\n';
const body = new TextEncoder().encode(noteBody);
let foreign: OpensslTsa;

beforeAll(async () => {
  foreign = await startOpensslTsa(dir);
}, 30_000);
afterAll(async () => {
  await foreign.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('our client and checker with openssl ts -reply as the TSA', () => {
  it.each(['v1', 'v2'] as const)('ESSCertID %s: PASS under the openssl CA, with genTime and the TSA named', async (ess) => {
    const anchors = parseTsaTrustAnchors(readFileSync(foreign.caFile, 'utf8'));
    const got = await new TsaClient(foreign.url(ess), { trustAnchors: anchors }).timestamp(body);
    expect(got.check).toMatchObject({ status: 'PASS', tsa: 'O=openssl test, CN=openssl test TSA' });
    // the token binds its certificate with the attribute asked for (OID 1.2.840.113549.1.9.16.2.12 or .47)
    const attrOid = Buffer.from(ess === 'v1' ? '060b2a864886f70d010910020c' : '060b2a864886f70d010910022f', 'hex');
    expect(Buffer.from(got.token).includes(attrOid)).toBe(true);
    expect(Math.abs(Date.parse(got.check.genTime!) - Date.now())).toBeLessThan(60_000);
    // openssl agrees on its own token, and the proof-field check says the same as the client's
    expect((await opensslVerifyToken(dir, got.token, body, foreign.caFile, `own-${ess}`)).ok).toBe(true);
    const [result] = await checkCheckpointTimestamps(noteBody, [{ url: foreign.url(ess), token: Buffer.from(got.token).toString('base64') }], anchors);
    expect(result).toMatchObject({ status: 'PASS', genTime: got.check.genTime, serial: got.check.serial });
  });

  it('the same token is "untrusted" without a CA and under a CA that did not issue it', async () => {
    const got = await new TsaClient(foreign.url('v2')).timestamp(body);
    expect(got.check.status).toBe('untrusted');
    const token = Buffer.from(got.token).toString('base64');
    const otherCa = parseTsaTrustAnchors((await makeDevCa('some other CA')).pem);
    const [result] = await checkCheckpointTimestamps(noteBody, [{ url: foreign.url('v2'), token }], otherCa);
    expect(result!.status).toBe('untrusted');
    expect(result!.detail).toMatch(/^TSA not trusted: the certificate of O=openssl test, CN=openssl test TSA does not chain to a TSA CA given/);
  });
});
