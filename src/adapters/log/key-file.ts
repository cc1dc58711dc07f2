/**
 * The log's Ed25519 key file: Go's signer-key text (`PRIVATE+KEY+<name>+<hash>+<base64>`,
 * which note.NewSigner reads), mode 0600, refused when group or others can read or write
 * it (src/adapters/key-file/secret-file.ts, as for the Nostr key file).
 */
import { generateSignerKey, parseSignerKey, type LogSigner } from '../../core/log/note.js';
import { readSecretFile, writeSecretFile } from '../key-file/secret-file.js';

export interface WrittenLogKey {
  readonly path: string;
  readonly name: string;
  readonly verifierKey: string;
}

/** Writes a fresh log key named `name` (mode 0600, folder 0700); refuses to replace one unless `force`. */
export function writeLogKeyFile(path: string, name: string, options: { force?: boolean } = {}): WrittenLogKey {
  const { signerKeyText, signer } = generateSignerKey(name);
  writeSecretFile(path, Buffer.from(`${signerKeyText}\n`, 'utf8'), options.force === true);
  return { path, name: signer.name, verifierKey: signer.verifierKey };
}

/** Loads a log key file; one readable or writable by group or others is refused (as ssh does). */
export function loadLogKeyFile(file: string): LogSigner {
  const { text } = readSecretFile(file, { what: 'log key file', maxBytes: 1024 });
  return parseSignerKey(text, `log key file ${file}`);
}
