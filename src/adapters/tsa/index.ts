export {
  DEFAULT_TSA_MAX_RESPONSE_BYTES, DEFAULT_TSA_TIMEOUT_MS, TIMESTAMP_QUERY, TIMESTAMP_REPLY, TsaClient, parseTsaUrl,
  type TimestampToken, type TsaClientOptions,
} from './tsa-client.js';
export { TSA_ERROR_CODES, TsaError, type TsaErrorCode } from './tsa-error.js';
