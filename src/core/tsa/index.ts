/** RFC 3161 time-stamps of checkpoints: the messages, the token check, the caller's trust anchors. */
export { TSA_FORMAT_ERROR_CODES, TsaFormatError, type TsaFormatErrorCode } from './errors.js';
export {
  MAX_RESPONSE_BYTES, NONCE_BYTES, OID_SHA256, decodeTimeStampResponse, encodeTimeStampRequest, nonceFromRandom,
  type TimeStampAnswer,
} from './rfc3161.js';
export {
  MAX_CLOCK_SKEW_MS, MAX_TOKEN_BYTES, checkTimeStampToken, formatName, type TimestampCheck, type TimestampStatus,
  type TokenExpectations,
} from './token-check.js';
export { MAX_TRUST_ANCHORS, NO_TSA_TRUST_ANCHORS, parseTsaTrustAnchors, type TsaTrustAnchors } from './trust-anchors.js';
export {
  MAX_TIMESTAMPS, checkCheckpointTimestamps, parseCheckpointTimestamps, type CheckpointTimestamp, type CheckpointTimestampResult,
} from './checkpoint-timestamps.js';
