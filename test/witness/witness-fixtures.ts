/** Real logs (LogWriter on a temp folder) and dev witnesses on loopback for the witness tests. */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { generateSignerKey, parseVerifierKey, type LogSigner } from '../../src/core/log/note.js';
import { generateCosignerKey, type CosignerKey } from '../../src/core/witness/cosignature.js';
import { startDevWitness, type DevWitness } from '../../src/dev/witness/dev-witness.js';

export const ORIGIN = 'example.test/aer1/0';

export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface TestLog {
  readonly writer: LogWriter;
  readonly signer: LogSigner;
  /** Appends `count` entries (their keys start with `tag`) and checkpoints: the signed note. */
  grow(count: number, tag?: string): Promise<string>;
}

export async function openLog(dir: string, signer: LogSigner = generateSignerKey(ORIGIN).signer): Promise<TestLog> {
  const writer = await LogWriter.open({ dir, origin: ORIGIN, signer });
  return {
    writer,
    signer,
    grow(count, tag = 's') {
      for (let i = 0; i < count; i++) {
        const n = writer.size;
        writer.append({ digest: createHash('sha256').update(`${tag}${n}`).digest(), kind: 'receipt', key: `${tag}/${n}` });
      }
      return writer.checkpoint();
    },
  };
}

export async function startWitness(stateDir: string, logKeys: string[], options: { key?: CosignerKey; clock?: () => number; name?: string } = {}): Promise<DevWitness & { key: CosignerKey }> {
  const key = options.key ?? generateCosignerKey(options.name ?? 'witness.test/w').key;
  const w = await startDevWitness({ stateDir, key, logs: new Map([[ORIGIN, logKeys.map((k) => parseVerifierKey(k))]]), ...(options.clock ? { clock: options.clock } : {}) });
  return Object.assign(w, { key });
}

export const noteText = (note: string): string => note.slice(0, note.lastIndexOf('\n\n') + 1);
