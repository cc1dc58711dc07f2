/**
 * Webhook signatures: `X-Aer1-Signature: sha256=<hex HMAC-SHA256(body, secret)>` over the
 * exact body bytes, as GitHub-style receivers expect. Receivers check it in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Aer1-Signature';
export const EVENT_ID_HEADER = 'X-Aer1-Event-Id';
export const EVENT_TYPE_HEADER = 'X-Aer1-Event-Type';
export const ATTEMPT_HEADER = 'X-Aer1-Delivery-Attempt';

export function signBody(body: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** True when `header` is the signature of `body` under `secret`. */
export function verifySignature(body: string | Uint8Array, secret: string, header: string | null | undefined): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(signBody(body, secret), 'utf8');
  const given = Buffer.from(header.trim(), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
