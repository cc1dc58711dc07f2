import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  hashToBigInt,
  meetsTarget,
  mineHeader,
  parseHeader,
  REGTEST_BITS,
  sha256d,
  targetFromBits,
} from '../../../src/dev/calendar/block-header.js';
import { mineCommitments } from '../../../src/dev/calendar/confirmation.js';
import { bitcoinMerkleTree, otsMerkleTree } from '../../../src/dev/calendar/merkle-paths.js';
import {
  bitcoinAttestationBytes,
  opsBytes,
  pendingAttestationBytes,
  varuint,
} from '../../../src/dev/calendar/ots-ops.js';
import { buildRound, deriveKeyForIdx } from '../../../src/dev/calendar/round.js';
import { python, PYTHON } from './dev-calendar-support.js';
import { readVector, sharedVectorsFor } from './vector-files.js';

const sha = (b: Buffer): Buffer => createHash('sha256').update(b).digest();
const leaves = (n: number): Buffer[] => Array.from({ length: n }, (_, i) => sha(Buffer.from(`leaf ${i}`)));

describe('calendar Merkle tree (python-opentimestamps make_merkle_tree)', () => {
  const sizes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17];
  it('gives every leaf the same ops and tip as python, byte for byte', () => {
    const jobs = sizes.map((n) => ({ kind: 'merkle' as const, tree: 'ots' as const, leaves: leaves(n).map((l) => l.toString('hex')) }));
    const answers = python(jobs);
    sizes.forEach((n, k) => {
      const ours = otsMerkleTree(leaves(n));
      const theirs = answers[k]!;
      expect(theirs.error).toBeUndefined();
      expect(ours.tip.toString('hex')).toBe(theirs.tip);
      const mine = ours.paths.map((p) => Buffer.concat([opsBytes(p), pendingAttestationBytes('x')]).toString('hex'));
      expect(mine).toEqual(theirs.paths);
    });
  });
});

describe('block Merkle tree (Bitcoin, odd level duplicates its last txid)', () => {
  const sizes = [1, 2, 3, 4, 5, 6, 7, 11];
  it('matches the stamper tree of python-opentimestamps and the root of python-bitcoinlib', () => {
    const jobs = sizes.map((n) => ({ kind: 'merkle' as const, tree: 'bitcoin' as const, leaves: leaves(n).map((l) => l.toString('hex')) }));
    const answers = python(jobs);
    sizes.forEach((n, k) => {
      const ours = bitcoinMerkleTree(leaves(n));
      const theirs = answers[k]!;
      expect(theirs.error).toBeUndefined();
      expect(ours.tip.toString('hex')).toBe(theirs.tip);
      expect(ours.tip.toString('hex')).toBe(theirs.bitcoinlib_root);
      const mine = ours.paths.map((p) => Buffer.concat([opsBytes(p), pendingAttestationBytes('x')]).toString('hex'));
      expect(mine).toEqual(theirs.paths);
    });
  });
});

describe('ots byte forms', () => {
  it('writes varuint as LEB128 (358391 → f7 ef 15)', () => {
    expect(varuint(358391).toString('hex')).toBe('f7ef15');
    expect(varuint(0).toString('hex')).toBe('00');
    expect(varuint(127).toString('hex')).toBe('7f');
    expect(varuint(128).toString('hex')).toBe('8001');
  });

  it('writes attestations as 00 <tag> <varbytes payload>', () => {
    expect(pendingAttestationBytes('https://alice.btc.calendar.opentimestamps.org').toString('hex')).toBe(
      '0083dfe30d2ef90c8e2e2d' + Buffer.from('https://alice.btc.calendar.opentimestamps.org').toString('hex'),
    );
    expect(bitcoinAttestationBytes(358391).toString('hex')).toBe('000588960d73d7190103f7ef15');
  });
});

