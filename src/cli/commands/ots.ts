/**
 * `aer1-anchor ots info FILE [--json]`
 * `aer1-anchor ots verify FILE [--digest HEX | --file ORIGINAL] [--headers FILE | --esplora URL | --bitcoind URL]
 *                             [--network mainnet|regtest] [--json]`
 *
 * verify exits 0 only when at least one Bitcoin attestation checks out (and the digest
 * matches when one is given); 1 when the proof is invalid, commits to another digest, or
 * is only pending (the calendars are listed); 2 for usage errors and unreadable files.
 */
import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { BITCOIN_NETWORKS, type BitcoinNetwork, headerSourceFrom } from '../../adapters/bitcoin/index.js';
import { type DetachedTimestampFile, hashFile, parseDetached } from '../../core/ots/codec.js';
import { OtsFormatError } from '../../core/ots/errors.js';
import { attestationJson, formatInfo, timestampJson } from '../../core/ots/info.js';
import { type ProofCheck, checkDetachedProof } from '../../core/ots/proof-check.js';
import { allAttestations } from '../../core/ots/timestamp.js';
import { UsageError } from '../shared/run.js';

export const summary = 'inspect or verify an OpenTimestamps proof (.ots)';

const USAGE = `usage: aer1-anchor ots info FILE [--json]
       aer1-anchor ots verify FILE [--digest HEX | --file ORIGINAL]
                   [--headers FILE | --esplora URL | --bitcoind URL] [--network mainnet|regtest] [--json]`;

