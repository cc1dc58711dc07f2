/**
 * `aer1-anchor envelope FILE`: the envelope a receipt, workflow close or job timeline would
 * be anchored as, its canonical text and its digest. Nothing is sent anywhere.
 */
import { claimsFromInput } from '../../core/envelope/from-document.js';
import type { Evidence } from '../../core/envelope/claims.js';
import { buildEnvelope, envelopeCanonical, envelopeDigest } from '../../core/envelope/envelope.js';
import { InputError, readJsonFile, UsageError } from '../shared/run.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'print the anchor envelope of a receipt, workflow close or job timeline';

const USAGE = 'usage: aer1-anchor envelope FILE|- [--anchored-at TS] [--evidence-sha256 HEX] [--evidence-byte-length N] [--evidence-url URL] [--json]';

// Unknown or malformed flags are usage errors (exit 2): runMain maps parseArgs' errors.
function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    'anchored-at': { type: 'string' },
    'evidence-sha256': { type: 'string' },
    'evidence-byte-length': { type: 'string' },
    'evidence-url': { type: 'string' },
    json: { type: 'boolean' },
  }, { positionals: true });
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`envelope: expected one FILE (or - for stdin), got ${positionals.length} (see --help)`);

  const evidence: { -readonly [K in keyof Evidence]: Evidence[K] } = {};
  if (values['evidence-sha256'] !== undefined) evidence.evidence_sha256 = values['evidence-sha256'];
  if (values['evidence-url'] !== undefined) evidence.evidence_url = values['evidence-url'];
  const length = values['evidence-byte-length'];
  if (length !== undefined) {
    if (!/^(0|[1-9][0-9]*)$/.test(length) || !Number.isSafeInteger(Number(length))) {
      throw new InputError('bad_length', `expected a non-negative integer, got ${JSON.stringify(length)}`, 'evidence_byte_length');
    }
    evidence.evidence_byte_length = Number(length);
  }

  const input = readJsonFile(positionals[0]!);
  const claims = claimsFromInput(input, evidence);
  const envelope = buildEnvelope(claims, values['anchored-at'] ?? new Date());
  const canonical = envelopeCanonical(envelope);
  const digest = envelopeDigest(envelope).toString('hex');

  if (values.json) {
    process.stdout.write(`${JSON.stringify({ envelope, canonical, digest })}\n`);
  } else {
    process.stdout.write(`envelope:\n${JSON.stringify(envelope, null, 2)}\ncanonical:\n${canonical}\ndigest (sha256 of canonical):\n${digest}\n`);
  }
  return 0;
}
