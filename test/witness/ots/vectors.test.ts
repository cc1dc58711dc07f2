import { describe, expect, it } from 'vitest';
import { parseDetached, serializeDetached, hashFile } from '../../../src/core/ots/codec.js';
import { allAttestations, pendingAttestations } from '../../../src/core/ots/timestamp.js';
import { OtsFormatError } from '../../../src/core/ots/errors.js';
import { listVectors, readVector, sharedVectorsFor } from './vector-files.js';

describe.runIf(sharedVectorsFor('reading the shared .ots vectors'))('reading the shared .ots vectors', () => {
  const { valid, invalid } = listVectors();

  it('finds the valid and invalid vectors', () => {
    expect(valid).toContain('hello-world.txt.ots');
    expect(valid.length).toBeGreaterThanOrEqual(9);
    expect(invalid.length).toBeGreaterThanOrEqual(3);
  });

  it.each(valid)('%s round-trips byte for byte', (name) => {
    const bytes = readVector(name);
    const file = parseDetached(bytes);
    expect(serializeDetached(file).equals(bytes)).toBe(true);
  });

  it.each(valid)('%s commits to the sha256 of its original file', (name) => {
    const file = parseDetached(readVector(name));
    const original = readVector(name.replace(/\.ots$/, ''));
    expect(file.digest.toString('hex')).toBe(hashFile(file.hashOp, original).toString('hex'));
  });

  it.each(invalid)('%s is refused with a reason and an offset', (name) => {
    const bytes = readVector(name);
    let err: unknown;
    try {
      parseDetached(bytes);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OtsFormatError);
    const e = err as OtsFormatError;
    expect(e.offset).toBeTypeOf('number');
    expect(e.message).toMatch(/at byte \d+/);
  });

  it('names the reason for each invalid vector', () => {
    const code = (name: string): string => {
      try {
        parseDetached(readVector(name));
        return 'accepted';
      } catch (e) {
        return (e as OtsFormatError).code;
      }
    };
    expect(code('invalid/bad-major-version.ots')).toBe('ots_bad_version');
    expect(code('invalid/exceeds-max-msg-length.ots')).toBe('ots_message_too_long');
    expect(code('invalid/invalid-file-digest-type.ots')).toBe('ots_bad_file_hash_op');
  });

  it('reads hello-world.txt.ots as one Bitcoin attestation at block 358391', () => {
    const file = parseDetached(readVector('hello-world.txt.ots'));
    const atts = allAttestations(file.timestamp);
    expect(atts).toHaveLength(1);
    expect(atts[0]!.attestation).toEqual({ kind: 'bitcoin', height: 358391 });
    // The merkle root of block 358391, internal byte order.
    expect(atts[0]!.msg.toString('hex')).toBe('007ee445d23ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a');
  });

  it('reads incomplete.txt.ots as pending at the alice calendar', () => {
    const file = parseDetached(readVector('incomplete.txt.ots'));
    const pending = pendingAttestations(file.timestamp);
    expect(pending.map((p) => p.uri)).toEqual(['https://alice.btc.calendar.opentimestamps.org']);
    expect(pending[0]!.commitment.length).toBeGreaterThan(0);
  });

  it('keeps an unknown notary byte for byte', () => {
    const file = parseDetached(readVector('unknown-notary.txt.ots'));
    const atts = allAttestations(file.timestamp);
    expect(atts.map((a) => a.attestation.kind)).toEqual(['unknown']);
  });
});
