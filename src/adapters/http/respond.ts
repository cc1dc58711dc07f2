/**
 * Replies of the HTTP API: JSON bodies, and errors as `{"error": {code, message, field?}}`
 * with a status that says what kind of problem it is.
 */
import type { ServerResponse } from 'node:http';
import { describeRefusal, type RedisRefusal } from '../redis/redis-refusal.js';

export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

/** A request the API refuses: carries its HTTP status, a stable code and the field at fault. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, field?: string, headers: Record<string, string> = {}) {
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
