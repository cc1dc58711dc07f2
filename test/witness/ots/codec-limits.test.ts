import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_INPUT_BYTES,
  DetachedTimestampFile,
  HEADER_MAGIC,
  MAX_DEPTH,
  parseDetached,
  parseTimestamp,
  serializeDetached,
  serializeTimestamp,
} from '../../../src/core/ots/codec.js';
import { encodeVaruint } from '../../../src/core/ots/bytes.js';
import { OtsFormatError } from '../../../src/core/ots/errors.js';
import { Timestamp, allAttestations } from '../../../src/core/ots/timestamp.js';
import { bitcoinAttestation } from '../../../src/core/ots/attestations.js';
import { KECCAK256, SHA256, applyOp } from '../../../src/core/ots/ops.js';

const DIGEST = Buffer.alloc(32, 7);
const HEADER = Buffer.concat([HEADER_MAGIC, Buffer.from([0x01, 0x08]), DIGEST]);
const BITCOIN_358391 = Buffer.from('000588960d73d7190103f7ef15', 'hex');
const PENDING_TAG = Buffer.from('83dfe30d2ef90c8e', 'hex');

function file(body: Uint8Array): Buffer {
  return Buffer.concat([HEADER, body]);
}

function refusal(f: () => unknown): OtsFormatError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(OtsFormatError);
    return e as OtsFormatError;
  }
  throw new Error('accepted');
}

function pendingBranch(uri: Buffer): Buffer {
  const payload = Buffer.concat([encodeVaruint(uri.length), uri]);
  return Buffer.concat([Buffer.from([0x00]), PENDING_TAG, encodeVaruint(payload.length), payload]);
}

