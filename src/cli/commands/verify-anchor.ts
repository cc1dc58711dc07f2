/**
 * `aer1-verify-anchor FILE... [--dir DIR] [--proof FILE] [--json] [--headers FILE |
 * --esplora URL | --bitcoind URL] [--network mainnet|regtest] [--expected-pubkey HEX|npub]...
 * [--trust-file FILE]... [--online (--relay URL... | --use-proof-relays)] [--require-confirmed]`
 * (also `aer1-anchor verify-anchor`): checks anchor proofs offline against recomputed roots
 * (SPEC §6), trusting only the keys, relays and header sources the caller names.
 * Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 nothing established (INCONCLUSIVE).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BITCOIN_NETWORKS, type BitcoinNetwork } from '../../core/bitcoin/header.js';
import { BitcoindRpcSource, EsploraSource, HeadersFileSource, parseHeadersJson, type HeaderSource } from '../../adapters/bitcoin/sources.js';
import { BitcoinCheckCache } from '../../core/verify/bitcoin.js';
import { EventCheckCache, parseExpectedPubkey } from '../../core/verify/nostr.js';
import { parseTrustKeys, type TrustedKeys } from '../../core/verify/trust.js';
import { parseVerifierKey } from '../../core/log/note.js';
import { parseWitnessKey, type WitnessKey } from '../../core/witness/cosignature.js';
import { anchorsOf } from './tsa.js';
import { InputError } from '../../core/errors/errors.js';
import type { RelayFetcher } from '../../core/verify/online.js';
import { RelayClientFetcher } from '../../adapters/nostr/relay-fetcher.js';
import { verifyAnchor, type VerifyOptions } from '../../core/verify/pipeline.js';
import { discoveryFor, parseKinds, parseRelays } from '../shared/discovery-options.js';
import { exitCode, formatJson, formatText, summarize, TOOL_NAME, type FileOutcome } from '../../core/verify/report.js';
import { VERSION } from '../../version.js';
import { parseJsonText, readInputText, readJsonFile, UsageError } from '../shared/run.js';
import { quoteBounded } from '../../core/aer1/json-limits.js';
import { displayName } from '../../core/verify/names.js';
import { commandArgs } from '../shared/args.js';

export const summary = 'verify anchor proofs offline against recomputed roots (same as aer1-verify-anchor)';

const USAGE = `usage: ${TOOL_NAME} FILE... [--dir DIR] [--proof FILE] [--json]
         [--headers FILE | --esplora URL | --bitcoind URL] [--network mainnet|regtest]
         [--expected-pubkey HEX|npub]... [--log-key VKEY]... [--trust-file FILE]...
         [--tsa-ca FILE] [--witness VKEY]... [--witness-quorum N] [--min-confirmations N]
         [--online (--relay URL... | --use-proof-relays)] [--require-confirmed]
         [--require-anchored] [--kind N]... [--max-events N]

FILE is a receipt, workflow close or job timeline with its anchor_proof member attached,
or one of those plus --proof FILE, or a bare aer1-anchor-proof-v1 file. --dir DIR adds
every *.json file in DIR (not recursive).

Trust is yours to give: a Nostr event counts only when signed by a key you name
(--expected-pubkey, or a --trust-file with one hex or npub key per line); an anchor log
checkpoint only when signed by a log key you name (--log-key <name>+<hash>+<base64>, or
such a line in a --trust-file), else its log check says "signer not trusted"; --online asks
the relays you name with --relay, and the proof's own relay list only with
--use-proof-relays. Bitcoin attestations are checked against the header source you give.
The anchor log checkpoint's RFC 3161 tokens count when they chain to a CA in --tsa-ca FILE
(a PEM bundle; none: "TSA not trusted"); its witness cosignatures when they verify under a
--witness key (<name>+<hash>+<base64(0x04 ‖ key)>), --witness-quorum N of them (default
all given). Each time a party vouches for is reported ("the checkpoint holding d existed
at T", with who says so), and a trusted TSA token or the witness quorum counts as
confirmed for --require-confirmed (docs/verify.md). --min-confirmations N: a Bitcoin
attestation confirms only when the header source shows N blocks on the attested one's
chain, it included (default 1).

A document without a proof, with --online --relay URL... --expected-pubkey KEY..., is
checked against every anchor those signers published on those relays for its key
(discovery; event kind 3099 unless --kind). With a proof, --online also reads the
relays' other anchors of its key. Each relay's answer is read page by page to its end,
at most --max-events events (default 10000); an answer cut short, a relay that fails
or times out, leaves it incomplete. Two anchors of one key with different roots are a
FAIL (equivocation). No anchor found, or incomplete answers, is INCONCLUSIVE (nothing
established); no anchor found on complete answers is a FAIL under --require-anchored.
Exit 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 INCONCLUSIVE.`;

// Unknown or malformed flags are usage errors (exit 2): runMain maps parseArgs' errors.
function parseFlags(argv: string[]) {
  return commandArgs(argv, {
    proof: { type: 'string' },
    dir: { type: 'string', multiple: true },
    json: { type: 'boolean' },
    headers: { type: 'string' },
    esplora: { type: 'string' },
    bitcoind: { type: 'string' },
    network: { type: 'string' },
    'expected-pubkey': { type: 'string', multiple: true },
    'trust-file': { type: 'string', multiple: true },
    'log-key': { type: 'string', multiple: true },
    'tsa-ca': { type: 'string' },
    witness: { type: 'string', multiple: true },
    'witness-quorum': { type: 'string' },
    'min-confirmations': { type: 'string' },
    online: { type: 'boolean' },
    relay: { type: 'string', multiple: true },
    'use-proof-relays': { type: 'boolean' },
    'require-confirmed': { type: 'boolean' },
    'require-anchored': { type: 'boolean' },
    kind: { type: 'string', multiple: true },
    'max-events': { type: 'string' },
    version: { type: 'boolean' },
  }, { positionals: true });
}

/** Every `*.json` file directly in `dir`, sorted by name. */
export function jsonFilesIn(dir: string): string[] {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new UsageError(`--dir ${displayName(dir)} is not a directory`, 'unreadable');
    names = readdirSync(dir);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read directory ${displayName(dir)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unreadable');
  }
  // each file is opened without blocking and checked to be a regular file when it is read (readInputBytes)
  const files = names.filter((n) => n.endsWith('.json')).sort().map((n) => join(dir, n));
  if (files.length === 0) throw new UsageError(`no *.json files in ${displayName(dir)}`, 'unreadable');
  return files;
}

