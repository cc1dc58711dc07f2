/**
 * ProofArchive: the folder that holds the proofs of subjects retired from Redis
 * (docs/reliability.md, Retention). One file per subject, the exact bytes
 * `GET /v1/anchors/{key}/proof` answered before the subject was retired, at
 * `<dir>/<hh>/<hh>/<name>.json` where the two folders are the first four hex digits of
 * sha256(key) and `name` is the key with every byte outside [A-Za-z0-9_-] written `%XX`,
 * or `=<sha256 hex>` when that is longer than NAME_MAX (no encoded key starts with `=`,
 * so the two forms never meet). A hostile key cannot leave the folder: no `/`, `.` or
 * NUL survives the encoding, and names are bounded.
 * Writes are atomic: a temporary file in the same folder, fsync, rename, fsync of the folder.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import type { AnchorProof } from '../../core/proof/format.js';
import { subjectKey, type Envelope } from '../../core/envelope/envelope.js';
import { replaceFile } from '../files/replace-file.js';

/** Longest file name (without `.json`) made from a key; longer keys are named by their hash. */
export const NAME_MAX = 128;

const SAFE = /[A-Za-z0-9_-]/;

/** The file name (without `.json`) of `key`'s proof. */
export function archiveName(key: string): string {
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && SAFE.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (out.length > NAME_MAX) break;
  }
  return out.length > NAME_MAX || out.length === 0 ? `=${sha256Hex(key)}` : out;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The bytes a proof is archived and served as: what the HTTP API writes for a JSON body. */
export function proofBytes(proof: AnchorProof): Buffer {
  return Buffer.from(`${JSON.stringify(proof)}\n`, 'utf8');
}

export interface ArchivedProof {
  bytes: Buffer;
  proof: AnchorProof;
}

export class ProofArchive {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /** Where `key`'s proof lives; always inside `dir`. */
  pathFor(key: string): string {
    const h = sha256Hex(key);
    const path = join(this.dir, h.slice(0, 2), h.slice(2, 4), `${archiveName(key)}.json`);
    // the encoding makes this impossible; checked anyway, since a path outside would be a breach
    if (!path.startsWith(this.dir + sep)) throw new Error(`archive path of a key left the archive folder: ${path}`);
    return path;
  }

  /**
   * Writes `key`'s proof atomically (temporary file, fsync, rename, fsync of the folder),
   * then reads it back: resolves only when the file holds these bytes and parses to a proof
   * of the same digest, so the caller may forget the subject.
   */
  async write(key: string, proof: AnchorProof): Promise<string> {
    const path = this.pathFor(key);
    const folder = path.slice(0, path.lastIndexOf(sep));
    const bytes = proofBytes(proof);
    const existing = await this.readFile(path).catch(() => null);
    // written by an earlier pass (a crash before the removal, webhooks not all acknowledged yet)
    if (existing?.bytes.equals(bytes)) return path;
    // another key's proof in this key's place (a case-folding file system): never overwritten
    if (existing && subjectKey(existing.proof.envelope as unknown as Envelope) !== key) {
      throw new Error(`archive: ${path} holds the proof of another key; keep archive.dir on a case-sensitive file system`);
    }
    await mkdir(folder, { recursive: true });
    await replaceFile(path, bytes, 0o644);
    const back = await this.read(key);
    if (!back || !back.bytes.equals(bytes) || back.proof.digest !== proof.digest) {
      throw new Error(`archive: ${path} did not read back as the proof just written`);
    }
    return path;
  }

  /** `key`'s archived proof, or null when none is archived (or the file is not this key's proof). */
  async read(key: string): Promise<ArchivedProof | null> {
    const found = await this.readFile(this.pathFor(key));
    // a case-folding file system could put two keys in one file: only this key's proof counts
    if (!found || subjectKey(found.proof.envelope as unknown as Envelope) !== key) return null;
    return found;
  }

  /** The proof in the file at `path`, whichever key it is for; null when there is no file. */
  private async readFile(path: string): Promise<ArchivedProof | null> {
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let proof: AnchorProof;
    try {
      proof = JSON.parse(bytes.toString('utf8')) as AnchorProof;
    } catch {
      throw new Error(`archive: ${path} is not JSON (damaged archive file)`);
    }
    if (typeof proof !== 'object' || proof === null || typeof proof.digest !== 'string' || typeof proof.envelope !== 'object' || proof.envelope === null) {
      throw new Error(`archive: ${path} is not an aer1-anchor-proof-v1 (damaged archive file)`);
    }
    return { bytes, proof };
  }
}

/** What `GET /v1/anchors/{key}` answers for a subject retired to the archive (its Redis record is gone). */
export interface ArchivedAnchor {
  key: string;
  kind: string | null;
  status: string;
  digest: string;
  archived: true;
  anchoredAt: string | null;
  envelope: Record<string, unknown>;
  witnesses: Record<string, string>;
  /** Where the proof is served. */
  proof: string;
}

export function archivedSummary(key: string, proof: AnchorProof): ArchivedAnchor {
  const witnesses: Record<string, string> = {};
  if (proof.nostr) witnesses.nostr = proof.nostr.status;
  if (proof.ots) witnesses.ots = proof.ots.status;
  const env = proof.envelope;
  return {
    key,
    kind: typeof env.subject === 'string' ? env.subject : null,
    status: proof.status,
    digest: proof.digest,
    archived: true,
    anchoredAt: typeof env.anchored_at === 'string' ? env.anchored_at : null,
    envelope: env,
    witnesses,
    proof: `/v1/anchors/${encodeURIComponent(key)}/proof`,
  };
}
