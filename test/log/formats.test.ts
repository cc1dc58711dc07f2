/**
 * The anchor log's byte formats: the entry layout, tile paths and widths, entry bundles
 * (C2SP tlog-tiles), signed notes and keys (C2SP signed-note, checked against the Go note
 * package's own published vector) and checkpoints (C2SP tlog-checkpoint).
 */
import { describe, expect, it } from 'vitest';
import { openCheckpoint, parseCheckpointText, signCheckpoint } from '../../src/core/log/checkpoint.js';
import { decodeEntry, encodeEntry } from '../../src/core/log/entry.js';
import { LogFormatError } from '../../src/core/log/errors.js';
import { checkNote, formatVerifierKey, generateSignerKey, parseNote, parseSignerKey, parseVerifierKey, signNote } from '../../src/core/log/note.js';
import { decodeBundle, encodeBundle, formatTileIndex, parseTilePath, tileInTree, tilePath, tilesOfTree } from '../../src/core/log/tiles.js';

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return `${(err as LogFormatError).code}: ${(err as Error).message}`;
  }
  return 'no error';
}

describe('entry layout', () => {
  it('is d (32 bytes) || kind byte || UTF-8 key, and decodes back', () => {
    const d = Buffer.alloc(32, 0xab);
    const bytes = encodeEntry({ digest: d, kind: 'workflow_close', key: 'wf:é' });
    expect(bytes.toString('hex')).toBe(`${'ab'.repeat(32)}02${Buffer.from('wf:é').toString('hex')}`);
    expect(decodeEntry(bytes)).toEqual({ digest: d, kind: 'workflow_close', key: 'wf:é' });
    expect(encodeEntry({ digest: d, kind: 'receipt', key: 'r' })[32]).toBe(1);
    expect(encodeEntry({ digest: d, kind: 'job_timeline', key: 'j' })[32]).toBe(3);
  });

  it('refuses a short entry, an unknown kind, bad UTF-8 and an oversized key, naming the field', () => {
    const d = Buffer.alloc(32);
    expect(codeOf(() => decodeEntry(Buffer.alloc(33)))).toMatch(/^log_bad_entry: entry: 33 bytes is shorter/);
    expect(codeOf(() => decodeEntry(Buffer.concat([d, Buffer.from([4, 0x61])]), 'entries[7]'))).toMatch(/^log_bad_entry: entries\[7\]\.kind: unknown kind byte 0x04/);
    expect(codeOf(() => decodeEntry(Buffer.concat([d, Buffer.from([1, 0xff])])))).toMatch(/^bad_utf8: entry\.key/);
    expect(codeOf(() => encodeEntry({ digest: d, kind: 'receipt', key: 'k'.repeat(65_503) }))).toMatch(/^log_too_large: entry\.key/);
    expect(codeOf(() => encodeEntry({ digest: d.subarray(1), kind: 'receipt', key: 'k' }))).toMatch(/^log_bad_entry: entry\.d/);
  });
});