describe('aggregation round bytes', () => {
  it('lay out nonce, tree path, time prefix, MAC suffix and pending attestation like opentimestamps-server', () => {
    const digests = leaves(3);
    const nonces = [0, 1, 2].map((i) => Buffer.alloc(16, i + 1));
    const key = Buffer.alloc(32, 9);
    const round = buildRound(digests, { time: 0x5f5e1000, hmacKey: key, uri: 'http://127.0.0.1:1', nonce: (i) => nonces[i]! });
    const nonced = digests.map((d, i) => sha(Buffer.concat([d, nonces[i]!])));
    const tip = sha(Buffer.concat([sha(Buffer.concat([nonced[0]!, nonced[1]!])), nonced[2]!]));
    expect(round.commitment.length).toBe(44);
    expect(round.commitment.subarray(0, 4).toString('hex')).toBe('5f5e1000');
    expect(round.commitment.subarray(4, 36)).toEqual(tip);
    const tail =
      'f1045f5e1000' + 'f008' + round.commitment.subarray(36).toString('hex') +
      '0083dfe30d2ef90c8e' + '1312' + Buffer.from('http://127.0.0.1:1').toString('hex');
    // the third digest is carried up unpaired: its only tree step is prepend <left node>, sha256
    expect(round.responses[2]!.toString('hex')).toBe(
      'f010' + nonces[2]!.toString('hex') + '08' + 'f120' + sha(Buffer.concat([nonced[0]!, nonced[1]!])).toString('hex') + '08' + tail,
    );
    expect(round.responses[0]!.toString('hex')).toBe(
      'f010' + nonces[0]!.toString('hex') + '08' + 'f020' + nonced[1]!.toString('hex') + '08' + 'f020' + nonced[2]!.toString('hex') + '08' + tail,
    );
  });

  it('derives the per-second MAC key exactly as otsserver derive_key_for_idx', () => {
    const key = randomBytes(32);
    const idx = 1_700_000_123;
    const py = spawnSync(
      PYTHON,
      [
        '-c',
        [
          'import hashlib, sys',
          'def derive_key_for_idx(key, idx, bits=32):',
          '    if not bits:',
          '        return key',
          "    key += b'\\xff' if (idx >> bits-1) & 0b1 else b'\\x00'",
          '    return derive_key_for_idx(hashlib.sha256(key).digest(), idx, bits - 1)',
          'print(derive_key_for_idx(bytes.fromhex(sys.argv[1]), int(sys.argv[2])).hex())',
        ].join('\n'),
        key.toString('hex'),
        String(idx),
      ],
      { encoding: 'utf8' },
    );
    expect(py.stderr).toBe('');
    expect(deriveKeyForIdx(key, idx).toString('hex')).toBe(py.stdout.trim());
  });
});

describe('block headers and proof of work', () => {
  // Mainnet block 358391 (from the OpenTimestamps hello-world vector).
  const REAL = Buffer.from(
    '02000000b96394585a281b7e5f438fd1c9ed492645a1fd61cb3802040000000000000000007ee445d23ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a1e376755f58616186272def6',
    'hex',
  );

  it('reads a real mainnet header and finds its proof of work valid for its bits', () => {
    const h = parseHeader(REAL);
    expect(h.bits).toBe(0x181686f5);
    expect(meetsTarget(sha256d(REAL), h.bits)).toBe(true);
    expect(hashToBigInt(sha256d(REAL)) >> 192n).toBe(0n); // mainnet hashes start with zero bytes
    const [py] = python([{ kind: 'header', header: REAL.toString('hex'), msg: h.merkleRoot.toString('hex') }]);
    expect(py).toMatchObject({ merkle_ok: true, hash: sha256d(REAL).toString('hex') });
  });

  it('decodes compact bits (regtest limit, mainnet difficulty 1)', () => {
    expect(targetFromBits(REGTEST_BITS)).toBe(0x7fffffn << 232n);
    expect(targetFromBits(0x1d00ffff)).toBe(0xffffn << 208n);
  });

  it('mines an 80-byte regtest header whose double SHA-256 is at or under its target', () => {
    const { header, hash } = mineHeader({ version: 0x20000000, prevHash: Buffer.alloc(32), merkleRoot: sha(Buffer.from('root')), time: 1_700_000_000, bits: REGTEST_BITS });
    expect(header.length).toBe(80);
    expect(hash).toEqual(sha(sha(header)));
    expect(hashToBigInt(hash) <= targetFromBits(REGTEST_BITS)).toBe(true);
    expect(parseHeader(header).merkleRoot).toEqual(sha(Buffer.from('root')));
  });

  it('builds confirmations whose header, transaction and paths python accepts', () => {
    const commitments = [0, 1, 2, 3, 4].map((i) => Buffer.concat([Buffer.from('5f5e1000', 'hex'), sha(Buffer.from(`c${i}`)), Buffer.alloc(8, i)]));
    for (const fillerTxs of [0, 1, 2, 5]) {
      const block = mineCommitments({ commitments, height: 7, prevHash: sha(Buffer.from('prev')), time: 1_700_000_000, fillerTxs });
      const jobs = [
        ...commitments.map((c, i) => ({ kind: 'parse' as const, start: c.toString('hex'), bytes: block.upgrades[i]!.toString('hex'), tx: true })),
        { kind: 'header' as const, header: block.header.toString('hex'), msg: block.merkleRoot.toString('hex') },
      ];
      const answers = python(jobs);
      for (let i = 0; i < commitments.length; i++) {
        const a = answers[i]!;
        expect(a.error).toBeUndefined();
        expect(a.roundtrip).toBe(true);
        expect(a.attestations).toEqual([{ msg: block.merkleRoot.toString('hex'), type: 'bitcoin', height: 7 }]);
        expect(a.tx).toMatchObject({ txid_ok: true, op_return_has_tip: true });
      }
      const header = answers[commitments.length]!;
      expect(header).toMatchObject({ pow_ok: true, merkle_ok: true, bits: REGTEST_BITS, prev: sha(Buffer.from('prev')).toString('hex') });
    }
  });
});

