import { describe, expect, it } from 'vitest';
import { signBody, verifySignature } from '../../src/adapters/webhooks/signature.js';
import { displayUrl, hookId } from '../../src/adapters/webhooks/delivery-log.js';

describe('webhook signatures', () => {
  it('are sha256= and the hex HMAC-SHA256 of the body under the secret (RFC 4231-style known value)', () => {
    // HMAC_SHA256("key", "The quick brown fox jumps over the lazy dog")
    expect(signBody('The quick brown fox jumps over the lazy dog', 'key')).toBe('sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });

  it('verify the exact bytes only, under the right secret', () => {
    const body = '{"type":"state","key":"k","status":"confirmed"}';
    const sig = signBody(body, 'a-secret-of-16-chars');
    expect(verifySignature(body, 'a-secret-of-16-chars', sig)).toBe(true);
    expect(verifySignature(Buffer.from(body), 'a-secret-of-16-chars', sig)).toBe(true);
    expect(verifySignature(`${body} `, 'a-secret-of-16-chars', sig)).toBe(false);
    expect(verifySignature(body, 'another-secret-16chars', sig)).toBe(false);
    expect(verifySignature(body, 'a-secret-of-16-chars', sig.toUpperCase())).toBe(false);
    expect(verifySignature(body, 'a-secret-of-16-chars', sig.slice(7))).toBe(false);
    expect(verifySignature(body, 'a-secret-of-16-chars', undefined)).toBe(false);
  });
});

describe('hook names in reports', () => {
  it('hide credentials, query and fragment of the URL', () => {
    expect(displayUrl('https://user:pw@example.org:8443/hooks/aer1?token=abc#x')).toBe('https://example.org:8443/hooks/aer1');
    expect(hookId('https://example.org/a')).toMatch(/^[0-9a-f]{16}$/);
    expect(hookId('https://example.org/a')).not.toBe(hookId('https://example.org/b'));
  });
});