describe('hostile .ots input', () => {
  it('refuses a file of 1,000,000 nested sha256 ops at the depth bound, without a crash', () => {
    const bytes = file(Buffer.concat([Buffer.alloc(1_000_000, 0x08), BITCOIN_358391]));
    const e = refusal(() => parseDetached(bytes));
    expect(e.code).toBe('ots_too_deep');
    expect(e.offset).toBe(HEADER.length + MAX_DEPTH - 1);
    expect(e.message).toMatch(/deeper than 255 ops \(at byte \d+\)/);
  });

  it('refuses a file that claims a 2^60-byte message (append argument, attestation payload)', () => {
    const huge = encodeVaruint(2 ** 52); // the largest we can encode as a safe integer…
    const leb60 = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]); // …and 2^60 by hand
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0xf0]), leb60, Buffer.alloc(8)])))).code).toBe('ots_varuint_too_large');
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0xf0]), huge, Buffer.alloc(8)])))).code).toBe('ots_bad_op_arg');
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0x00]), PENDING_TAG, leb60])))).code).toBe('ots_varuint_too_large');
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0x00]), PENDING_TAG, huge])))).code).toBe('ots_payload_too_long');
  });

  it('accepts 255 nested ops and refuses 256, as python-opentimestamps does', () => {
    const ok = file(Buffer.concat([Buffer.alloc(255, 0x08), BITCOIN_358391]));
    expect(serializeDetached(parseDetached(ok)).equals(ok)).toBe(true);
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.alloc(256, 0x08), BITCOIN_358391])))).code).toBe('ots_too_deep');
  });

  it('refuses every truncation of a valid file', () => {
    const bytes = file(Buffer.concat([Buffer.from('fff010' + '11'.repeat(16) + '08', 'hex'), BITCOIN_358391, Buffer.from([0x08]), BITCOIN_358391]));
    expect(serializeDetached(parseDetached(bytes)).equals(bytes)).toBe(true);
    for (let n = 0; n < bytes.length; n++) {
      const e = refusal(() => parseDetached(bytes.subarray(0, n)));
      expect(e.code, `prefix of ${n} bytes`).toBe('ots_truncated');
    }
  });

  it('refuses trailing bytes and names where they start', () => {
    const bytes = file(BITCOIN_358391);
    const e = refusal(() => parseDetached(Buffer.concat([bytes, Buffer.from([0x00])])));
    expect(e.code).toBe('ots_trailing_bytes');
    expect(e.offset).toBe(bytes.length);
  });

  it('refuses bad magic, unknown major versions and non-hash file ops', () => {
    expect(refusal(() => parseDetached(Buffer.from('not an ots file at all, nope nope nope'))).code).toBe('ots_bad_magic');
    const v2 = Buffer.from(file(BITCOIN_358391));
    v2[HEADER_MAGIC.length] = 0x02;
    expect(refusal(() => parseDetached(v2)).message).toMatch(/major version 2/);
    const keccak = Buffer.from(file(BITCOIN_358391));
    keccak[HEADER_MAGIC.length + 1] = 0x67;
    expect(refusal(() => parseDetached(keccak)).code).toBe('ots_bad_file_hash_op');
  });

  it('refuses varuints that are not in their shortest form (they would not round-trip)', () => {
    const v = Buffer.concat([HEADER_MAGIC, Buffer.from([0x81, 0x00, 0x08]), DIGEST, BITCOIN_358391]);
    expect(refusal(() => parseDetached(v)).code).toBe('ots_varuint_not_minimal');
    // Height 1 written as 81 00 inside a Bitcoin payload.
    const h = file(Buffer.from('000588960d73d719010281' + '00', 'hex'));
    expect(refusal(() => parseDetached(h)).code).toBe('ots_varuint_not_minimal');
  });

  it('refuses unknown op tags, empty and over-long op arguments', () => {
    const e = refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0x04]), BITCOIN_358391]))));
    expect(e.code).toBe('ots_unknown_op');
    expect(e.offset).toBe(HEADER.length);
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0xf0, 0x00]), BITCOIN_358391])))).code).toBe('ots_bad_op_arg');
    expect(refusal(() => parseDetached(file(Buffer.concat([Buffer.from([0xf0]), encodeVaruint(4097), Buffer.alloc(4097), BITCOIN_358391])))).code).toBe(
      'ots_bad_op_arg',
    );
  });

  it('refuses messages that grow past 4096 bytes, and hexlify past 2048', () => {
    const grow = Buffer.concat([Buffer.from([0xf0]), encodeVaruint(4064), Buffer.alloc(4064), Buffer.from([0xf0, 0x01, 0x01]), BITCOIN_358391]);
    expect(refusal(() => parseDetached(file(grow))).code).toBe('ots_message_too_long');
    const exact = Buffer.concat([Buffer.from([0xf0]), encodeVaruint(4064), Buffer.alloc(4064), BITCOIN_358391]);
    expect(serializeDetached(parseDetached(file(exact))).equals(file(exact))).toBe(true);
    const hex = Buffer.concat([Buffer.from([0xf0]), encodeVaruint(2017), Buffer.alloc(2017), Buffer.from([0xf3]), BITCOIN_358391]);
    expect(refusal(() => parseDetached(file(hex))).code).toBe('ots_message_too_long');
  });

  it('refuses reverse and hexlify of an empty message', () => {
    expect(refusal(() => parseTimestamp(Buffer.concat([Buffer.from([0xf2]), BITCOIN_358391]), Buffer.alloc(0))).code).toBe('ots_bad_message');
    expect(refusal(() => parseTimestamp(Buffer.concat([Buffer.from([0xf3]), BITCOIN_358391]), Buffer.alloc(0))).code).toBe('ots_bad_message');
  });

  it('checks pending URIs: at most 1000 characters from A-Za-z0-9-._/:', () => {
    const ok = file(pendingBranch(Buffer.from('https://a.b-c_d/e:1/' + 'x'.repeat(980))));
    expect(serializeDetached(parseDetached(ok)).equals(ok)).toBe(true);
    expect(refusal(() => parseDetached(file(pendingBranch(Buffer.from('x'.repeat(1001)))))).code).toBe('ots_bad_uri');
    for (const bad of ['https://a.b/?q=1', 'https://a b', 'https://user@a.b', 'https://a.b/%41', 'https://\u00e9.b']) {
      expect(refusal(() => parseDetached(file(pendingBranch(Buffer.from(bad, 'latin1'))))).code, bad).toBe('ots_bad_uri');
    }
  });

  it('keeps unknown attestations up to 8192 bytes and refuses longer ones', () => {
    const att = (n: number): Buffer => Buffer.concat([Buffer.from([0x00]), Buffer.from('0102030405060708', 'hex'), encodeVaruint(n), randomBytes(n)]);
    const ok = file(att(8192));
    expect(serializeDetached(parseDetached(ok)).equals(ok)).toBe(true);
    expect(refusal(() => parseDetached(file(att(8193)))).code).toBe('ots_payload_too_long');
  });

  it('refuses bytes left over inside a known attestation payload', () => {
    expect(refusal(() => parseDetached(file(Buffer.from('000588960d73d7190102' + '0101', 'hex')))).code).toBe('ots_payload_trailing');
  });

  it('refuses the same branch twice in one node, and an attestation after an op', () => {
    const dupAtt = file(Buffer.concat([Buffer.from([0xff]), BITCOIN_358391, BITCOIN_358391]));
    expect(refusal(() => parseDetached(dupAtt)).code).toBe('ots_duplicate_branch');
    const dupOp = file(Buffer.concat([Buffer.from([0xff, 0x08]), BITCOIN_358391, Buffer.from([0x08]), BITCOIN_358391]));
    expect(refusal(() => parseDetached(dupOp)).code).toBe('ots_duplicate_branch');
    const late = file(Buffer.concat([Buffer.from([0xff, 0x08]), BITCOIN_358391, BITCOIN_358391]));
    expect(refusal(() => parseDetached(late)).code).toBe('ots_branch_order');
  });

  it('reads ops out of canonical order as written, and writes them back the same way', () => {
    const body = Buffer.concat([Buffer.from('fff00122', 'hex'), BITCOIN_358391, Buffer.from('f00111', 'hex'), BITCOIN_358391]);
    const bytes = file(body);
    const parsed = parseDetached(bytes);
    expect(parsed.timestamp.ops.map((b) => b.op)).toEqual([
      { kind: 'append', arg: Buffer.from([0x22]) },
      { kind: 'append', arg: Buffer.from([0x11]) },
    ]);
    expect(serializeDetached(parsed).equals(bytes)).toBe(true);
  });

  it('refuses input larger than the cap before reading it', () => {
    const e = refusal(() => parseDetached(Buffer.alloc(DEFAULT_MAX_INPUT_BYTES + 1)));
    expect(e.code).toBe('ots_too_large');
  });

  it('refuses a file whose messages would add up past the memory budget', () => {
    // One 4094-byte message, then 9000 branches each appending 2 distinct bytes (4096-byte children).
    const parts: Buffer[] = [Buffer.from([0xf0]), encodeVaruint(4062), Buffer.alloc(4062)];
    for (let i = 0; i < 9000; i++) {
      parts.push(Buffer.from([0xff, 0xf0, 0x02, i >> 8, i & 0xff]), BITCOIN_358391);
    }
    parts.push(BITCOIN_358391);
    const e = refusal(() => parseDetached(file(Buffer.concat(parts))));
    expect(e.code).toBe('ots_too_large');
    expect(refusal(() => parseDetached(file(Buffer.concat(parts)), { maxMessageBytes: 100_000 })).code).toBe('ots_too_large');
  });

  it('names the byte offset of a problem deep inside the file', () => {
    const body = Buffer.concat([Buffer.from([0x08, 0x08, 0x08, 0x09]), BITCOIN_358391]);
    const e = refusal(() => parseDetached(file(body)));
    expect(e.offset).toBe(HEADER.length + 3);
    expect(e.message).toBe(`unknown op tag 0x09 (at byte ${HEADER.length + 3})`);
  });
});

