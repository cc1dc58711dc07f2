/**
 * `aer1-anchor keygen [--out FILE] [--force] [--json]`: writes a new Nostr signing key
 * (mode 0600) and prints its public key. `--log --name NAME` writes an Ed25519 anchor-log
 * key instead and prints its verifier key. The secret is never printed.
 */
import { configDefault } from '../../adapters/config/schema.js';
import { logKeyFile } from '../../adapters/config/config.js';
import { writeKeyFile } from '../../adapters/nostr/key-file.js';
import { writeLogKeyFile } from '../../adapters/log/key-file.js';
import { isValidKeyName } from '../../core/log/note.js';
import { UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'write a new Nostr signing key (or, with --log, an anchor-log key) file, mode 0600, and print its public key';

export const DEFAULT_KEY_FILE = configDefault('nostr.keyFile');
/** The key file a daemon of the default redis.prefix reads when log.keyFile is unset. */
export const DEFAULT_LOG_KEY_FILE = logKeyFile({ redis: { prefix: configDefault('redis.prefix') }, log: { dir: null, keyFile: null } });

const USAGE = `usage: aer1-anchor keygen [--out FILE] [--force] [--json]
       aer1-anchor keygen --log --name NAME [--out FILE] [--force] [--json]
  --out FILE   where to write the key (default ${DEFAULT_KEY_FILE}, with --log
               ${DEFAULT_LOG_KEY_FILE}); the folder is created
  --force      replace an existing key file (the old key is lost)
  --json       print {"file","npub","pubkey"} (with --log {"file","name","vkey"})
  --log        an Ed25519 anchor-log key (C2SP signed-note; Go's note.NewSigner reads the
               file); prints its verifier key <name>+<hash>+<base64>, which auditors pass
               to log verify --log-key
  --name NAME  the log key's name, usually the log's origin (a schema-less URL such as
               example.com/aer1): no spaces, no '+'`;

// Unknown or malformed flags are usage errors (exit 2): runMain maps parseArgs' errors.
function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    out: { type: 'string', short: 'o' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
    log: { type: 'boolean' },
    name: { type: 'string' },
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.log) return writeLogKey(values);
  if (values.name !== undefined) throw new UsageError('keygen: --name names a log key: add --log');
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

function writeLogKey(values: { out?: string; force?: boolean; json?: boolean; name?: string }): number {
  if (values.name === undefined) throw new UsageError('keygen --log needs --name NAME (the log\'s origin, e.g. example.com/aer1)');
  if (!isValidKeyName(values.name)) throw new UsageError(`keygen: --name ${JSON.stringify(values.name.slice(0, 80))} holds a space or '+', or is empty`);
  const file = values.out ?? DEFAULT_LOG_KEY_FILE;
  if (file === '') throw new UsageError('keygen: --out needs a file name');
  const written = writeLogKeyFile(file, values.name, { force: values.force === true });
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ file: written.path, name: written.name, vkey: written.verifierKey })}\n`);
  } else {
    process.stdout.write(`${written.verifierKey}\nwrote ${written.path} (mode 0600)\n`);
  }
  return 0;
}
