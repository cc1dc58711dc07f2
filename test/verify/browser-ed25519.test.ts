/**
 * The browser bundle's node:crypto shim (scripts/browser-shims/crypto.mjs) verifies the
 * anchor log's Ed25519 checkpoint signatures through @noble/curves as node:crypto does:
 * a signed checkpoint opens, an altered text or signature does not.
 */
import { describe, expect, it } from 'vitest';
import { generateSignerKey } from '../../src/core/log/note.js';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { EMPTY_ROOT } from '../../src/core/log/rfc6962.js';
// @ts-expect-error the shim is plain JavaScript without types
import * as shim from '../../scripts/browser-shims/crypto.mjs';

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

describe('browser crypto shim: Ed25519 verify', () => {
  it('agrees with node:crypto on a signed checkpoint, and refuses an altered one', () => {
    const { signer } = generateSignerKey('example.test/aer1');
    const note = signCheckpoint({ origin: 'example.test/aer1', size: 0, root: EMPTY_ROOT, extensions: [] }, signer);
    const [text, sigLine] = note.split('\n\n') as [string, string];
    const signature = Buffer.from(sigLine.split(' ')[2]!.trim(), 'base64').subarray(4);
    const key = shim.createPublicKey({ key: Buffer.concat([SPKI_ED25519, signer.publicKey]), format: 'der', type: 'spki' });
    const message = Buffer.from(`${text}\n`, 'utf8');
    expect(shim.verify(null, message, key, signature)).toBe(true);
    expect(shim.verify(null, Buffer.from(`${text}x\n`, 'utf8'), key, signature)).toBe(false);
    const bent = Buffer.from(signature);
    bent[0]! ^= 1;
    expect(shim.verify(null, message, key, bent)).toBe(false);
    expect(() => shim.sign()).toThrow(/not available in the browser bundle/);
  });
});
