import { createHash } from 'node:crypto';

export function sha256(data: Uint8Array | string): Buffer {
  return createHash('sha256').update(data).digest();
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

const HEX64 = /^[0-9a-f]{64}$/;

/** True for 64 lowercase hex characters (a bare SHA-256 digest). */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

/** Strict hex decoding: even length, hex digits only (either case). */
export function hexToBytes(hex: string): Buffer {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new TypeError('not hex');
  }
  return Buffer.from(hex, 'hex');
}
