import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { parseTimestamp, serializeTimestamp } from '../../../src/core/ots/codec.js';
import { OtsFormatError } from '../../../src/core/ots/errors.js';
import { SHA256, append, prepend, applyOp, evaluateOps, KECCAK256, RIPEMD160, SHA1, HEXLIFY, REVERSE } from '../../../src/core/ots/ops.js';
import { Timestamp, allAttestations, bitcoinAttestations, pendingAttestations, walk } from '../../../src/core/ots/timestamp.js';

/** What a calendar answers to POST /digest (WITNESS-FACTS): nonce, tree path, time, HMAC, pending. */
function calendarAnswer(digest: Buffer, uri: string): Timestamp {
  const ts = new Timestamp(digest);
  ts.addOp(append(randomBytes(16)))
    .addOp(SHA256)
    .addOp(append(randomBytes(32)))
    .addOp(SHA256)
    .addOp(prepend(Buffer.from('5f5e1000', 'hex')))
    .addOp(append(randomBytes(8)))
    .addAttestation(pendingAttestation(uri));
  return ts;
}

describe('Timestamp', () => {
  it('addOp returns the existing child for the same op', () => {
    const ts = new Timestamp(randomBytes(32));
    expect(ts.addOp(SHA256)).toBe(ts.addOp(SHA256));
    expect(ts.addOp(append(Buffer.from([1])))).not.toBe(ts.addOp(append(Buffer.from([2]))));
    expect(ts.ops).toHaveLength(3);
  });

  it('keeps branches in canonical order: attestations by tag/value, ops by tag then argument', () => {
    const ts = new Timestamp(randomBytes(32));
    ts.addOp(prepend(Buffer.from([0x01])));
    ts.addOp(append(Buffer.from([0x02, 0x00])));
    ts.addOp(append(Buffer.from([0x02])));
    ts.addOp(SHA256);
    ts.addOp(append(Buffer.from([0x01, 0xff])));
    expect(ts.ops.map((b) => b.op)).toEqual([SHA256, append(Buffer.from([0x01, 0xff])), append(Buffer.from([0x02])), append(Buffer.from([0x02, 0x00])), prepend(Buffer.from([0x01]))]);
    ts.addAttestation(pendingAttestation('https://b.example'));
    ts.addAttestation(bitcoinAttestation(20));
    ts.addAttestation(pendingAttestation('https://a.example'));
    ts.addAttestation(bitcoinAttestation(3));
    expect(ts.addAttestation(bitcoinAttestation(3))).toBe(false);
    // Bitcoin tag 0588… sorts before pending tag 83df….
    expect(ts.attestations).toEqual([bitcoinAttestation(3), bitcoinAttestation(20), pendingAttestation('https://a.example'), pendingAttestation('https://b.example')]);
  });

  it('merges calendar answers under one root, and an upgrade under a pending node', () => {
    const root = randomBytes(32);
    const ts = new Timestamp(root);
    ts.merge(calendarAnswer(root, 'https://alice.example'));
    ts.merge(calendarAnswer(root, 'https://bob.example'));
    const pending = pendingAttestations(ts);
    expect(pending.map((p) => p.uri).sort()).toEqual(['https://alice.example', 'https://bob.example']);
    // The upgrade starts at the commitment (the pending node's message).
    const alice = pending.find((p) => p.uri === 'https://alice.example')!;
    const upgrade = new Timestamp(alice.commitment);
    upgrade.addOp(SHA256).addOp(SHA256).addAttestation(bitcoinAttestation(800_000));
    walk(ts, (node) => {
      if (node.msg.equals(alice.commitment)) node.merge(upgrade);
    });
    const btc = bitcoinAttestations(ts);
    expect(btc).toHaveLength(1);
    expect(btc[0]!.height).toBe(800_000);
    expect(btc[0]!.merkleRoot.equals(evaluateOps(alice.commitment, [SHA256, SHA256]))).toBe(true);
    // Round trip through bytes keeps everything.
    const reread = parseTimestamp(serializeTimestamp(ts), root);
    expect(serializeTimestamp(reread).equals(serializeTimestamp(ts))).toBe(true);
    expect(allAttestations(reread)).toHaveLength(3);
  });

  it('merge copies: changing the merged-in timestamp later does not change ours', () => {
    const msg = randomBytes(32);
    const a = new Timestamp(msg);
    const b = calendarAnswer(msg, 'https://alice.example');
    a.merge(b);
    const before = serializeTimestamp(a);
    b.ops[0]!.timestamp.addAttestation(bitcoinAttestation(1));
    expect(serializeTimestamp(a).equals(before)).toBe(true);
  });

  it('merging is idempotent', () => {
    const msg = randomBytes(32);
    const a = calendarAnswer(msg, 'https://alice.example');
    const once = serializeTimestamp(a);
    a.merge(parseTimestamp(once, msg));
    a.merge(a);
    expect(serializeTimestamp(a).equals(once)).toBe(true);
  });

  it('refuses to merge timestamps on different messages', () => {
    expect(() => new Timestamp(randomBytes(32)).merge(new Timestamp(randomBytes(32)))).toThrow(OtsFormatError);
  });

  it('setOp refuses a child whose message is not the op result', () => {
    const ts = new Timestamp(randomBytes(32));
    expect(() => ts.setOp(SHA256, new Timestamp(randomBytes(32)))).toThrow(/not the child's message/);
  });

  it('refuses messages longer than 4096 bytes', () => {
    expect(() => new Timestamp(Buffer.alloc(4097))).toThrow(OtsFormatError);
  });
});

describe('ops', () => {
  it('hash as the reference implementations do', () => {
    const abc = Buffer.from('abc');
    expect(applyOp(SHA256, abc).toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(applyOp(SHA1, abc).toString('hex')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(applyOp(RIPEMD160, abc).toString('hex')).toBe('8eb208f7e05d987a9b044a8e98c6b087f15a0bfc');
    expect(applyOp(KECCAK256, abc).toString('hex')).toBe('4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
    expect(applyOp(KECCAK256, Buffer.alloc(0)).toString('hex')).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    // Multi-block Keccak (rate 136 bytes).
    expect(applyOp(KECCAK256, Buffer.alloc(137, 7)).toString('hex')).toBe('3c6a2e16e744148c29f3367513abb9736f8c108b9d1ebf928f065f51a1cd3374');
    expect(applyOp(HEXLIFY, Buffer.from([0xab, 0x01])).toString('latin1')).toBe('ab01');
    expect(applyOp(REVERSE, Buffer.from([1, 2, 3]))).toEqual(Buffer.from([3, 2, 1]));
  });

  it('refuse empty and over-long arguments', () => {
    expect(() => append(Buffer.alloc(0))).toThrow(OtsFormatError);
    expect(() => prepend(Buffer.alloc(4097))).toThrow(OtsFormatError);
  });
});
