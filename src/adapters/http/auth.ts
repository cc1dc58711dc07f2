/**
 * Bearer-token access: `Authorization: Bearer <token>` compared in constant time (SHA-256 of
 * both sides, then timingSafeEqual, so neither length nor content leaks through timing).
 * Browsers cannot set headers on EventSource or WebSocket, so reads also accept the token
 * as the `access_token` query parameter (RFC 6750 §2.3); writes take the header only.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './respond.js';

/** public: anyone (liveness, the page's own files); read: the token when reads require it; write: always the token. */
export type Access = 'public' | 'read' | 'write';

export const TOKEN_QUERY_PARAM = 'access_token';

const REALM = 'aer1-anchor';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The token held only as its digest, so it cannot end up in a log or an error by accident. */
export class TokenAuth {
  readonly #digest: Buffer | null;
  readonly readsRequireToken: boolean;

  constructor(token: string | null, readsRequireToken: boolean) {
    this.#digest = token === null ? null : digest(token);
    this.readsRequireToken = readsRequireToken;
  }

  get hasToken(): boolean {
    return this.#digest !== null;
  }

  matches(presented: string): boolean {
    if (this.#digest === null) return false;
    return timingSafeEqual(digest(presented), this.#digest);
  }

  /** Throws the 401/403 a request without the access it needs gets. */
  check(access: Access, req: IncomingMessage, query: URLSearchParams): void {
    if (access === 'public') return;
    if (access === 'read' && !this.readsRequireToken) return;
    if (access === 'write' && !this.hasToken) {
      throw new HttpError(403, 'writes_disabled', 'writing is disabled: no API token is configured (set http.token or AER1_HTTP_TOKEN)');
    }
    const presented = bearerToken(req) ?? (access === 'read' ? query.get(TOKEN_QUERY_PARAM) : null);
    if (presented === null) {
      throw new HttpError(401, 'unauthorized', 'a bearer token is required (Authorization: Bearer <token>)', undefined, {
        'WWW-Authenticate': `Bearer realm="${REALM}"`,
      });
    }
    if (!this.matches(presented)) {
      throw new HttpError(401, 'unauthorized', 'the bearer token is not valid', undefined, {
        'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"`,
      });
    }
  }
}

/** The token of an `Authorization: Bearer` header; null when there is no such header. */
export function bearerToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (header === undefined) return null;
  const m = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(header);
  return m ? m[1]! : '';
}