describe('writing timestamps', () => {
  it('refuses an empty timestamp', () => {
    expect(refusal(() => serializeTimestamp(new Timestamp(DIGEST))).code).toBe('ots_empty_timestamp');
    const ts = new Timestamp(DIGEST);
    ts.addOp(SHA256);
    expect(refusal(() => serializeDetached(new DetachedTimestampFile('sha256', ts))).code).toBe('ots_empty_timestamp');
  });

  it('refuses to write a tree deeper than readers accept, without recursion', () => {
    const ts = new Timestamp(DIGEST);
    let node = ts;
    for (let i = 0; i < 20_000; i++) node = node.addOp(SHA256);
    node.addAttestation(bitcoinAttestation(1));
    expect(refusal(() => serializeTimestamp(ts)).code).toBe('ots_too_deep');
    expect(allAttestations(ts)).toHaveLength(1);
  });

  it('parseTimestamp reads a calendar-style answer with no header and refuses trailing bytes', () => {
    const ts = new Timestamp(DIGEST);
    ts.addOp({ kind: 'append', arg: randomBytes(16) }).addOp(SHA256).addAttestation(bitcoinAttestation(5));
    const bytes = serializeTimestamp(ts);
    expect(serializeTimestamp(parseTimestamp(bytes, DIGEST)).equals(bytes)).toBe(true);
    expect(refusal(() => parseTimestamp(Buffer.concat([bytes, Buffer.from([0])]), DIGEST)).code).toBe('ots_trailing_bytes');
  });
});

describe('the keccak256 op', () => {
  it('is the original Keccak-256 (as python-opentimestamps OpKECCAK256), not SHA3-256', () => {
    expect(applyOp(KECCAK256, Buffer.alloc(0)).toString('hex')).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    expect(applyOp(KECCAK256, Buffer.from('abc')).toString('hex')).toBe('4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
  });
});
