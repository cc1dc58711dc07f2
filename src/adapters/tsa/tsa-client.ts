/**
 * An RFC 3161 timestamp authority over HTTP (RFC 3161 §3.4): `POST` the DER `TimeStampReq`
 * to the TSA's URL as `application/timestamp-query`, read the `application/timestamp-reply`.
 * One deadline covers connect, headers and body; the answer is capped while it streams in;
 * redirects are never followed (a TSA must not send our request to a host nobody
 * configured, and a timestamp request has no reason to move). The token is checked before
 * it is returned: status granted, our imprint and our nonce, the CMS signature, the
 * ESSCertID(v2) binding, the TSA certificate's EKU and validity, a genTime not before the
 * request (beyond clock skew), and the chain to the trust anchors given (none given: the token is kept as "untrusted", as the verifier would say).
 */
import { randomBytes } from 'node:crypto';
import { VERSION } from '../../version.js';
import {
  MAX_CLOCK_SKEW_MS, MAX_RESPONSE_BYTES, NONCE_BYTES, NO_TSA_TRUST_ANCHORS, TsaFormatError, checkTimeStampToken, decodeTimeStampResponse,
  encodeTimeStampRequest, nonceFromRandom, type TimestampCheck, type TsaTrustAnchors,
} from '../../core/tsa/index.js';
import { TsaError } from './tsa-error.js';
import { readBoundedBody } from '../fetch/bounded-body.js';

export const TIMESTAMP_QUERY = 'application/timestamp-query';
export const TIMESTAMP_REPLY = 'application/timestamp-reply';
export const DEFAULT_TSA_TIMEOUT_MS = 10_000;
export const DEFAULT_TSA_MAX_RESPONSE_BYTES = 16 * 1024;

export interface TsaClientOptions {
  /** Deadline per request, connect to last body byte (default 10,000 ms). */
  readonly timeoutMs?: number;
  /** Largest answer accepted (default 16 KiB, at most 64 KiB); a longer one is aborted mid-stream. */
  readonly maxResponseBytes?: number;
  /** The CAs a TSA certificate must chain to (default none: tokens come back "untrusted"). */
  readonly trustAnchors?: TsaTrustAnchors;
  /** Default `aer1-anchor/<version>`. */
  readonly userAgent?: string;
}

export interface TimestampToken {
  readonly url: string;
  /** The DER `TimeStampToken`, as stored in proofs (base64). */
  readonly token: Uint8Array;
  /** The check made on receipt: PASS, or untrusted when no trust anchor was given or reached. */
  readonly check: TimestampCheck;
}

/** A TSA URL: http(s), no credentials or fragment (a query is the TSA's business). */
export function parseTsaUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TsaError('bad_url', url, 'the URL does not parse');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TsaError('bad_url', url, 'a TSA URL is http or https');
  if (parsed.username || parsed.password || parsed.hash) throw new TsaError('bad_url', url, 'a TSA URL carries no credentials or fragment');
  return parsed;
}

export class TsaClient {
  readonly url: string;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  private readonly target: URL;
  private readonly trustAnchors: TsaTrustAnchors;
  private readonly userAgent: string;

  constructor(url: string, opts: TsaClientOptions = {}) {
    this.target = parseTsaUrl(url);
    this.url = url;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TSA_TIMEOUT_MS;
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_TSA_MAX_RESPONSE_BYTES;
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs <= 0) throw new TsaError('bad_option', url, `timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
    if (!Number.isInteger(this.maxResponseBytes) || this.maxResponseBytes <= 0 || this.maxResponseBytes > MAX_RESPONSE_BYTES) {
      throw new TsaError('bad_option', url, `maxResponseBytes must be an integer in 1..${MAX_RESPONSE_BYTES}, got ${opts.maxResponseBytes}`);
    }
    this.trustAnchors = opts.trustAnchors ?? NO_TSA_TRUST_ANCHORS;
    this.userAgent = opts.userAgent ?? `aer1-anchor/${VERSION}`;
  }

  /** Time-stamps `data` (for a checkpoint: its note body); a token that does not check is a `bad_token` error. */
  async timestamp(data: Uint8Array): Promise<TimestampToken> {
    const nonce = nonceFromRandom(randomBytes(NONCE_BYTES));
    const sentAt = Date.now();
    const body = await this.post(encodeTimeStampRequest(data, nonce));
    let answer;
    try {
      answer = decodeTimeStampResponse(body);
    } catch (err) {
      if (err instanceof TsaFormatError) throw new TsaError('bad_response', this.url, err.message);
      throw err;
    }
    if (!answer.granted) throw new TsaError('refused', this.url, `the TSA answered ${answer.status}: ${answer.failure}`);
    const check = await checkTimeStampToken(answer.token, { data, nonce, trustAnchors: this.trustAnchors }, 'token');
    if (check.status === 'FAIL') throw new TsaError('bad_token', this.url, check.detail);
    // A TSA clock behind ours would date the checkpoint before it existed: refused on receipt.
    if (check.genTime !== null && Date.parse(check.genTime) < sentAt - MAX_CLOCK_SKEW_MS) {
      throw new TsaError('bad_token', this.url, `genTime ${check.genTime} is before the request was sent (${new Date(sentAt).toISOString()}): the TSA's clock is behind`);
    }
    return { url: this.url, token: answer.token, check };
  }

  private async post(request: Uint8Array): Promise<Buffer> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const overLimit = new AbortController();
    const signal = AbortSignal.any([deadline, overLimit.signal]);
    const fail = (err: unknown, stage: string): TsaError => {
      if (err instanceof TsaError) return err;
      if (deadline.aborted) return new TsaError('timeout', this.url, `no complete answer within ${this.timeoutMs} ms (${stage})`);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return new TsaError('network', this.url, `POST failed (${stage}): ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    };
    const tooLarge = (what: string): TsaError => {
      overLimit.abort();
      return new TsaError('too_large', this.url, `the answer ${what} exceeds ${this.maxResponseBytes} bytes`);
    };
    let res: Response;
    try {
      res = await fetch(this.target, {
        method: 'POST',
        headers: { 'Content-Type': TIMESTAMP_QUERY, Accept: TIMESTAMP_REPLY, 'Accept-Encoding': 'identity', 'User-Agent': this.userAgent },
        body: request,
        signal,
        redirect: 'manual',
      });
    } catch (err) {
      throw fail(err, 'connecting');
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      const where = res.status >= 300 && res.status < 400 ? `, a redirect to ${res.headers.get('location') ?? '(none)'}, not followed` : '';
      throw new TsaError('http_status', this.url, `HTTP ${res.status}${where}`, res.status);
    }
    const type = res.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (type !== TIMESTAMP_REPLY) {
      await res.body?.cancel().catch(() => undefined);
      throw new TsaError('bad_response', this.url, `Content-Type ${JSON.stringify(type ?? null)}, expected ${TIMESTAMP_REPLY}`);
    }
    const body = await readBoundedBody(res, this.maxResponseBytes, tooLarge, (err) => fail(err, 'reading the body'));
    return body;
  }
}