/**
 * The caller's header source. A headers file is read and checked (heights, hex, links)
 * once here, and every lookup of the run is answered from what was read.
 */
export function headerSourceFor(values: { headers?: string; esplora?: string; bitcoind?: string }): HeaderSource | null {
  const given = (['headers', 'esplora', 'bitcoind'] as const).filter((k) => values[k] !== undefined);
  if (given.length > 1) throw new UsageError(`give one header source, not ${given.map((g) => `--${g}`).join(' and ')}`);
  try {
    if (values.headers !== undefined) {
      const name = `headers file ${displayName(values.headers)}`;
      const json = parseJsonText(readInputText(values.headers), name);
      return new HeadersFileSource(parseHeadersJson(json, name), `headers file ${values.headers}`);
    }
    if (values.esplora !== undefined) return new EsploraSource(values.esplora);
    if (values.bitcoind !== undefined) return new BitcoindRpcSource(values.bitcoind);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
  return null;
}

/** `--max-events N`: events read per relay per look-up before its answer is called incomplete. */
export function parseMaxEvents(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(text.trim())) throw new UsageError(`--max-events must be a whole number from 1 to 999999999, got ${quoteBounded(text, 20)}`);
  return Number(text.trim());
}

/** `--trust-file FILE`: one key per line (64 hex or npub1…, or a log verifier key), blank lines and `#` comments ignored. */
export function readTrustFile(file: string): TrustedKeys {
  return parseTrustKeys(readInputText(file), displayName(file));
}

