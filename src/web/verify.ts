/**
 * `aer1-verify-anchor` for files dropped on the daemon's `/verify` page: the same pipeline
 * (src/core/verify) and the same report text, run in the browser from a bundle
 * (scripts/build-verify-bundle.mjs builds `src/adapters/http/static/verify.bundle.js`).
 * Nothing is uploaded: the inputs are the files' bytes, and the only network use is an
 * Esplora URL the user types. DOM-free, so the same function also runs under Node (tests).
 *
 * Inputs map to the CLI's flags one to one: `document` is FILE, `proof` is `--proof FILE`
 * (or FILE itself when no document is given), `headers` is `--headers FILE`, `esplora` is
 * `--esplora URL`, `network` is `--network`, `expectedPubkeys` are `--expected-pubkey`,
 * `trustFiles` are `--trust-file`, `requireConfirmed` is `--require-confirmed`.
 */
import { jsonTextDepth, MAX_JSON_DEPTH, parseJsonText, quoteBounded } from '../core/aer1/json-limits.js';
import { BITCOIN_NETWORKS, type BitcoinNetwork } from '../core/bitcoin/header.js';
import { Aer1Error, UsageError } from '../core/errors/errors.js';
import { BitcoinCheckCache } from '../core/verify/bitcoin.js';
import { EventCheckCache, parseExpectedPubkey } from '../core/verify/nostr.js';
import { verifyAnchor, type VerifyOptions } from '../core/verify/pipeline.js';
import { exitCode, formatText, reportJson, summarize, TOOL_NAME, type FileOutcome, type ReportJson } from '../core/verify/report.js';
import { parseTrustKeys } from '../core/verify/trust.js';
import { EsploraSource, HeadersFileSource, parseHeadersJson, type HeaderSource } from '../adapters/bitcoin/sources.js';

/** A file as the page read it: its name and its bytes. */
export interface DroppedFile {
  name: string;
  bytes: Uint8Array;
}

export interface BrowserVerifyRequest {
  document?: DroppedFile | null;
  proof?: DroppedFile | null;
  headers?: DroppedFile | null;
  esplora?: string | null;
  network?: string | null;
  expectedPubkeys?: readonly string[];
  trustFiles?: readonly DroppedFile[];
  requireConfirmed?: boolean;
}

export interface BrowserVerifyResult {
  /** As the CLI would exit: 0 PASS, 1 FAIL, 2 usage or unreadable input, 3 INCONCLUSIVE (nothing established). */
  exitCode: number;
  /** What the CLI prints on stdout (empty on a usage error). */
  text: string;
  /** `VERDICT: PASS|FAIL|INCONCLUSIVE: …` as the CLI prints it, or null on a usage error. */
  verdictLine: string | null;
  /** What the CLI prints on stderr on a usage error (`aer1-verify-anchor: …`), else null. */
  error: string | null;
  /** The `--json` result of the file, when it was verified. */
  report: ReportJson | null;
  /** The CLI command that gives the same result, with the files' names. */
  command: string;
}

/** What kind of file a dropped file looks like, so a drop of several files lands each in its slot. */
export type FileRole = 'document' | 'proof' | 'headers' | 'trust';

/**
 * Guesses a dropped file's role: a JSON object whose every key is a block height is a headers
 * file; a bare `aer1-anchor-proof-*` is a proof; other JSON is a document; text that is not
 * JSON is a trust file. The user can move a file to another slot; this is only the first guess.
 */
export function guessRole(file: DroppedFile): FileRole {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file.bytes);
  } catch {
    return 'document';
  }
  let value: unknown;
  try {
    if (jsonTextDepth(text) > MAX_JSON_DEPTH) return 'document';
    value = JSON.parse(text);
  } catch {
    return /^\s*[{[]/.test(text) ? 'document' : 'trust';
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length > 0 && keys.every((k) => /^\d{1,16}$/.test(k))) return 'headers';
    const version = (value as Record<string, unknown>).version;
    if (typeof version === 'string' && version.startsWith('aer1-anchor-proof-') && !('anchor_proof' in value)) return 'proof';
  }
  return 'document';
}

function textOf(file: DroppedFile): string {
  try {
    // as the CLI: invalid UTF-8 is refused, not silently replaced with U+FFFD
    return new TextDecoder('utf-8', { fatal: true }).decode(file.bytes);
  } catch {
    throw new UsageError(`${file.name} is not valid UTF-8 text`, 'not_utf8');
  }
}

function jsonOf(text: string, source: string): unknown {
  return parseJsonText(text, source);
}

function networkOf(value: string | null | undefined): BitcoinNetwork {
  if (value === undefined || value === null || value === '') return 'mainnet';
  if (!(BITCOIN_NETWORKS as readonly string[]).includes(value)) throw new UsageError(`--network must be one of ${BITCOIN_NETWORKS.join('|')}, got ${quoteBounded(value)}`);
  return value as BitcoinNetwork;
}

