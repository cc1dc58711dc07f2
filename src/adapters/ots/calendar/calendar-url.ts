/**
 * Calendar URLs keep their path prefix: `POST {base}/digest`, never `/digest` at the
 * host root. python-opentimestamps uses `urljoin(base, 'digest')`, which keeps a prefix
 * only when the base ends in `/` (`http://h/x/` → `/x/digest`, but `http://h/x` →
 * `/digest`). Here a base without a trailing slash is treated as a directory too
 * (`http://h/x` → `/x/digest`), because a pending attestation names its calendar without
 * one and dropping the last segment of such a URI would ask the wrong server.
 */
import { InputError } from '../../../core/errors/errors.js';

/** Parses and checks a calendar base URL: http(s), no credentials, query or fragment. */
export function parseCalendarUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError('bad_calendar_url', `calendar URL ${JSON.stringify(url)} does not parse`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InputError('bad_calendar_url', `calendar URL ${url} must be http or https`);
  }
  if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    throw new InputError('bad_calendar_url', `calendar URL ${url} must not carry credentials, a query or a fragment`);
  }
  return parsed;
}

/** `base` joined with the relative endpoint `rel` (`digest`, `timestamp/<hex>`), prefix kept. */
export function calendarEndpoint(base: string | URL, rel: string): string {
  const dir = new URL(typeof base === 'string' ? parseCalendarUrl(base) : base);
  if (!dir.pathname.endsWith('/')) dir.pathname += '/';
  return new URL(rel, dir).toString();
}
