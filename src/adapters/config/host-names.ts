/**
 * Host names as the HTTP server compares them: lowercase, no trailing dot, IPv6 literals in
 * brackets (`[::1]`), no port. One normal form for `http.allowedHosts` entries, `http.host`
 * and the `Host` header of each request.
 */

const NAME = /^[a-z0-9_]([a-z0-9_.-]{0,251}[a-z0-9_])?$/;
const IPV6 = /^\[[0-9a-f:.]{2,45}\]$/;

/** The normal form of a bare host name or address; null when it is not one. */
export function normalHostName(text: string): string | null {
  let t = text.trim().toLowerCase();
  if (t.includes(':') && !t.startsWith('[')) t = `[${t}]`;
  if (t.endsWith('.') && !t.endsWith('..')) t = t.slice(0, -1);
  return NAME.test(t) || IPV6.test(t) ? t : null;
}

/** The host name of a `Host` header value (`name`, `name:port`, `[v6]:port`); null when malformed. */
export function hostHeaderName(value: string): string | null {
  const v = value.trim();
  const m = /^(\[[^\]]*\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(v);
  if (!m) return null;
  return normalHostName(m[1]!);
}

/** True for an address that binds every interface (0.0.0.0, ::). */
export function isWildcardHost(host: string): boolean {
  const h = normalHostName(host);
  return h === '0.0.0.0' || h === '[::]' || h === '[0:0:0:0:0:0:0:0]';
}