function readBytes(file: string, what: string): Buffer {
  try {
    return readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${file === '-' ? 'stdin' : file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unreadable');
  }
}

function parse(argv: string[], options: ParseArgsConfig['options']): { values: Record<string, string | boolean | undefined>; file: string } {
  // Unknown or malformed flags are usage errors (exit 2, one line): runMain maps parseArgs' errors.
  const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const [file, ...extra] = parsed.positionals;
  if (file === undefined) throw new UsageError(`missing FILE\n${USAGE}`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'\n${USAGE}`);
  return { values: parsed.values as Record<string, string | boolean | undefined>, file };
}

async function info(argv: string[]): Promise<number> {
  const { values, file } = parse(argv, { json: { type: 'boolean' } });
  const proof = parseDetached(readBytes(file, 'proof'));
  if (values.json) {
    const attestations = allAttestations(proof.timestamp).map(({ msg, attestation }) => ({ ...attestationJson(attestation), msg: msg.toString('hex') }));
    process.stdout.write(
      JSON.stringify({ file_hash_op: proof.hashOp, file_digest: proof.digest.toString('hex'), attestations, timestamp: timestampJson(proof.timestamp) }) + '\n',
    );
  } else {
    process.stdout.write(formatInfo(proof) + '\n');
  }
  return 0;
}

function isoTime(unix: number): string {
  return new Date(unix * 1000).toISOString().replace('.000Z', 'Z');
}

function expectedDigest(values: Record<string, string | boolean | undefined>, proof: DetachedTimestampFile): Buffer | undefined {
  if (typeof values.digest === 'string') {
    const hex = values.digest;
    if (!/^([0-9a-fA-F]{2})+$/.test(hex)) throw new UsageError(`--digest must be hex, got '${hex}'`);
    return Buffer.from(hex, 'hex');
  }
  if (typeof values.file === 'string') return hashFile(proof.hashOp, readBytes(values.file, 'original file'));
  return undefined;
}

type Verdict = 'verified' | 'pending' | 'invalid';

function verdictOf(check: ProofCheck): { verdict: Verdict; reason: string } {
  if (check.digest === 'mismatch') return { verdict: 'invalid', reason: `the proof commits to ${check.file_digest}, not to the given digest` };
  if (check.verified) return { verdict: 'verified', reason: `Bitcoin block ${check.verified.height} attests the data existed as of ${isoTime(check.verified.time)}` };
  const failed = check.bitcoin.filter((b) => b.status === 'failed');
  const unchecked = check.bitcoin.filter((b) => b.status === 'unchecked');
  const list = (bs: typeof failed): string => bs.map((b) => `block ${b.height}: ${b.code ?? b.reason}`).join('; ');
  if (failed.length > 0 && unchecked.length === 0) return { verdict: 'invalid', reason: `no Bitcoin attestation checks out (${list(failed)})` };
  if (unchecked.length > 0) return { verdict: 'invalid', reason: `no Bitcoin attestation could be checked (${list([...failed, ...unchecked])})` };
  if (check.pending.length > 0) return { verdict: 'pending', reason: `pending at ${[...new Set(check.pending.map((p) => p.uri))].join(', ')}; no Bitcoin attestation yet` };
  return { verdict: 'invalid', reason: 'the proof has no Bitcoin attestation' };
}

function formatCheck(check: ProofCheck, verdict: Verdict, reason: string, digestSource: string): string {
  const lines = [`File ${check.hash_op} hash: ${check.file_digest}`];
  if (check.digest === 'match') lines.push(`Digest: matches ${digestSource}`);
  else if (check.digest === 'mismatch') lines.push(`Digest: does NOT match ${digestSource}`);
  else lines.push('Digest: not checked (give --digest HEX or --file ORIGINAL)');
  for (const b of check.bitcoin) {
    if (b.status === 'verified') lines.push(`Bitcoin block ${b.height}: verified, block hash ${b.block_hash}, time ${b.time} (${isoTime(b.time!)})`);
    else lines.push(`Bitcoin block ${b.height}: ${b.status === 'failed' ? 'FAILED' : 'not checked'}: ${b.reason}`);
  }
  for (const p of check.pending) lines.push(`Pending at ${p.uri} (commitment ${p.commitment})`);
  for (const o of check.other) lines.push(`Other attestation (not checked): ${JSON.stringify(o)}`);
  lines.push(`Result: ${verdict.toUpperCase()}: ${reason}`);
  return lines.join('\n');
}

async function verify(argv: string[]): Promise<number> {
  const { values, file } = parse(argv, {
    json: { type: 'boolean' },
    digest: { type: 'string' },
    file: { type: 'string' },
    headers: { type: 'string' },
    esplora: { type: 'string' },
    bitcoind: { type: 'string' },
    network: { type: 'string' },
  });
  if (values.digest !== undefined && values.file !== undefined) throw new UsageError('give --digest or --file, not both');
  const sources = (['headers', 'esplora', 'bitcoind'] as const).filter((k) => values[k] !== undefined);
  if (sources.length > 1) throw new UsageError(`give one header source, not ${sources.map((s) => `--${s}`).join(' and ')}`);
  const network = (values.network ?? 'mainnet') as BitcoinNetwork;
  if (!BITCOIN_NETWORKS.includes(network)) throw new UsageError(`--network must be ${BITCOIN_NETWORKS.join(' or ')}, got '${String(values.network)}'`);
  let source;
  try {
    source = headerSourceFrom({
      headersFile: values.headers as string | undefined,
      esploraUrl: values.esplora as string | undefined,
      bitcoindUrl: values.bitcoind as string | undefined,
    });
  } catch (err) {
    throw new UsageError(`bad header source: ${(err as Error).message}`);
  }
  const bytes = readBytes(file, 'proof');

  let proof: DetachedTimestampFile;
  try {
    proof = parseDetached(bytes);
  } catch (err) {
    if (values.json && err instanceof OtsFormatError) {
      process.stdout.write(JSON.stringify({ verdict: 'invalid', reason: err.message, code: err.code, offset: err.offset ?? null }) + '\n');
      return 1;
    }
    throw err;
  }
  const expected = expectedDigest(values, proof);
  const check = await checkDetachedProof(proof, { expectedDigest: expected, source, network });
  if (check.bitcoin.length > 0 && !source && check.digest !== 'mismatch') {
    throw new UsageError(
      `the proof has Bitcoin attestations (block ${check.bitcoin.map((b) => b.height).join(', ')}); give --headers FILE, --esplora URL or --bitcoind URL to check them`,
    );
  }
  const { verdict, reason } = verdictOf(check);
  if (values.json) process.stdout.write(JSON.stringify({ verdict, reason, ...check }) + '\n');
  else process.stdout.write(formatCheck(check, verdict, reason, typeof values.digest === 'string' ? '--digest' : `--file ${String(values.file)}`) + '\n');
  return verdict === 'verified' ? 0 : 1;
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'info') return info(rest);
  if (sub === 'verify') return verify(rest);
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  throw new UsageError(sub === undefined ? USAGE : `unknown ots subcommand '${sub}'\n${USAGE}`);
}
