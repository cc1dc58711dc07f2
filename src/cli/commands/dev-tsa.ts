/**
 * `aer1-anchor dev-tsa`: a development RFC 3161 timestamp authority in the foreground.
 * The first line on stdout is its URL; the CA certificate (PEM) is written to
 * `--out DIR/tsa-ca.pem` for verifiers' `--tsa-ca`. It runs until SIGINT or SIGTERM.
 */
import { formatName } from '../../core/tsa/index.js';
import { startDevTsa, type DevTsa } from '../../dev/tsa/index.js';
import { UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'run a development RFC 3161 timestamp authority (writes its CA certificate)';

const USAGE = 'usage: aer1-anchor dev-tsa [--port P] [--host H] [--out DIR]   (DIR default ./var/dev-tsa)';

export async function run(argv: string[]): Promise<number> {
  const { values } = commandArgs(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    out: { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const port = values.port ?? '0';
  if (!/^[0-9]{1,5}$/.test(port) || Number(port) > 65535) throw new UsageError(`--port must be an integer in 0..65535, got ${JSON.stringify(port)}`);
  const outDir = values.out ?? './var/dev-tsa';

  let tsa: DevTsa;
  try {
    tsa = await startDevTsa({ port: Number(port), host: values.host ?? '127.0.0.1', outDir });
  } catch (err) {
    const { code, syscall } = err as NodeJS.ErrnoException;
    if (syscall === 'listen') throw new UsageError(`cannot listen: ${(err as Error).message}`, 'cannot_listen');
    if (code !== undefined && syscall !== undefined) throw new UsageError(`cannot write the CA certificate under ${outDir}: ${(err as Error).message}`, 'unwritable');
    throw err;
  }
  process.stdout.write(tsa.url + '\n');
  process.stderr.write(`dev TSA: CA certificate ${tsa.caFile} (give it as --tsa-ca); TSA ${formatName(tsa.tsa.certificate.subject)}\n`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.stderr.write(`dev TSA: ${signal}, closing\n`);
  await tsa.close();
  return 0;
}