describe('tlog-tiles paths and bundles', () => {
  it('encodes N in x-prefixed 3-digit groups, and partial tiles as .p/W', () => {
    expect(formatTileIndex(0)).toBe('000');
    expect(formatTileIndex(999)).toBe('999');
    expect(formatTileIndex(1000)).toBe('x001/000');
    expect(formatTileIndex(1234067)).toBe('x001/x234/067');
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).toBe('tile/0/x001/x234/067');
    expect(tilePath({ level: 'entries', index: 273, width: 112 })).toBe('tile/entries/273.p/112');
  });

  it('reads tile paths back strictly, and refuses every other spelling', () => {
    for (const ref of [{ level: 0, index: 1234067, width: 256 }, { level: 63, index: 0, width: 1 }, { level: 'entries' as const, index: 273, width: 112 }, { level: 2, index: 1000, width: 255 }]) {
      expect(parseTilePath(tilePath(ref))).toEqual(ref);
    }
    for (const bad of ['tile/0/0', 'tile/0/0000', 'tile/00/000', 'tile/64/000', 'tile/0/x000/001', 'tile/0/001/x234', 'tile/0/000.p/0', 'tile/0/000.p/256', 'tile/0/000.p/007',
      'tile/0/000.p', 'tile/data/000', 'tile/0/../000', 'tiles/0/000', 'tile/0/', 'tile/0/x01/000', `tile/0/${'x999/'.repeat(30)}000`, 'tile/0/000.p/1/2']) {
      expect(parseTilePath(bad), bad).toBeNull();
    }
  });

  it('lists the tiles of the spec\'s example tree of 70,000 and of 256', () => {
    const paths = tilesOfTree(70_000).map(tilePath);
    expect(paths).toHaveLength(273 + 1 + 1 + 1 + 1);
    expect(paths.slice(272)).toEqual(['tile/0/272', 'tile/0/273.p/112', 'tile/1/000', 'tile/1/001.p/17', 'tile/2/000.p/1']);
    expect(tilesOfTree(256).map(tilePath)).toEqual(['tile/0/000', 'tile/1/000.p/1']);
    expect(tilesOfTree(0)).toEqual([]);
    expect(tileInTree(70_000, 0, 273)).toEqual({ level: 0, index: 273, width: 112 });
    expect(() => tileInTree(70_000, 0, 274)).toThrow(/no tile 0\/274/);
  });

  it('writes entry bundles as big-endian uint16 lengths and bytes, and reads exactly W entries back', () => {
    const entries = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(300, 7)];
    const bundle = encodeBundle(entries);
    expect(bundle.subarray(0, 3)).toEqual(Buffer.from([0, 1, 0x61]));
    expect(bundle.subarray(5, 7)).toEqual(Buffer.from([0x01, 0x2c]));
    const ref = { level: 'entries' as const, index: 0, width: 3 };
    expect(decodeBundle(bundle, ref)).toEqual(entries);
    expect(codeOf(() => decodeBundle(bundle, { ...ref, width: 4 }))).toBe('log_bad_bundle: tile/entries/000.p/4: 3 entries, not 4');
    expect(codeOf(() => decodeBundle(bundle, { ...ref, width: 2 }))).toMatch(/^log_bad_bundle: tile\/entries\/000\.p\/2: 302 bytes after the 2 entries/);
    expect(codeOf(() => decodeBundle(bundle.subarray(0, bundle.length - 1), ref))).toMatch(/entry 2: 300 bytes announced, 299 left \(at byte 5\)/);
    expect(codeOf(() => decodeBundle(Buffer.from([0]), { ...ref, width: 1 }))).toMatch(/entry 0: length cut short/);
  });
});