// The layout claims (WITNESS-FACTS) checked against proofs the real calendars made.

/** The op/attestation shape of a linear path: H sha256, R ripemd160, A/P append/prepend by length. */
function shape(buf: Buffer, start: number): string {
  let pos = start;
  const out: string[] = [];
  const varuintAt = (): number => {
    let v = 0;
    for (let s = 1; ; s *= 128) {
      const b = buf[pos++]!;
      v += (b & 0x7f) * s;
      if (!(b & 0x80)) return v;
    }
  };
  for (;;) {
    const b = buf[pos++];
    if (b === undefined) throw new Error('truncated path');
    if (b === 0xff) throw new Error(`branch at ${pos - 1}: not a linear path`);
    if (b === 0x00) {
      out.push('@' + buf.subarray(pos, pos + 8).toString('hex'));
      pos += 8;
      const n = varuintAt();
      pos += n;
      if (pos !== buf.length) throw new Error('bytes after the attestation');
      return out.join(' ');
    }
    if (b === 0xf0 || b === 0xf1) {
      const n = varuintAt();
      pos += n;
      out.push((b === 0xf0 ? 'A' : 'P') + ([4, 8, 16, 32].includes(n) ? String(n) : 'tx'));
    } else {
      out.push({ 0x08: 'H', 0x03: 'R' }[b] ?? b.toString(16));
    }
  }
}

const BITCOIN_TAIL = / P(tx|\d+) A(tx|\d+) H H( [AP]32 H H)* @0588960d73d71901$/;

describe('layout of the real calendars (vectors in ../shared/vectors/ots)', () => {
  describe.runIf(sharedVectorsFor("comparing the dev calendar's proofs with the real calendars' (shared .ots vectors)"))('with the vectors', () => {
    it('answers a submission in the same shape as alice and bob did (nonce, sha256, time prefix, MAC suffix, pending)', () => {
      const real = readVector('two-calendars.txt.ots').toString('hex');
      const calendarPart = /f010[0-9a-f]{32}08f104[0-9a-f]{8}f008[0-9a-f]{16}0083dfe30d2ef90c8e/g;
      expect(real.match(calendarPart)).toHaveLength(2);
      const ours = buildRound(leaves(5), { time: 1_700_000_000, hmacKey: Buffer.alloc(32), uri: 'http://127.0.0.1:1' });
      for (const r of ours.responses) {
        expect(r.toString('hex')).toMatch(/^f010[0-9a-f]{32}08(f[01]20[0-9a-f]{64}08)*f104[0-9a-f]{8}f008[0-9a-f]{16}0083dfe30d2ef90c8e/);
      }
    });

    it('upgrades in the same shape as a real Bitcoin-confirmed proof (tx prefix/suffix, double sha256 block path)', () => {
      const real = readVector('hello-world.txt.ots');
      const realShape = shape(real, 31 + 1 + 1 + 32);
      expect(realShape).toMatch(BITCOIN_TAIL);
      const commitments = [0, 1, 2].map((i) => Buffer.concat([Buffer.alloc(4, 1), sha(Buffer.from(`s${i}`)), Buffer.alloc(8, 2)]));
      const block = mineCommitments({ commitments, height: 3, prevHash: Buffer.alloc(32), time: 1_700_000_000, fillerTxs: 3 });
      for (const up of block.upgrades) {
        const s = shape(up, 0);
        expect(s).toMatch(/^H( [AP]32 H)*/);
        expect(s).toMatch(BITCOIN_TAIL);
      }
    });
  });
});
