/**
 * The dev witness's key file: `PRIVATE+KEY+<name>+<hash>+<base64(0x04 ‖ seed)>` (the log
 * key's text with the cosignature/v1 type), mode 0600; made when missing, refused when
 * group or others can read or write it (src/adapters/key-file/secret-file.ts, as the Nostr
 * and log key files).
 */
import { existsSync } from 'node:fs';
import { readSecretFile, writeSecretFile } from '../../adapters/key-file/secret-file.js';
import { generateCosignerKey, parseCosignerKey, type CosignerKey } from '../../core/witness/cosignature.js';

export function loadOrCreateWitnessKey(file: string, name: string): { key: CosignerKey; created: boolean } {
  if (!existsSync(file)) {
    const { signerKeyText, key } = generateCosignerKey(name);
    writeSecretFile(file, Buffer.from(`${signerKeyText}\n`, 'utf8'), false);
    return { key, created: true };
  }
  const { text } = readSecretFile(file, { what: 'witness key file', maxBytes: 1024 });
  return { key: parseCosignerKey(text, `witness key file ${file}`), created: false };
}
