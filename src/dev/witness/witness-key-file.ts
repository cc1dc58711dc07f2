/**
 * The dev witness's key file: `PRIVATE+KEY+<name>+<hash>+<base64(0x04 ‖ seed)>` (the log
 * key's text with the cosignature/v1 type), mode 0600; made when missing, refused when
 * group or others can read or write it.
 */
import { chmodSync, closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { UsageError } from '../../core/errors/errors.js';
import { generateCosignerKey, parseCosignerKey, type CosignerKey } from '../../core/witness/cosignature.js';

export function loadOrCreateWitnessKey(file: string, name: string): { key: CosignerKey; created: boolean } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new UsageError(`cannot read witness key file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, 'unreadable');
    const { signerKeyText, key } = generateCosignerKey(name);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const out = openSync(file, 'wx', 0o600);
    try {
      chmodSync(file, 0o600);
      writeSync(out, `${signerKeyText}\n`);
      fsyncSync(out);
    } finally {
      closeSync(out);
    }
    return { key, created: true };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UsageError(`witness key file ${file} is not a regular file`, 'unreadable');
    if ((st.mode & 0o066) !== 0) throw new UsageError(`witness key file ${file} is readable or writable by group or others; run: chmod 600 ${file}`, 'key_file_permissions');
    if (st.size > 1024) throw new UsageError(`witness key file ${file} is over 1024 bytes`, 'unreadable');
    return { key: parseCosignerKey(readFileSync(fd, 'utf8'), `witness key file ${file}`), created: false };
  } finally {
    closeSync(fd);
  }
}
