/**
 * An OpenTimestamps calendar over HTTP, as the python client speaks to it:
 * `POST {base}/digest` with the raw digest and `GET {base}/timestamp/<hex>`, with
 * `Accept: application/vnd.opentimestamps.v1`. Every request has one deadline covering
 * connect, headers and body, and answers are capped while they stream in (after decoding).
 * We ask for `Accept-Encoding: identity`, as python's urllib does; a calendar (or a proxy in
 * front of it) that compresses anyway is decoded (gzip, deflate, br), and a body that does
 * not decode is a `bad_response`. Answers are returned as raw timestamp bytes; parsing them
 * is the `.ots` codec's job.
 */
import { InputError } from '../../../core/errors/errors.js';
import { VERSION } from '../../../version.js';
import { configDefault } from '../../config/schema.js';
import { CalendarError } from './calendar-error.js';
import { calendarEndpoint, parseCalendarUrl } from './calendar-url.js';
import { readBoundedBody } from '../../fetch/bounded-body.js';

export const OTS_ACCEPT = 'application/vnd.opentimestamps.v1';
/** `ots.timeoutMs`'s default, for clients made without a configuration (the verifier's upgrade). */
export const DEFAULT_TIMEOUT_MS = configDefault('ots.timeoutMs');
/** python-opentimestamps reads at most 10,000 bytes of a calendar answer. */
export const DEFAULT_MAX_RESPONSE_BYTES = 10_000;
/** The real server refuses digests over 64 bytes. */
export const MAX_DIGEST_BYTES = 64;
/** Largest message an `.ots` op may produce, so the largest commitment worth asking about. */
export const MAX_COMMITMENT_BYTES = 4096;
/** Redirects followed on the calendar's own origin; one to another host is never followed. */
const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface CalendarClientOptions {
  /** Deadline per request, connect to last body byte (default 10,000 ms). */
  timeoutMs?: number;
  /** Largest answer accepted; a longer one is aborted mid-stream (default 10,000 bytes). */
  maxResponseBytes?: number;
  /** Default `aer1-anchor/<version>`. */
  userAgent?: string;
}

export type TimestampAnswer =
  | { status: 'complete'; bytes: Buffer }
  | { status: 'pending'; reason: string }
  | { status: 'not-found'; reason: string };

interface RawAnswer {
  status: number;
  body: Buffer;
  endpoint: string;
}

