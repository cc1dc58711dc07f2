/**
 * The server answers only to the `Host` names it is configured for (`http.allowedHosts`,
 * loopback names by default, plus the address it binds when that is not a wildcard): a
 * page that rebinds its own name to 127.0.0.1 sends its own name, and is refused with 421
 * before any route runs. Any port is accepted; a missing or malformed Host is refused.
 */
import type { IncomingMessage } from 'node:http';
import { hostHeaderName, isWildcardHost, normalHostName } from '../config/host-names.js';
import { HttpError } from './respond.js';

/** Probes send whatever address they reach the server by; these paths reveal nothing. */
export const ANY_HOST_PATHS: ReadonlySet<string> = new Set(['/livez', '/readyz']);

export class HostCheck {
  private readonly names: ReadonlySet<string> | null;

  /** `allowed`: host names or addresses, or `*` for any. */
  constructor(allowed: readonly string[], bindHost: string) {
    if (allowed.includes('*')) {
      this.names = null;
      return;
    }
    const names = new Set(allowed.map(normalHostName).filter((n): n is string => n !== null));
    const bound = normalHostName(bindHost);
    if (bound !== null && !isWildcardHost(bindHost)) names.add(bound);
    this.names = names;
  }

  /** Throws 421 unless the request names a host this server is for. */
  check(req: IncomingMessage): void {
    if (this.names === null) return;
    const header = req.headers.host;
    const name = typeof header === 'string' ? hostHeaderName(header) : null;
    if (name !== null && this.names.has(name)) return;
    const shown = typeof header === 'string' && header !== '' ? JSON.stringify(header.slice(0, 64)) : 'no Host header';
    throw new HttpError(421, 'host_not_allowed', `this server does not answer to ${shown}; add the name to http.allowedHosts to serve it`, 'Host');
  }
}
