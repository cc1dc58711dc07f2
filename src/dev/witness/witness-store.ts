/**
 * The dev witness's durable state: one JSON file per origin, `<dir>/<hex SHA-256 of the
 * origin>.json` = `{"origin","size","root","checkpoint"}` (the latest cosigned size, its
 * root hash in base64 and that checkpoint with the log's signature and ours), replaced
 * atomically (write aside, fsync, rename, fsync the folder). `update` runs one origin's
 * read-check-write under that origin's lock, so two requests never both pass the check
 * on the same old size (tlog-witness: the check and the update are atomic).
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeBase64Strict } from '../../core/aer1/base64.js';
import { replaceFile } from '../../adapters/files/replace-file.js';
import type { OriginRecord } from './witness-decision.js';

export interface StoredOrigin extends OriginRecord {
  readonly origin: string;
  /** The checkpoint note with the log's signature and the witness's cosignature. */
  readonly checkpoint: string;
}

export const originHash = (origin: string): string => createHash('sha256').update(origin, 'utf8').digest('hex');

export class WitnessStore {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The record for an origin, read from its file; null when never cosigned. A damaged file throws. */
  read(origin: string): Promise<StoredOrigin | null> {
    return this.readHash(originHash(origin), origin);
  }

  /** By the origin's hash (the monitoring path); null when never cosigned. */
  async readHash(hash: string, origin?: string): Promise<StoredOrigin | null> {
    if (!/^[0-9a-f]{64}$/.test(hash)) return null;
    const file = join(this.dir, `${hash}.json`);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let v: { origin?: unknown; size?: unknown; root?: unknown; checkpoint?: unknown };
    try {
      v = JSON.parse(bytes.toString('utf8')) as typeof v;
    } catch {
      throw new Error(`${file} is not JSON: the witness state is damaged`);
    }
    if (typeof v.origin !== 'string' || (origin !== undefined && v.origin !== origin) || originHash(v.origin) !== hash) throw new Error(`${file}: origin does not match its file name`);
    if (typeof v.size !== 'number' || !Number.isSafeInteger(v.size) || v.size < 0) throw new Error(`${file}: size is not a tree size`);
    if (typeof v.root !== 'string' || typeof v.checkpoint !== 'string') throw new Error(`${file}: root or checkpoint missing`);
    const root = decodeBase64Strict(v.root, `${file}.root`);
    if (root.length !== 32) throw new Error(`${file}: root is not 32 bytes`);
    return { origin: v.origin, size: v.size, root, checkpoint: v.checkpoint };
  }

  /** Runs `fn` with the origin's record under its lock; `fn` returns the record to persist (or null) and its answer. */
  async update<T>(origin: string, fn: (record: StoredOrigin | null) => { persist: StoredOrigin | null; answer: T }): Promise<T> {
    const prior = this.locks.get(origin) ?? Promise.resolve();
    const run = prior.then(async () => {
      const { persist, answer } = fn(await this.read(origin));
      if (persist !== null) {
        const body = JSON.stringify({ origin: persist.origin, size: persist.size, root: persist.root.toString('base64'), checkpoint: persist.checkpoint });
        await this.replace(`${originHash(origin)}.json`, Buffer.from(`${body}\n`, 'utf8'));
      }
      return answer;
    });
    const settled = run.catch(() => undefined);
    this.locks.set(origin, settled);
    void settled.then(() => {
      if (this.locks.get(origin) === settled) this.locks.delete(origin);
    });
    return run;
  }

  /** A crash leaves the old file or the new one (replaceFile). */
  private async replace(name: string, bytes: Buffer): Promise<void> {
    await replaceFile(join(this.dir, name), bytes, 0o600);
  }
}
