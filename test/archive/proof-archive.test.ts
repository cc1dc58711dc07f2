/**
 * The proof archive's paths and files on the real file system: hostile keys (traversal,
 * absolute paths, NUL, dots, very long, non-ASCII) stay inside the archive folder under
 * bounded names, distinct keys never share a file, writes are atomic and read back, and a
 * damaged or foreign file is never taken for a key's proof.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { archiveName, NAME_MAX, ProofArchive, proofBytes } from '../../src/adapters/archive/proof-archive.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { tempDir } from '../helpers/harness.js';

function proofFor(key: string, subject: 'receipt' | 'chain-head' = 'chain-head'): AnchorProof {
  const envelope = subject === 'chain-head' ? { subject, job_id: key, type: 'zambo-receipt-anchor/1', anchored_at: '2026-01-01T00:00:00Z' } : { subject, receipt_uuid: key, type: 'zambo-receipt-anchor/1', anchored_at: '2026-01-01T00:00:00Z' };
  return { version: 'aer1-anchor-proof-v1', envelope, digest: 'ab'.repeat(32), status: 'confirmed' } as AnchorProof;
}

const HOSTILE = [
  '../../../etc/passwd',
  '..',
  '.',
  '/etc/shadow',
  'C:\\Windows\\system32',
  'a/../../b',
  'nul\u0000byte',
  '.hidden',
  '%2e%2e%2f',
  '=' + 'f'.repeat(64),
  'x'.repeat(10_000),
  'é'.repeat(100),
  '🙂/../🙂',
  'CON',
  ' ',
  'line\nbreak',
];

describe('ProofArchive paths', () => {
  it('keeps every hostile key inside the folder, in two shard folders, under a bounded name', () => {
    const dir = tempDir('archive');
    const archive = new ProofArchive(dir);
    const paths = new Set<string>();
    for (const key of HOSTILE) {
      const path = archive.pathFor(key);
      const rel = relative(dir, path);
      expect(rel.startsWith('..'), `${JSON.stringify(key.slice(0, 40))} → ${path}`).toBe(false);
      const parts = rel.split(sep);
      expect(parts.length).toBe(3);
      expect(parts[0]).toMatch(/^[0-9a-f]{2}$/);
      expect(parts[1]).toMatch(/^[0-9a-f]{2}$/);
      expect(basename(path).length).toBeLessThanOrEqual(NAME_MAX + '.json'.length);
      expect(basename(path)).toMatch(/^[A-Za-z0-9_%=-]+\.json$/);
      paths.add(path);
    }
    expect(paths.size).toBe(HOSTILE.length);
  });

  it('names a plain key as itself and a long one by its hash; the two forms never meet', () => {
    expect(archiveName('job-7a1f')).toBe('job-7a1f');
    expect(archiveName('a.b/c')).toBe('a%2Eb%2Fc');
    expect(archiveName('x'.repeat(NAME_MAX))).toBe('x'.repeat(NAME_MAX));
    expect(archiveName('x'.repeat(NAME_MAX + 1))).toMatch(/^=[0-9a-f]{64}$/);
    // a key that looks like a hashed name is encoded ('=' → %3D), so it cannot take another key's file
    expect(archiveName('=' + 'f'.repeat(64))).toBe('%3D' + 'f'.repeat(64));
  });

  it('writes atomically (no temporary file left), reads back the same bytes, and hostile keys round-trip', async () => {
    const outer = tempDir('archive');
    const dir = join(outer, 'proofs');
    const archive = new ProofArchive(dir);
    for (const key of HOSTILE) {
      const proof = proofFor(key);
      const path = await archive.write(key, proof);
      expect(readFileSync(path).equals(proofBytes(proof))).toBe(true);
      expect((await archive.read(key))?.proof).toEqual(proof);
      const folder = path.slice(0, path.lastIndexOf(sep));
      expect(readdirSync(folder).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    }
    // nothing outside the archive folder was written
    expect(readdirSync(outer)).toEqual(['proofs']);
    const all = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => statSync(join(dir, n)).isFile());
    expect(all.length).toBe(HOSTILE.length);
    expect(await archive.read('never-archived')).toBeNull();
  });

  it('never takes a foreign or damaged file for a key\'s proof', async () => {
    const dir = tempDir('archive');
    const archive = new ProofArchive(dir);
    const path = archive.pathFor('victim');
    mkdirSync(path.slice(0, path.lastIndexOf(sep)), { recursive: true });
    // another key's proof in this key's place (a case-folding file system could do it)
    writeFileSync(path, proofBytes(proofFor('Victim')));
    expect(await archive.read('victim')).toBeNull();
    // and is never overwritten by this key's proof
    await expect(archive.write('victim', proofFor('victim'))).rejects.toThrow(/holds the proof of another key/);
    expect(readFileSync(path).equals(proofBytes(proofFor('Victim')))).toBe(true);
    writeFileSync(path, '{"version": ');
    await expect(archive.read('victim')).rejects.toThrow(/is not JSON \(damaged archive file\)/);
    writeFileSync(path, '[]');
    await expect(archive.read('victim')).rejects.toThrow(/is not an aer1-anchor-proof-v1/);
  });
});