// The Go note package's published test vector (golang.org/x/mod/sumdb/note, note_test.go).
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE = `${GO_TEXT}\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

describe('signed notes', () => {
  it('signs and reads the Go note package\'s vector byte for byte', () => {
    const signer = parseSignerKey(GO_SKEY);
    expect(signer.verifierKey).toBe(GO_VKEY);
    expect(signNote(GO_TEXT, [signer])).toBe(GO_NOTE);
    const vkey = parseVerifierKey(GO_VKEY);
    expect(vkey.keyId).toBe(0xc74f20a3);
    const check = checkNote(parseNote(GO_NOTE), [vkey]);
    expect(check).toMatchObject({ ok: true, text: GO_TEXT });
  });

  it('ignores unknown signers, refuses a bad signature by a trusted key, and says when no key is trusted', () => {
    const vkey = parseVerifierKey(GO_VKEY);
    const other = generateSignerKey('PeterNeumann').signer;
    const both = signNote(GO_TEXT, [other, parseSignerKey(GO_SKEY)]);
    expect(checkNote(parseNote(both), [vkey]).ok).toBe(true);
    expect(checkNote(parseNote(GO_NOTE), [parseVerifierKey(other.verifierKey)])).toMatchObject({ ok: false, reason: 'no_trusted_signature', message: expect.stringMatching(/^signer not trusted: signed by PeterNeumann\+c74f20a3/) });
    const forged = GO_NOTE.replace('If you think', 'If you thinK');
    expect(checkNote(parseNote(forged), [vkey])).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses malformed notes and keys, naming the field', () => {
    expect(codeOf(() => parseNote(GO_TEXT))).toMatch(/^log_bad_note: note: no blank line/);
    expect(codeOf(() => parseNote(GO_NOTE.slice(0, -1)))).toMatch(/^log_bad_note: note: no signature lines, or the last one does not end/);
    expect(codeOf(() => parseNote(GO_NOTE.replace('— ', '- ')))).toMatch(/^log_bad_note: note\.signatures\[0\]: a signature line starts with/);
    expect(codeOf(() => parseNote(GO_NOTE.replace('If', 'I\tf')))).toMatch(/^log_bad_note: note: control character U\+0009 at offset 1/);
    expect(codeOf(() => parseNote(`${GO_TEXT}\n— PeterNeumann AAAA\n`))).toMatch(/^log_bad_note: note\.signatures\[0\]: the signature is 3 bytes/);
    expect(codeOf(() => parseNote(GO_NOTE + `— x ${'A'.repeat(70_000)}\n`))).toMatch(/^log_too_large: note: \d+ bytes is over 65536/);
    expect(codeOf(() => parseVerifierKey(GO_VKEY.replace('c74f20a3', 'c74f20a4'), '--log-key'))).toMatch(/^log_bad_key: --log-key: the hash c74f20a4 does not match/);
    expect(codeOf(() => parseVerifierKey('PeterNeumann+c74f20a3'))).toMatch(/^log_bad_key: verifier key: not <name>\+<hash>\+<base64 key>/);
    expect(codeOf(() => parseVerifierKey(GO_VKEY.replace('ARpc', 'AXpc')))).toMatch(/^log_bad_key/);
    expect(codeOf(() => parseSignerKey(GO_SKEY.replace('c74f20a3', '00000000')))).toMatch(/^log_bad_key: log key: the hash does not match/);
    expect(codeOf(() => parseVerifierKey(`Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW`))).toMatch(/name is empty or holds a space/);
  });

  it('formats a verifier key as Go does: name + 8 hex digits of the key ID + base64(0x01 || key)', () => {
    const { signer, signerKeyText } = generateSignerKey('example.com/log');
    expect(signer.verifierKey).toBe(formatVerifierKey('example.com/log', signer.publicKey));
    expect(signer.verifierKey).toMatch(/^example\.com\/log\+[0-9a-f]{8}\+A[Q-f][A-Za-z0-9+/]{42}$/);
    expect(parseSignerKey(signerKeyText).verifierKey).toBe(signer.verifierKey);
  });
});

describe('checkpoints', () => {
  const signer = generateSignerKey('example.com/log').signer;
  const root = Buffer.alloc(32, 1);

  it('signs origin, size, base64 root and extension lines, and opens with the trusted key', () => {
    const note = signCheckpoint({ origin: 'example.com/log', size: 20852163, root, extensions: ['ext one'] }, signer);
    expect(note.split('\n').slice(0, 5)).toEqual(['example.com/log', '20852163', root.toString('base64'), 'ext one', '']);
    const opened = openCheckpoint(note, [parseVerifierKey(signer.verifierKey)]);
    expect(opened).toMatchObject({ ok: true, checkpoint: { origin: 'example.com/log', size: 20852163, root, extensions: ['ext one'] } });
    expect(openCheckpoint(note, [])).toMatchObject({ ok: false, reason: 'no_trusted_signature' });
  });

  it('refuses a size with leading zeros or over 2^53, a short root, an empty extension line', () => {
    const b64 = root.toString('base64');
    expect(codeOf(() => parseCheckpointText(`o\n007\n${b64}\n`))).toMatch(/^log_bad_checkpoint: checkpoint\.size: "007" is not a decimal tree size/);
    expect(codeOf(() => parseCheckpointText(`o\n9007199254740993\n${b64}\n`))).toMatch(/checkpoint\.size/);
    expect(codeOf(() => parseCheckpointText(`o\n1\n${root.subarray(1).toString('base64')}\n`))).toMatch(/checkpoint\.root: the root hash is 31 bytes/);
    expect(codeOf(() => parseCheckpointText(`o\n1\n${b64}\n\nx\n`))).toMatch(/checkpoint\.extensions\[0\]/);
    expect(codeOf(() => parseCheckpointText(`o\n1\n`))).toMatch(/2 lines/);
    expect(codeOf(() => parseCheckpointText(`\n1\n${b64}\n`))).toMatch(/checkpoint\.origin/);
  });
});
