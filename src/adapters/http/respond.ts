/**
 * Replies of the HTTP API: JSON bodies, and errors as `{"error": {code, message, field?}}`
 * with a status that says what kind of problem it is.
 */
import type { ServerResponse } from 'node:http';
import type { InputError } from '../../core/errors/errors.js';
import { describeRefusal, type RedisRefusal, type RefusalKind } from '../redis/redis-refusal.js';

/**
 * Every `error.code` the API answers with besides a document's own: a closed set, listed
 * in docs/http.md (Errors; test/docs/error-codes.test.ts checks the two agree). A 400 for a
 * subject the intake refuses carries the intake's InputError code instead (docs/architecture.md).
 */
export const HTTP_ERROR_CODES = [
  'bad_json', 'bad_parameter', 'bad_path', 'bad_subjects', 'body_aborted', 'body_too_large', 'conflict',
  'host_not_allowed', 'internal', 'method_not_allowed', 'no_proof', 'not_found', 'not_ready',
  'repeated_parameter', 'too_deep', 'too_many_clients', 'too_many_subjects', 'unauthorized',
  'unknown_member', 'unknown_parameter', 'unsupported_media_type', 'upgrade_required', 'writes_disabled',
  'redis_out_of_memory', 'redis_read_only', 'redis_not_persisting', 'redis_busy', 'redis_unavailable', 'redis_timeout',
] as const satisfies ReadonlyArray<string>;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number] | InputError['code'];
// every Redis refusal has its code in the list
type MissingRefusal = Exclude<`redis_${RefusalKind}`, (typeof HTTP_ERROR_CODES)[number]>;
const _everyRefusalListed: MissingRefusal extends never ? true : MissingRefusal = true;
void _everyRefusalListed;

export interface ErrorBody {
  error: { code: HttpErrorCode; message: string; field?: string };
}

/** A request the API refuses: carries its HTTP status, a stable code and the field at fault. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: HttpErrorCode;
  readonly field: string | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: HttpErrorCode, message: string, field?: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.field = field;
    this.headers = headers;
  }

  body(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.field !== undefined ? { field: this.field } : {}) } };
  }
}

/** What a handler answers with (streaming handlers write to the response themselves). */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export const JSON_TYPE = 'application/json; charset=utf-8';

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return { status, body, headers };
}

/** Writes a reply: objects as JSON, strings and buffers as given (their content type set by the handler). */
export function send(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.writableEnded) return;
  const raw = typeof reply.body === 'string' || Buffer.isBuffer(reply.body);
  const payload = raw ? (reply.body as string | Buffer) : `${JSON.stringify(reply.body)}\n`;
  const headers: Record<string, string | number> = {
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...(raw ? {} : { 'Content-Type': JSON_TYPE }),
    ...reply.headers,
    'Content-Length': Buffer.byteLength(payload),
  };
  res.writeHead(reply.status, headers);
  res.end(payload);
}

export function sendError(res: ServerResponse, err: HttpError): void {
  send(res, { status: err.status, body: err.body(), headers: err.headers });
}

/** Redis refused or did not answer: 503 with `Retry-After`, the code naming why (`redis_out_of_memory`, `redis_timeout`, ...). */
export function refusalError(refusal: RedisRefusal, timeoutMs: number, addendum = ''): HttpError {
  return new HttpError(503, `redis_${refusal.kind}`, `${describeRefusal(refusal, timeoutMs)}${addendum}`, undefined, { 'Retry-After': String(refusal.retryAfterSeconds) });
}
