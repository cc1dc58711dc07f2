/**
 * The daemon's BIP-340 signer (src/core/nostr/bip340.ts) against independent implementations:
 * the BIP-340 test vectors (bitcoin/bips, bip-0340/test-vectors.csv at 7e8b5dfc, the four with a
 * secret key), @noble/curves' schnorr.sign byte for byte for the same auxiliary randomness, and
 * nostr-tools' verifyEvent on the events SigningKey signs. It signs without verifying after
 * (bip340.ts says why), so these are what stand between it and a signature a relay refuses.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { schnorr } from '@noble/curves/secp256k1';
import { getPublicKey, verifyEvent } from 'nostr-tools/pure';
import { bip340Key, bip340Sign } from '../../../src/core/nostr/bip340.js';
import { SigningKey, generateSecretKey } from '../../../src/core/nostr/keys.js';
import { envelopeEvent } from '../../../src/core/nostr/events.js';
import { workflowEnvelope } from './fixtures.js';

const hex = (s: string): Buffer => Buffer.from(s, 'hex');

// index, secret key, public key, aux_rand, message, signature (bip-0340/test-vectors.csv)
const VECTORS: ReadonlyArray<[number, string, string, string, string, string]> = [
  [
    0,
    '0000000000000000000000000000000000000000000000000000000000000003',
    'F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9',
    '0000000000000000000000000000000000000000000000000000000000000000',
    '0000000000000000000000000000000000000000000000000000000000000000',
    'E907831F80848D1069A5371B402410364BDF1C5F8307B0084C55F1CE2DCA821525F66A4A85EA8B71E482A74F382D2CE5EBEEE8FDB2172F477DF4900D310536C0',
  ],
  [
    1,
    'B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF',
    'DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659',
    '0000000000000000000000000000000000000000000000000000000000000001',
    '243F6A8885A308D313198A2E03707344A4093822299F31D0082EFA98EC4E6C89',
    '6896BD60EEAE296DB48A229FF71DFE071BDE413E6D43F917DC8DCF8C78DE33418906D11AC976ABCCB20B091292BFF4EA897EFCB639EA871CFA95F6DE339E4B0A',
  ],
  [
    2,
    'C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9',
    'DD308AFEC5777E13121FA72B9CC1B7CC0139715309B086C960E18FD969774EB8',
    'C87AA53824B4D7AE2EB035A2B5BBBCCC080E76CDC6D1692C4B0B62D798E6D906',
    '7E2D58D8B3BCDF1ABADEC7829054F90DDA9805AAB56C77333024B9D0A508B75C',
    '5831AAEED7B44BB74E5EAB94BA9D4294C49BCF2A60728D8B4C200F50DD313C1BAB745879A5AD954A72C45A91C3A51D3C7ADEA98D82F8481E0E1E03674A6F3FB7',
  ],
  [
    3,
    '0B432B2677937381AEF05BB02A66ECD012773062CF3FA2549E44F58ED2401710',
    '25D1DFF95105F5253C4022F628A996AD3A0D95FBF21D468A1B33F8C160D8F517',
    'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF',
    'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF',
    '7EB0509757E246F19449885651611CB965ECC1A187DD51B64FDA1EDC9637D5EC97582B9CB13DB3933705B32BA982AF5AF25FD78881EBB32771FC5922EFC66EA3',
  ],
];

describe('BIP-340 signing', () => {
  it.each(VECTORS)('gives test vector %i its public key and signature', (_i, secret, pub, aux, msg, sig) => {
    const key = bip340Key(hex(secret));
    expect(key.px.toString('hex')).toBe(pub.toLowerCase());
    expect(bip340Sign(hex(msg), key, hex(aux)).toString('hex')).toBe(sig.toLowerCase());
  });

  it('signs as @noble/curves does, byte for byte, for random keys (odd and even y), messages and randomness', () => {
    for (let i = 0; i < 64; i++) {
      const secret = schnorr.utils.randomPrivateKey();
      const message = randomBytes(32);
      const aux = randomBytes(32);
      const key = bip340Key(secret);
      expect(key.px.toString('hex')).toBe(Buffer.from(schnorr.getPublicKey(secret)).toString('hex'));
      const sig = bip340Sign(message, key, aux);
      expect(sig.toString('hex')).toBe(Buffer.from(schnorr.sign(message, secret, aux)).toString('hex'));
      expect(schnorr.verify(bip340Sign(message, key), message, key.px)).toBe(true);
    }
  });

  it('refuses secret keys of 0, of the curve order or above, and of the wrong length', () => {
    expect(() => bip340Key(Buffer.alloc(32))).toThrow(RangeError);
    expect(() => bip340Key(hex('FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141'))).toThrow(RangeError);
    expect(() => bip340Key(Buffer.alloc(31, 1))).toThrow(RangeError);
    expect(() => bip340Sign(Buffer.alloc(31), bip340Key(hex(VECTORS[1]![1])))).toThrow(RangeError);
  });

  it('SigningKey: the public key nostr-tools derives, and envelope events nostr-tools verifies', () => {
    for (let i = 0; i < 16; i++) {
      const secret = schnorr.utils.randomPrivateKey();
      const key = SigningKey.fromBytes(secret);
      expect(key.publicKey).toBe(getPublicKey(secret));
      const env = workflowEnvelope(i + 1);
      const ev = envelopeEvent({ canonical: env.canonical, digestHex: env.digestHex }, key);
      // a fresh copy: nostr-tools caches its verdict on the object
      expect(verifyEvent(JSON.parse(JSON.stringify(ev)))).toBe(true);
    }
    const key = generateSecretKey();
    const ev = key.sign({ kind: 1, created_at: 1, tags: [['t', 'x']], content: 'hello' });
    expect(verifyEvent(JSON.parse(JSON.stringify({ ...ev, content: 'hellO' })))).toBe(false);
  });
});
