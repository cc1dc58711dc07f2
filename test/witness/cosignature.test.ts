/**
 * C2SP tlog-cosignature (cosignature/v1): the key ID and vkey with type 0x04, the signed
 * message byte for byte, the 8-byte timestamp + 64-byte signature in the note line, the
 * spec's own example line read back, attaching lines to a checkpoint, and the caller's
 * policy (`checkCosignatures`) with every status it reports.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import {
  attachCosignatures, cosign, cosignedMessage, cosignerKeyId, formatWitnessKey, generateCosignerKey, parseCosignerKey,
  parseSignatureLines, parseWitnessKey, readTimestampedSignature,
} from '../../src/core/witness/cosignature.js';
import { checkCosignatures } from '../../src/core/witness/cosignature-policy.js';

const codeOf = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    return `${(err as { code: string }).code}: ${(err as Error).message}`;
  }
  return 'no error';
};

const ORIGIN = 'example.test/aer1/0';
const log = generateSignerKey(ORIGIN).signer;
const note = signCheckpoint({ origin: ORIGIN, size: 20852163, root: Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64'), extensions: [] }, log);
const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
const NOW = 1_800_000_000;

describe('cosignature/v1 bytes', () => {
  it('signs the spec\'s message: "cosignature/v1\\ntime <ts>\\n" then the note text', () => {
    const specText = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
    expect(cosignedMessage(specText, 1679315147n).toString('utf8')).toBe(
      'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
    );
    expect(cosignedMessage(specText, 0n).toString('utf8')).toMatch(/^cosignature\/v1\ntime 0\n/);
    expect(() => cosignedMessage(specText, 2n ** 63n)).toThrow(RangeError);
  });

  it('reads the spec\'s example cosignature line: key ID, then the time 1679315147 as a big-endian u64, then 64 signature bytes', () => {
    const [sig] = parseSignatureLines('\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n');
    expect(sig!.name).toBe('witness.example.com/w1');
    expect(sig!.keyId).toBe(0x8d66cf3f);
    const ts = readTimestampedSignature(sig!);
    expect(ts!.timestamp).toBe(1679315147n);
    expect(ts!.signature.length).toBe(64);
  });

  it('computes the key ID over name, 0x0A, 0x04 and the key, and writes the vkey as <name>+<hash>+base64(0x04 ‖ key)', () => {
    const { key } = generateCosignerKey('witness.test/w1');
    const expected = createHash('sha256').update(Buffer.concat([Buffer.from('witness.test/w1\n'), Buffer.from([4]), key.publicKey])).digest().readUInt32BE(0);
    expect(key.keyId).toBe(expected);
    expect(cosignerKeyId('witness.test/w1', key.publicKey)).toBe(expected);
    expect(key.verifierKey).toBe(`witness.test/w1+${expected.toString(16).padStart(8, '0')}+${Buffer.concat([Buffer.from([4]), key.publicKey]).toString('base64')}`);
    expect(parseWitnessKey(key.verifierKey)).toMatchObject({ name: 'witness.test/w1', keyId: expected, text: key.verifierKey });
    expect(formatWitnessKey(key.name, key.publicKey)).toBe(key.verifierKey);
  });

  it('round-trips the signer key text and refuses log keys, bad hashes and short keys by name', () => {
    const { signerKeyText, key } = generateCosignerKey('w.test/a');
    expect(signerKeyText).toMatch(/^PRIVATE\+KEY\+w\.test\/a\+[0-9a-f]{8}\+B[A-P]/);
    expect(parseCosignerKey(signerKeyText).verifierKey).toBe(key.verifierKey);
    expect(codeOf(() => parseWitnessKey(log.verifierKey))).toMatch(/^log_bad_key: witness key: key type 0x01 is not a cosignature\/v1 Ed25519 key \(0x04\) \(0x01 is a log key/);
    const [n, h] = key.verifierKey.split('+');
    const b = key.verifierKey.slice(`${n}+${h}+`.length);
    expect(codeOf(() => parseWitnessKey(`${n}+00000000+${b}`))).toMatch(/^log_bad_key: .*does not match the name and key/);
    expect(codeOf(() => parseWitnessKey(`${n}+${h}+BAAA`))).toMatch(/^log_bad_key: .*32 bytes, not 2/);
    expect(codeOf(() => parseWitnessKey('no-plus-signs'))).toMatch(/^log_bad_key/);
  });

  it('writes one note line: base64(key ID ‖ u64 BE time ‖ Ed25519 signature), 76 bytes', () => {
    const { key } = generateCosignerKey('w.test/a');
    const line = cosign(text, key, 1_700_000_000n);
    expect(line).toMatch(/^\u2014 w\.test\/a [A-Za-z0-9+/]{100}[A-Za-z0-9+/=]{4}\n$/);
    const raw = Buffer.from(line.trim().split(' ')[2]!, 'base64');
    expect(raw.length).toBe(76);
    expect(raw.readUInt32BE(0)).toBe(key.keyId);
    expect(raw.readBigUInt64BE(4)).toBe(1_700_000_000n);
  });
});

describe('attachCosignatures', () => {
  it('adds lines after the log\'s signature, once each, and keeps the note a valid signed note', () => {
    const a = generateCosignerKey('w.test/a').key;
    const la = cosign(text, a, 1n);
    const out = attachCosignatures(note, [la, la.trimEnd()]);
    expect(out).toBe(note + la);
    expect(attachCosignatures(out, [la])).toBe(out);
  });

  it('refuses a line that is not a signature line, or two at once', () => {
    expect(codeOf(() => attachCosignatures(note, ['hello']))).toMatch(/^log_bad_note: note\.cosignatures\[0\]/);
    const a = generateCosignerKey('w.test/a').key;
    expect(codeOf(() => attachCosignatures(note, [cosign(text, a, 1n) + cosign(text, a, 2n)]))).toMatch(/^log_bad_note: .*one signature line at a time/);
    expect(codeOf(() => attachCosignatures(note, [`${cosign(text, a, 1n)}\n`]))).toMatch(/^log_bad_note/);
  });
});

describe('checkCosignatures (the caller\'s policy)', () => {
  const a = generateCosignerKey('w.test/a').key;
  const b = generateCosignerKey('w.test/b').key;
  const c = generateCosignerKey('w.test/c').key;
  const keys = [a, b, c].map((k) => parseWitnessKey(k.verifierKey));

  it('reports each witness: verified with its time, missing; quorum met or not', () => {
    const cosigned = attachCosignatures(note, [cosign(text, a, BigInt(NOW - 60)), cosign(text, b, BigInt(NOW - 5))]);
    const r = checkCosignatures(cosigned, keys, 2, { now: NOW });
    expect(r).toMatchObject({ ok: true, quorum: 2, verified: 2 });
    expect(r.witnesses.map((w) => [w.name, w.status, w.time])).toEqual([['w.test/a', 'verified', NOW - 60], ['w.test/b', 'verified', NOW - 5], ['w.test/c', 'missing', undefined]]);
    expect(checkCosignatures(cosigned, keys, 3, { now: NOW })).toMatchObject({ ok: false, verified: 2 });
  });

  it('a cosignature over another text, a flipped signature bit or a time changed after signing is bad_signature and does not count', () => {
    const other = signCheckpoint({ origin: ORIGIN, size: 5, root: Buffer.alloc(32, 1), extensions: [] }, log);
    const otherText = other.slice(0, other.lastIndexOf('\n\n') + 1);
    const wrongText = cosign(otherText, a, BigInt(NOW));
    const good = cosign(text, b, BigInt(NOW));
    const raw = Buffer.from(good.trim().split(' ')[2]!, 'base64');
    raw.writeBigUInt64BE(BigInt(NOW - 3600), 4);
    const retimed = `\u2014 w.test/b ${raw.toString('base64')}\n`;
    const r = checkCosignatures(attachCosignatures(note, [wrongText, retimed]), keys, 0, { now: NOW });
    expect(r.witnesses.map((w) => w.status)).toEqual(['bad_signature', 'bad_signature', 'missing']);
    expect(r.verified).toBe(0);
    // a good line and a bad one by the same key: the note is refused for that witness (signed-note)
    expect(checkCosignatures(attachCosignatures(note, [good, retimed]), keys, 0, { now: NOW }).witnesses[1]!.status).toBe('bad_signature');
  });

  it('ignores lines by unknown keys, and a line by the name with another key ID', () => {
    const stranger = generateCosignerKey('w.test/a').key;
    const r = checkCosignatures(attachCosignatures(note, [cosign(text, stranger, BigInt(NOW))]), keys, 0, { now: NOW });
    expect(r.witnesses[0]!.status).toBe('missing');
  });

  it('a log-type (0x01) signature line with a witness\'s name and key ID is bad_signature, not verified', () => {
    const raw = Buffer.alloc(68);
    raw.writeUInt32BE(a.keyId, 0);
    const r = checkCosignatures(attachCosignatures(note, [`\u2014 w.test/a ${raw.toString('base64')}\n`]), keys, 0, { now: NOW });
    expect(r.witnesses[0]).toMatchObject({ status: 'bad_signature' });
    expect(r.witnesses[0]!.detail).toMatch(/64 bytes after the key ID, not 72/);
  });

  it('a time more than 10 minutes ahead is future and does not count', () => {
    const r = checkCosignatures(attachCosignatures(note, [cosign(text, a, BigInt(NOW + 3600))]), keys, 0, { now: NOW });
    expect(r.witnesses[0]).toMatchObject({ status: 'future', time: NOW + 3600 });
    expect(r.verified).toBe(0);
  });

  it('a key listed twice, or one public key under two names, counts once toward the quorum', () => {
    const { signerKeyText } = generateCosignerKey('w.test/x');
    const seed = signerKeyText.split('+').slice(4).join('+');
    const x1 = parseCosignerKey(`PRIVATE+KEY+w.test/x1+${cosignerKeyId('w.test/x1', parseCosignerKey(signerKeyText).publicKey).toString(16).padStart(8, '0')}+${seed}`);
    const x2 = parseCosignerKey(`PRIVATE+KEY+w.test/x2+${cosignerKeyId('w.test/x2', x1.publicKey).toString(16).padStart(8, '0')}+${seed}`);
    const cosigned = attachCosignatures(note, [cosign(text, x1, BigInt(NOW)), cosign(text, x2, BigInt(NOW))]);
    const k1 = parseWitnessKey(x1.verifierKey);
    const k2 = parseWitnessKey(x2.verifierKey);
    const r = checkCosignatures(cosigned, [k1, k2], 1, { now: NOW });
    expect(r.witnesses.map((w) => w.status)).toEqual(['verified', 'verified']);
    expect(r.verified).toBe(1);
    expect(codeOf(() => checkCosignatures(cosigned, [k1, k2], 2, { now: NOW }))).toBe('no error');
    expect(checkCosignatures(cosigned, [k1, k2], 2, { now: NOW }).ok).toBe(false);
    expect(codeOf(() => checkCosignatures(cosigned, [k1, k1], 2, { now: NOW }))).toMatch(/^bad_option: quorum: .*0\.\.1/);
  });
});
