/**
 * A small router: path templates (`/v1/anchors/{key}/proof`) matched segment by segment on
 * the raw path, each segment URL-decoded on its own, so a key containing `/` (sent as %2F)
 * stays one segment.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Access } from './auth.js';
import { HttpError, type Reply } from './respond.js';
import { TOKEN_QUERY_PARAM } from './auth.js';

export type Method = 'GET' | 'POST';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
}

export interface Route {
  method: Method;
  /** Template with `{name}` segments. */
  path: string;
  access: Access;
  /** Query parameters the route reads; any other is refused (400). */
  query?: readonly string[];
  /** Streams its own response; HEAD is not offered. */
  streaming?: boolean;
  /** Returns a reply, or nothing when it wrote the response itself. */
  handler: (ctx: RequestContext) => Promise<Reply | void>;
}

export type Match = { route: Route; params: Record<string, string> } | { allow: Method[] } | null;

/** Splits `/a/b%2Fc?x` into decoded segments (`['a', 'b/c']`) and the query. */
export function splitUrl(rawUrl: string): { path: string; segments: string[]; query: URLSearchParams } {
  const q = rawUrl.indexOf('?');
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1));
  if (!path.startsWith('/')) throw new HttpError(400, 'bad_path', 'the request path must start with /');
  const segments = path
    .slice(1)
    .split('/')
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new HttpError(400, 'bad_path', `the path segment ${JSON.stringify(s)} is not valid percent-encoding`);
      }
    });
  return { path, segments, query };
}

function templateSegments(path: string): string[] {
  return path.slice(1).split('/');
}

function matchTemplate(template: string[], segments: string[]): Record<string, string> | null {
  const last = template[template.length - 1]!;
  // `{name+}` last: one or more segments, joined by '/' (a tlog-tiles path)
  const rest = last.startsWith('{') && last.endsWith('+}');
  if (rest ? segments.length < template.length : template.length !== segments.length) return null;
  const params: Record<string, string> = {};
  if (rest) {
    const tail = segments.slice(template.length - 1);
    if (tail.some((s) => s === '' || s.includes('/'))) return null;
    params[last.slice(1, -2)] = tail.join('/');
  }
  for (let i = 0; i < template.length - (rest ? 1 : 0); i++) {
    const t = template[i]!;
    const s = segments[i]!;
    if (t.startsWith('{') && t.endsWith('}')) {
      if (s === '') return null;
      params[t.slice(1, -1)] = s;
    } else if (t !== s) {
      return null;
    }
  }
  return params;
}

export function findRoute(routes: readonly Route[], method: string, segments: string[]): Match {
  const allow: Method[] = [];
  for (const route of routes) {
    const params = matchTemplate(templateSegments(route.path), segments);
    if (!params) continue;
    if (route.method === method || (method === 'HEAD' && route.method === 'GET' && !route.streaming)) return { route, params };
    allow.push(route.method);
  }
  return allow.length > 0 ? { allow } : null;
}

/** Refuses query parameters the route does not read (the token parameter is always allowed on reads). */
export function checkQuery(route: Route, query: URLSearchParams): void {
  const allowed = new Set(route.query ?? []);
  if (route.access !== 'write') allowed.add(TOKEN_QUERY_PARAM);
  for (const name of new Set(query.keys())) {
    if (!allowed.has(name)) {
      const known = [...allowed].filter((n) => n !== TOKEN_QUERY_PARAM);
      throw new HttpError(400, 'unknown_parameter', `unknown query parameter ${JSON.stringify(name)}${known.length ? ` (known: ${known.join(', ')})` : ''}`, name);
    }
    if (query.getAll(name).length > 1) throw new HttpError(400, 'repeated_parameter', `query parameter ${JSON.stringify(name)} is given more than once`, name);
  }
}
