/**
 * The few `.ots` byte forms the development calendar writes: sha256/append/prepend ops
 * and the pending and Bitcoin attestations. Deliberately tiny and write-only; the full
 * codec lives in `src/core/ots/` and reads these bytes back.
 */

export const TAG_SHA256 = 0x08;
export const TAG_APPEND = 0xf0;
export const TAG_PREPEND = 0xf1;
export const PENDING_TAG = Buffer.from('83dfe30d2ef90c8e', 'hex');
export const BITCOIN_TAG = Buffer.from('0588960d73d71901', 'hex');

/** One step of a linear path: `sha256`, or `append`/`prepend` of `arg`. */
export type PathOp = { op: 'sha256' } | { op: 'append' | 'prepend'; arg: Buffer };

export const SHA256: PathOp = { op: 'sha256' };

export function append(arg: Buffer): PathOp {
  return { op: 'append', arg };
}

export function prepend(arg: Buffer): PathOp {
  return { op: 'prepend', arg };
}

/** Unsigned LEB128, as python-opentimestamps `write_varuint`. */
export function varuint(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varuint out of range: ${n}`);
  const out: number[] = [];
  let v = n;
  do {
    let byte = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) byte |= 0x80;
    out.push(byte);
  } while (v > 0);
  return Buffer.from(out);
}

export function varbytes(b: Uint8Array): Buffer {
  return Buffer.concat([varuint(b.length), b]);
}

/** Serialized ops of a linear path (each node has exactly one op and no attestation). */
export function opsBytes(ops: readonly PathOp[]): Buffer {
  const parts: Buffer[] = [];
  for (const step of ops) {
    if (step.op === 'sha256') parts.push(Buffer.from([TAG_SHA256]));
    else parts.push(Buffer.from([step.op === 'append' ? TAG_APPEND : TAG_PREPEND]), varbytes(step.arg));
  }
  return Buffer.concat(parts);
}

/** `00 83dfe30d2ef90c8e <varbytes(varbytes(uri))>`: the calendar promises an upgrade at `uri`. */
export function pendingAttestationBytes(uri: string): Buffer {
  return Buffer.concat([Buffer.from([0x00]), PENDING_TAG, varbytes(varbytes(Buffer.from(uri, 'ascii')))]);
}

/** `00 0588960d73d71901 <varbytes(varuint(height))>`: the message is that block's merkle root. */
export function bitcoinAttestationBytes(height: number): Buffer {
  return Buffer.concat([Buffer.from([0x00]), BITCOIN_TAG, varbytes(varuint(height))]);
}

/** python-opentimestamps PendingAttestation rules: at most 1000 chars of `A-Za-z0-9-._/:`. */
export function checkPendingUri(uri: string): string | null {
  if (uri.length > 1000) return `calendar URI is ${uri.length} characters (at most 1000)`;
  const bad = /[^A-Za-z0-9\-._/:]/.exec(uri);
  if (bad) return `calendar URI ${JSON.stringify(uri)} contains ${JSON.stringify(bad[0])} (allowed: A-Za-z0-9-._/:)`;
  return null;
}
