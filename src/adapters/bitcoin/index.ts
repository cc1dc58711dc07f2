/** Bitcoin header sources and attestation checks, in one import. */
export { BitcoinVerificationError, type BitcoinErrorCode } from '../../core/bitcoin/errors.js';
export {
  BITCOIN_NETWORKS,
  HEADER_LENGTH,
  POW_LIMITS,
  checkProofOfWork,
  displayHex,
  hashToNumber,
  parseBlockHeader,
  sha256d,
  targetFromBits,
  type BitcoinNetwork,
  type BlockHeader,
} from '../../core/bitcoin/header.js';
export {
  BitcoindRpcSource,
  EsploraSource,
  HeadersFileSource,
  headerSourceFrom,
  parseHeadersJson,
  type HeaderSource,
  type HeaderSourceSettings,
  type HttpSourceOptions,
} from './sources.js';
export { verifyBitcoinAttestation, type VerifiedBlock } from '../../core/bitcoin/verify.js';

import { BitcoinVerificationError } from '../../core/bitcoin/errors.js';
import { type HeaderSource, type HeaderSourceSettings, headerSourceFrom } from './sources.js';

/**
 * The daemon's source from its `ots` settings (headers file, else bitcoind, else Esplora).
 * With none configured, a source whose every lookup fails (transient), so a batch stays
 * pending rather than confirmed unchecked.
 */
export function headerSourceFromConfig(settings: HeaderSourceSettings): HeaderSource {
  return (
    headerSourceFrom(settings) ?? {
      name: 'no header source',
      headerAt: () => Promise.reject(new BitcoinVerificationError('bitcoin_source_error', 'no header source configured (ots.headersFile, ots.bitcoindUrl or ots.esploraUrl)')),
    }
  );
}
