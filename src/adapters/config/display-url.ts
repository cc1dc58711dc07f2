/**
 * How a configured URL is shown wherever it is shown or stored (logs, errors, Redis, the
 * API): scheme, host and path only, so credentials, a query (`?sig=…`) and a fragment never
 * travel with it.
 */

export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '[unparseable url]';
  }
}

/** `text` with every trace of `url`'s credentials and query replaced (error text from a request to it). */
export function scrubUrl(text: string, url: string): string {
  // without its added trailing slash where `url` had none: `http://h:1/digest` must not become `http://h:1//digest`
  const shown = displayUrl(url);
  let out = text.split(url).join(!url.endsWith('/') && shown.endsWith('/') ? shown.slice(0, -1) : shown);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return out;
  }
  out = out.split(u.href).join(displayUrl(url));
  for (const part of [u.search, u.search.slice(1), u.password, decodeURIComponent(u.password)]) {
    if (part.length >= 3) out = out.split(part).join('[redacted]');
  }
  return out;
}