/** python-opentimestamps `get_sanitised_resp_msg`: 160 bytes, anything else becomes `_`. */
export function sanitizeReason(body: Buffer): string {
  return body
    .subarray(0, 160)
    .toString('latin1')
    .replace(/[^A-Za-z0-9#\-.,; ]/g, '_');
}

/** A 404 reason that says the calendar holds the commitment and will upgrade it later. */
function isPendingReason(reason: string): boolean {
  return reason.startsWith('Pending') || reason.startsWith('Timestamped by transaction');
}

export class CalendarClient {
  /** The calendar's base URL as given. */
  readonly url: string;
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  private readonly base: URL;
  private readonly headers: Record<string, string>;

  constructor(baseUrl: string, opts: CalendarClientOptions = {}) {
    this.base = parseCalendarUrl(baseUrl);
    this.url = baseUrl;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs <= 0) {
      throw new InputError('bad_option', `timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
    }
    if (!Number.isInteger(this.maxResponseBytes) || this.maxResponseBytes <= 0) {
      throw new InputError('bad_option', `maxResponseBytes must be a positive integer, got ${opts.maxResponseBytes}`);
    }
    this.headers = { Accept: OTS_ACCEPT, 'Accept-Encoding': 'identity', 'User-Agent': opts.userAgent ?? `aer1-anchor/${VERSION}` };
  }

  /** Submits a digest; resolves with the serialized timestamp starting at that digest. */
  async submit(digest: Buffer): Promise<Buffer> {
    if (digest.length === 0 || digest.length > MAX_DIGEST_BYTES) {
      throw new InputError('bad_digest', `a calendar digest is 1..${MAX_DIGEST_BYTES} bytes, got ${digest.length}`);
    }
    const answer = await this.request('POST', 'digest', digest);
    if (answer.status !== 200) throw this.statusError(answer);
    if (answer.body.length === 0) {
      throw new CalendarError('bad_response', this.url, `empty answer to POST ${answer.endpoint}`, 200);
    }
    return answer.body;
  }

  /** Asks for the upgrade of a pending commitment (the message at its pending attestation). */
  async getTimestamp(commitment: Buffer): Promise<TimestampAnswer> {
    if (commitment.length === 0 || commitment.length > MAX_COMMITMENT_BYTES) {
      throw new InputError('bad_commitment', `a commitment is 1..${MAX_COMMITMENT_BYTES} bytes, got ${commitment.length}`);
    }
    const answer = await this.request('GET', `timestamp/${commitment.toString('hex')}`);
    if (answer.status === 200) {
      if (answer.body.length === 0) {
        throw new CalendarError('bad_response', this.url, `empty answer to GET ${answer.endpoint}`, 200);
      }
      return { status: 'complete', bytes: answer.body };
    }
    if (answer.status === 404) {
      const reason = sanitizeReason(answer.body);
      return isPendingReason(reason) ? { status: 'pending', reason } : { status: 'not-found', reason };
    }
    throw this.statusError(answer);
  }

  private statusError(answer: RawAnswer): CalendarError {
    const text = sanitizeReason(answer.body).trim();
    return new CalendarError(
      'http_status',
      this.url,
      `HTTP ${answer.status} from ${answer.endpoint}${text ? `: ${text}` : ''}`,
      answer.status,
    );
  }

  private async request(method: 'GET' | 'POST', rel: string, body?: Buffer): Promise<RawAnswer> {
    const endpoint = calendarEndpoint(this.base, rel);
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const overLimit = new AbortController();
    const signal = AbortSignal.any([deadline, overLimit.signal]);
    let encoding: string | null = null;
    const fail = (err: unknown, stage: string): CalendarError => {
      if (err instanceof CalendarError) return err;
      if (deadline.aborted) {
        return new CalendarError('timeout', this.url, `no complete answer from ${method} ${endpoint} within ${this.timeoutMs} ms (${stage})`);
      }
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const detail = cause?.code ?? cause?.message ?? (err as Error).message;
      // zlib's codes: the body claimed a Content-Encoding it was not written in.
      if (stage === 'reading the body' && cause?.code?.startsWith('Z_')) {
        return new CalendarError('bad_response', this.url, `${method} ${endpoint}: the ${encoding ?? 'encoded'} body does not decode (${cause.code}: ${cause.message ?? ''})`);
      }
      return new CalendarError('network', this.url, `${method} ${endpoint} failed (${stage}): ${detail}`);
    };
    const tooLarge = (what: string): CalendarError => {
      overLimit.abort();
      return new CalendarError('too_large', this.url, `answer from ${method} ${endpoint} ${what} exceeds ${this.maxResponseBytes} bytes`);
    };

    // Redirects are followed by hand, only on the calendar's own origin: a calendar must not
    // send our digests (or our polls) to a host nobody configured.
    let res: Response | null = null;
    let target = endpoint;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      try {
        res = await fetch(target, {
          method,
          headers: body ? { ...this.headers, 'Content-Type': 'application/octet-stream' } : this.headers,
          body: body ?? null,
          signal,
          redirect: 'manual',
        });
      } catch (err) {
        throw fail(err, 'connecting');
      }
      const location = REDIRECTS.has(res.status) ? res.headers.get('location') : null;
      if (location === null) break;
      await res.body?.cancel().catch(() => undefined);
      let next: URL;
      try {
        next = new URL(location, target);
      } catch {
        throw new CalendarError('http_status', this.url, `HTTP ${res.status} from ${target}: unreadable redirect location`, res.status);
      }
      if (next.origin !== this.base.origin) {
        throw new CalendarError('http_status', this.url, `HTTP ${res.status} from ${target}: redirect to another host (${next.host}), not followed`, res.status);
      }
      if (hop === MAX_REDIRECTS) throw new CalendarError('http_status', this.url, `more than ${MAX_REDIRECTS} redirects from ${endpoint}`, res.status);
      target = next.href;
    }
    if (!res) throw new CalendarError('network', this.url, `${method} ${endpoint}: no answer`);

    encoding = res.headers.get('content-encoding');
    const answer = await readBoundedBody(res, this.maxResponseBytes, tooLarge, (err) => fail(err, 'reading the body'));
    return { status: res.status, body: answer, endpoint: target };
  }
}