function headerSourceOf(req: BrowserVerifyRequest): HeaderSource | null {
  const esplora = req.esplora?.trim() ? req.esplora.trim() : null;
  if (req.headers && esplora !== null) throw new UsageError('give one header source, not --headers and --esplora');
  try {
    if (req.headers) {
      const name = `headers file ${req.headers.name}`;
      const text = (() => {
        try {
          return new TextDecoder('utf-8', { fatal: true }).decode(req.headers.bytes);
        } catch {
          throw new UsageError(`cannot read ${name}: not valid UTF-8 text`, 'unreadable');
        }
      })();
      return new HeadersFileSource(parseHeadersJson(jsonOf(text, name), name), name);
    }
    if (esplora !== null) return new EsploraSource(esplora);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
  return null;
}

const shellWord = (s: string): string => (/^[A-Za-z0-9_./:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

/** The CLI invocation these inputs stand for. */
export function commandFor(req: BrowserVerifyRequest): string {
  const args: string[] = [TOOL_NAME];
  if (req.document) args.push(req.document.name);
  if (req.proof) args.push(req.document ? '--proof' : '', req.proof.name);
  if (req.headers) args.push('--headers', req.headers.name);
  if (req.esplora?.trim()) args.push('--esplora', req.esplora.trim());
  if (req.network) args.push('--network', req.network);
  for (const k of req.expectedPubkeys ?? []) if (k.trim()) args.push('--expected-pubkey', k.trim());
  for (const t of req.trustFiles ?? []) args.push('--trust-file', t.name);
  if (req.requireConfirmed) args.push('--require-confirmed');
  return args.filter((a) => a !== '').map(shellWord).join(' ');
}

/** Verifies the dropped files as `aer1-verify-anchor` would verify them on disk. */
export async function verifyDropped(req: BrowserVerifyRequest, version: string): Promise<BrowserVerifyResult> {
  const command = commandFor(req);
  try {
    const input = req.document ?? req.proof;
    if (!input) throw new UsageError('expected FILE..., --dir DIR or --proof FILE (drop a receipt with its anchor_proof, or a proof file)');
    const trustFiles = (req.trustFiles ?? []).map((f) => parseTrustKeys(textOf(f), f.name));
    const trusted = [
      ...(req.expectedPubkeys ?? []).filter((k) => k.trim() !== '').map(parseExpectedPubkey),
      ...trustFiles.flatMap((t) => t.pubkeys),
    ];
    const options: VerifyOptions = {
      expectedPubkeys: [...new Set(trusted)],
      // a trust file's log verifier keys (the page has no --log-key field: put them in a trust file)
      logKeys: trustFiles.flatMap((t) => t.logKeys),
      relays: [],
      useProofRelays: false,
      headerSource: headerSourceOf(req),
      network: networkOf(req.network),
      requireConfirmed: req.requireConfirmed === true,
      eventCache: new EventCheckCache(),
      bitcoinCache: new BitcoinCheckCache(),
      relayFetcher: null,
    };
    const givenProof = req.document && req.proof ? jsonOf(textOf(req.proof), req.proof.name) : undefined;
    const value = jsonOf(textOf(input), input.name);
    let outcome: FileOutcome;
    try {
      outcome = { file: input.name, report: await verifyAnchor({ value, ...(givenProof !== undefined ? { proof: givenProof } : {}) }, options) };
    } catch (err) {
      if (err instanceof UsageError && err.code === 'no_proof') {
        // the CLI's words; finding the anchor on relays (discovery) needs the CLI's --online
        throw new UsageError(`${input.name}: ${err.message} (or give --online --relay URL --expected-pubkey KEY to find its anchor on relays)`, err.code);
      }
      if (err instanceof UsageError) throw new UsageError(`${input.name}: ${err.message}`, err.code);
      throw err;
    }
    const text = formatText([outcome], true, version);
    const verdictLine = text.split('\n').find((l) => l.startsWith('VERDICT: ')) ?? null;
    return {
      exitCode: exitCode(summarize([outcome])),
      text,
      verdictLine,
      error: null,
      report: 'report' in outcome ? reportJson(outcome.file, outcome.report) : null,
      command,
    };
  } catch (err) {
    if (err instanceof Aer1Error) {
      return { exitCode: err instanceof UsageError ? 2 : 1, text: '', verdictLine: null, error: `${TOOL_NAME}: ${err.message}`, report: null, command };
    }
    return { exitCode: 70, text: '', verdictLine: null, error: `${TOOL_NAME}: internal error: ${err instanceof Error ? err.message : String(err)}`, report: null, command };
  }
}
