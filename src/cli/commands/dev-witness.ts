/**
 * `aer1-anchor dev-witness`: a development C2SP witness (tlog-witness add-checkpoint,
 * cosignature/v1) in the foreground. Prints its URL, then its verifier key; runs until
 * SIGINT or SIGTERM.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseVerifierKey, type VerifierKey } from '../../core/log/note.js';
import { startDevWitness, type DevWitness } from '../../dev/witness/dev-witness.js';
import { loadOrCreateWitnessKey } from '../../dev/witness/witness-key-file.js';
import { InputError, UsageError } from '../shared/run.js';

export const summary = 'run a development C2SP witness (add-checkpoint, cosignature/v1)';

const USAGE = `usage: aer1-anchor dev-witness --state DIR [--key FILE] [--name NAME] [--port P] [--host H]
         [--origin ORIGIN --log-key VKEY [--log-key VKEY]...]... [--json]
  --state DIR      where the latest cosigned size, root and checkpoint of each origin are
                   kept (one JSON file per origin, replaced atomically)
  --key FILE       the witness key (default DIR/witness.key; made, mode 0600, when missing)
  --name NAME      the key name of a new key (default localhost/dev-witness)
  --origin ORIGIN  a log this witness cosigns; each --log-key after it is a verifier key
                   (<name>+<hash>+<base64>) trusted for it
  --json           print {"url","vkey","state"} on one line instead of two lines`;

function port(value: string | undefined): number {
  if (value === undefined) return 0;
  if (!/^[0-9]+$/.test(value) || Number(value) > 65535) throw new UsageError(`--port must be an integer in 0..65535, got ${JSON.stringify(value)}`);
  return Number(value);
}

export async function run(argv: string[]): Promise<number> {
  const { values, tokens } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    tokens: true,
    options: {
      state: { type: 'string' },
      key: { type: 'string' },
      name: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      origin: { type: 'string', multiple: true },
      'log-key': { type: 'string', multiple: true },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.state) throw new UsageError('--state DIR is required (see --help)');
  const logs = new Map<string, VerifierKey[]>();
  let current: string | null = null;
  for (const t of tokens) {
    if (t.kind !== 'option') continue;
    if (t.name === 'origin') {
      current = t.value ?? '';
      if (current === '' || current.includes('\n')) throw new UsageError('--origin takes a non-empty one-line origin');
      if (!logs.has(current)) logs.set(current, []);
    } else if (t.name === 'log-key') {
      if (current === null) throw new UsageError('--log-key comes after the --origin it is trusted for');
      try {
        logs.get(current)!.push(parseVerifierKey(t.value ?? '', '--log-key'));
      } catch (err) {
        if (err instanceof InputError) throw new UsageError(err.message, err.code);
        throw err;
      }
    }
  }
  for (const [origin, keys] of logs) if (keys.length === 0) throw new UsageError(`--origin ${origin} has no --log-key`);
  const keyFile = values.key ?? join(values.state, 'witness.key');
  let witness: DevWitness;
  try {
    const { key, created } = loadOrCreateWitnessKey(keyFile, values.name ?? 'localhost/dev-witness');
    if (created) process.stderr.write(`dev witness: wrote a new key to ${keyFile} (mode 0600)\n`);
    witness = await startDevWitness({
      host: values.host ?? '127.0.0.1',
      port: port(values.port),
      stateDir: values.state,
      key,
      logs,
      onAnswer: (status, reason) => process.stderr.write(`add-checkpoint ${status}: ${reason}\n`),
    });
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message, err.code);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') throw new UsageError(`cannot listen: ${(err as Error).message}`, 'cannot_listen');
    throw err;
  }
  if (values.json) process.stdout.write(`${JSON.stringify({ url: witness.url, vkey: witness.verifierKey, state: values.state })}\n`);
  else process.stdout.write(`${witness.url}\n${witness.verifierKey}\n`);
  process.stderr.write(`dev witness: ${logs.size} origin(s): ${[...logs.keys()].join(', ') || '(none)'}; state in ${values.state}\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.stderr.write(`dev witness: ${signal}, closing\n`);
  await witness.close();
  return 0;
}
