/**
 * `aer1-anchor/verify`: what an auditor calls to check a proof offline — the verify
 * pipeline as a function, the proof format, and where Bitcoin headers and (with
 * `--online`'s equivalent) relay events come from.
 */
export { verifyAnchor, type VerifyInput, type VerifyOptions, type VerifyReport, type Verdict } from '../core/verify/pipeline.js';
export type {
  CheckName, CheckResult, CheckStatus, NostrWitnessReport, OtsWitnessReport, SubjectReport, WitnessReports, WitnessStatement, WitnessVerdict,
} from '../core/verify/types.js';
export { BitcoinCheckCache } from '../core/verify/bitcoin.js';
export { EventCheckCache, parseExpectedPubkey } from '../core/verify/nostr.js';
export type { RelayFetcher } from '../core/verify/online.js';
export { BITCOIN_NETWORKS, type BitcoinNetwork } from '../core/bitcoin/header.js';
export { RelayClientFetcher } from '../adapters/nostr/relay-fetcher.js';
export {
  BitcoindRpcSource, EsploraSource, HeadersFileSource, headerSourceFrom, parseHeadersJson,
  type HeaderSource, type HeaderSourceSettings, type HttpSourceOptions,
} from '../adapters/bitcoin/sources.js';
export { Aer1Error, UsageError } from '../core/errors/errors.js';
export * from '../core/proof/format.js';
