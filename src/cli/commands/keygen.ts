/**
 * `aer1-anchor keygen [--out FILE] [--force] [--json]`: writes a new Nostr signing key
 * (mode 0600) and prints its public key. The secret is never printed.
 */
import { parseArgs } from 'node:util';
import { configDefault } from '../../adapters/config/schema.js';
import { writeKeyFile } from '../../adapters/nostr/key-file.js';
import { UsageError } from '../shared/run.js';

export const summary = 'write a new Nostr signing key file (mode 0600) and print its npub';

export const DEFAULT_KEY_FILE = configDefault('nostr.keyFile');

const USAGE = `usage: aer1-anchor keygen [--out FILE] [--force] [--json]
  --out FILE   where to write the key (default ${DEFAULT_KEY_FILE}); the folder is created
  --force      replace an existing key file (the old key is lost)
  --json       print {"file","npub","pubkey"}`;

// Unknown or malformed flags are usage errors (exit 2): runMain maps parseArgs' errors.
function parseFlags(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: false,
    strict: true,
    options: {
      out: { type: 'string', short: 'o' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const file = values.out ?? DEFAULT_KEY_FILE;
  if (file === '') throw new UsageError('keygen: --out needs a file name');
  const written = writeKeyFile(file, { force: values.force === true });
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ file: written.path, npub: written.npub, pubkey: written.publicKey })}\n`);
  } else {
    process.stdout.write(`${written.npub}\npubkey ${written.publicKey}\nwrote ${written.path} (mode 0600)\n`);
  }
  return 0;
}