/** `--log-key VKEY`: an anchor log verifier key `<name>+<hash>+<base64>`; a malformed one is a usage error. */
function parseLogKey(text: string, i: number): ReturnType<typeof parseVerifierKey> {
  try {
    return parseVerifierKey(text, `--log-key ${i + 1}`);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

/** `--witness VKEY`: a C2SP witness's cosignature/v1 verifier key; a malformed one is a usage error. */
function parseWitness(text: string, i: number): WitnessKey {
  try {
    return parseWitnessKey(text, `--witness ${i + 1}`);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

/** `--witness-quorum N`: at most the distinct witness keys given. */
function parseWitnessQuorum(text: string | undefined, keys: readonly WitnessKey[]): number | undefined {
  if (text === undefined) return undefined;
  const distinct = new Set(keys.map((k) => k.text)).size;
  if (!/^[0-9]{1,3}$/.test(text.trim()) || Number(text) > distinct) throw new UsageError(`--witness-quorum must be a whole number from 0 to ${distinct} (the distinct --witness keys given), got ${quoteBounded(text, 20)}`);
  return Number(text.trim());
}

function network(value: string | undefined): BitcoinNetwork {
  if (value === undefined) return 'mainnet';
  if (!(BITCOIN_NETWORKS as readonly string[]).includes(value)) throw new UsageError(`--network must be one of ${BITCOIN_NETWORKS.join('|')}, got ${quoteBounded(value)}`);
  return value as BitcoinNetwork;
}

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

export async function run(argv: string[], io: Io = processIo): Promise<number> {
  const { values, positionals } = parseFlags(argv);
  if (values.help) {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    io.stdout(`${TOOL_NAME} ${VERSION}\n`);
    return 0;
  }
  const files = [...positionals, ...(values.dir ?? []).flatMap(jsonFilesIn)];
  const proofFile = values.proof;
  if (proofFile !== undefined && files.length > 1) throw new UsageError('--proof goes with exactly one FILE');
  if (files.length === 0 && proofFile === undefined) throw new UsageError(`expected FILE..., --dir DIR or --proof FILE\n${USAGE}`);
  // one FILE (or --proof alone) and no --dir: a single result; otherwise per-file results and a summary
  const single = (values.dir ?? []).length === 0 && files.length <= 1;

  const relays = parseRelays(values.relay);
  const useProofRelays = values['use-proof-relays'] === true;
  if (values.online && relays.length === 0 && !useProofRelays) {
    throw new UsageError('--online asks the relays you name: give --relay URL (repeatable), or --use-proof-relays to ask the relays the proof itself lists');
  }
  if (!values.online && (relays.length || useProofRelays)) throw new UsageError('--relay and --use-proof-relays go with --online');
  const trustFiles = (values['trust-file'] ?? []).map(readTrustFile);
  const trusted = [...(values['expected-pubkey'] ?? []).map(parseExpectedPubkey), ...trustFiles.flatMap((t) => t.pubkeys)];
  const logKeys = [...(values['log-key'] ?? []).map(parseLogKey), ...trustFiles.flatMap((t) => t.logKeys)];
  const witnessKeys = (values.witness ?? []).map(parseWitness);
  const witnessQuorum = parseWitnessQuorum(values['witness-quorum'], witnessKeys);
  const minConfirmations = values['min-confirmations'];
  if (minConfirmations !== undefined && !/^[1-9][0-9]{0,2}$/.test(minConfirmations.trim())) throw new UsageError(`--min-confirmations must be a whole number from 1 to 999, got ${quoteBounded(minConfirmations, 20)}`);
  const kinds = parseKinds(values.kind);
  const maxEvents = parseMaxEvents(values['max-events']);
  const options: VerifyOptions = {
    expectedPubkeys: [...new Set(trusted)],
    logKeys,
    tsaTrustAnchors: values['tsa-ca'] !== undefined ? anchorsOf(values['tsa-ca']) : null,
    witnessKeys,
    ...(witnessQuorum !== undefined ? { witnessQuorum } : {}),
    ...(minConfirmations !== undefined ? { minConfirmations: Number(minConfirmations.trim()) } : {}),
    relays,
    useProofRelays,
    kinds,
    ...(maxEvents !== undefined ? { relayBound: { maxEvents } } : {}),
    headerSource: headerSourceFor(values),
    network: network(values.network),
    requireConfirmed: values['require-confirmed'] === true,
    eventCache: new EventCheckCache(),
    bitcoinCache: new BitcoinCheckCache(),
  };
  const givenProof = proofFile !== undefined && files.length === 1 ? readJsonFile(proofFile) : undefined;
  const inputs = files.length ? files : [proofFile!];

  let fetcher: RelayFetcher | null = null;
  if (values.online) fetcher = new RelayClientFetcher();
  options.relayFetcher = fetcher;
  const outcomes: FileOutcome[] = [];
  const discover = discoveryFor(values, options, kinds);
  /** Reads and verifies one file; a UsageError names the file (its message goes out as one line). */
  const verifyFile = async (file: string): Promise<FileOutcome> => {
    const value = readJsonFile(file); // its errors already name the file
    try {
      try {
        return { file, report: await verifyAnchor({ value, ...(givenProof !== undefined ? { proof: givenProof } : {}) }, options) };
      } catch (err) {
        // a document without a proof: find its anchor on the caller's relays instead
        if (err instanceof UsageError && err.code === 'no_proof') return { file, discovery: await discover(value, fetcher, err) };
        throw err;
      }
    } catch (err) {
      if (err instanceof UsageError) throw new UsageError(`${displayName(file)}: ${err.message}`, err.code);
      throw err;
    }
  };
  try {
    for (const file of inputs) {
      if (single) {
        // one input: an unreadable file or an unknown proof version is the run's exit-2 error
        outcomes.push(await verifyFile(file));
        continue;
      }
      try {
        outcomes.push(await verifyFile(file));
      } catch (err) {
        if (!(err instanceof UsageError)) throw err;
        io.stderr(`${TOOL_NAME}: ${err.message}\n`);
        outcomes.push({ file, unreadable: err.message });
      }
    }
  } finally {
    fetcher?.close();
  }
  io.stdout(values.json ? formatJson(outcomes, single, VERSION) : formatText(outcomes, single, VERSION));
  return exitCode(summarize(outcomes));
}
