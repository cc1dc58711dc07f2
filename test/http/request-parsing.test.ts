/**
 * The pure parts of the HTTP layer: path splitting and routing, query checks, token
 * comparison, SSE framing, stream ids, list parameters and POST body shapes.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { TokenAuth, bearerToken } from '../../src/adapters/http/auth.js';
import { checkCursor, parseLimit, subjectsOf } from '../../src/adapters/http/anchors.js';
import { compareStreamIds, decodeEntry, normalizeStreamId, parseStreamId } from '../../src/adapters/feed/event-feed.js';
import { HttpError } from '../../src/adapters/http/respond.js';
import { checkQuery, findRoute, splitUrl, type Route } from '../../src/adapters/http/router.js';
import { sseFrame } from '../../src/adapters/http/sse.js';
import { parseSse } from './clients.js';

const noop = async (): Promise<void> => undefined;
const routes: Route[] = [
  { method: 'GET', path: '/v1/anchors', access: 'read', query: ['limit'], handler: noop },
  { method: 'POST', path: '/v1/anchors', access: 'write', handler: noop },
  { method: 'GET', path: '/v1/anchors/{key}', access: 'read', handler: noop },
  { method: 'GET', path: '/v1/anchors/{key}/proof', access: 'read', handler: noop },
  { method: 'GET', path: '/v1/events', access: 'read', streaming: true, handler: noop },
];

function req(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

function thrown(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error('did not throw');
}

describe('routing', () => {
  it('decodes each path segment on its own, so %2F stays inside a key', () => {
    const a = splitUrl('/v1/anchors/a%2Fproof?x=1');
    expect(a.segments).toEqual(['v1', 'anchors', 'a/proof']);
    expect(a.query.get('x')).toBe('1');
    const m = findRoute(routes, 'GET', a.segments);
    expect(m && 'route' in m && m.route.path).toBe('/v1/anchors/{key}');
    expect(m && 'route' in m && m.params).toEqual({ key: 'a/proof' });
    const p = findRoute(routes, 'GET', splitUrl('/v1/anchors/r%C3%A9c%20u/proof').segments);
    expect(p && 'route' in p && p.route.path).toBe('/v1/anchors/{key}/proof');
    expect(p && 'route' in p && p.params).toEqual({ key: 'réc u' });
  });

  it('refuses broken percent-encoding with 400', () => {
    expect(thrown(() => splitUrl('/v1/anchors/%E0%A4%A')).status).toBe(400);
  });

  it('answers which methods a known path allows, and nothing for an unknown path', () => {
    expect(findRoute(routes, 'DELETE', ['v1', 'anchors'])).toEqual({ allow: ['GET', 'POST'] });
    expect(findRoute(routes, 'GET', ['v1', 'nothing'])).toBeNull();
    expect(findRoute(routes, 'GET', ['v1', 'anchors', ''])).toBeNull();
  });

  it('serves HEAD like GET except on streams', () => {
    expect(findRoute(routes, 'HEAD', ['v1', 'anchors'])).toMatchObject({ route: { method: 'GET' } });
    expect(findRoute(routes, 'HEAD', ['v1', 'events'])).toEqual({ allow: ['GET'] });
  });

  it('refuses unknown and repeated query parameters, naming them; reads take access_token', () => {
    const list = routes[0]!;
    expect(() => checkQuery(list, new URLSearchParams('limit=5&access_token=x'))).not.toThrow();
    const unknown = thrown(() => checkQuery(list, new URLSearchParams('limt=5')));
    expect(unknown).toMatchObject({ status: 400, code: 'unknown_parameter', field: 'limt' });
    expect(unknown.message).toContain('known: limit');
    expect(thrown(() => checkQuery(list, new URLSearchParams('limit=5&limit=6')))).toMatchObject({ status: 400, field: 'limit' });
    expect(thrown(() => checkQuery(routes[1]!, new URLSearchParams('access_token=x')))).toMatchObject({ status: 400, field: 'access_token' });
  });
});

describe('bearer token', () => {
  const auth = new TokenAuth('s3cret-token', false);

  it('compares tokens of any length without throwing', () => {
    expect(auth.matches('s3cret-token')).toBe(true);
    expect(auth.matches('s3cret-toke')).toBe(false);
    expect(auth.matches('s3cret-token-and-more')).toBe(false);
    expect(auth.matches('')).toBe(false);
    expect(new TokenAuth(null, false).matches('')).toBe(false);
  });

  it('reads the Authorization header case-insensitively and treats a malformed one as a wrong token', () => {
    expect(bearerToken(req({ authorization: 'bearer abc' }))).toBe('abc');
    expect(bearerToken(req({ authorization: 'Basic abc' }))).toBe('');
    expect(bearerToken(req({}))).toBeNull();
  });

  it('lets reads through without a token unless reads require it', () => {
    const q = new URLSearchParams();
    expect(() => auth.check('read', req({}), q)).not.toThrow();
    const strict = new TokenAuth('s3cret-token', true);
    const e = thrown(() => strict.check('read', req({}), q));
    expect(e).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="aer1-anchor"' } });
    expect(() => strict.check('read', req({}), new URLSearchParams('access_token=s3cret-token'))).not.toThrow();
    expect(() => strict.check('read', req({ authorization: 'Bearer s3cret-token' }), q)).not.toThrow();
  });

  it('takes the token for writes from the header only, and never echoes it', () => {
    const e = thrown(() => auth.check('write', req({}), new URLSearchParams('access_token=s3cret-token')));
    expect(e.status).toBe(401);
    const wrong = thrown(() => auth.check('write', req({ authorization: 'Bearer guess' }), new URLSearchParams()));
    expect(wrong.headers['WWW-Authenticate']).toContain('invalid_token');
    expect(JSON.stringify(wrong.body()) + wrong.message).not.toContain('guess');
    expect(JSON.stringify(auth)).not.toContain('s3cret');
  });

  it('answers 403 for writes when no token is configured', () => {
    const e = thrown(() => new TokenAuth(null, false).check('write', req({ authorization: 'Bearer x' }), new URLSearchParams()));
    expect(e).toMatchObject({ status: 403, code: 'writes_disabled' });
  });
});

describe('stream ids and SSE frames', () => {
  it('parses and orders stream ids numerically', () => {
    expect(parseStreamId('1700000000000-5')).toEqual([1700000000000n, 5n]);
    expect(parseStreamId('1700000000000')).toEqual([1700000000000n, 0n]);
    expect(parseStreamId('abc')).toBeNull();
    expect(parseStreamId('1-2-3')).toBeNull();
    expect(compareStreamIds('9-0', '10-0')).toBe(-1);
    expect(compareStreamIds('10-10', '10-9')).toBe(1);
    expect(compareStreamIds('10', '10-0')).toBe(0);
  });

  it('parses the ids of subject events inside a packed entry; a plain entry id orders after all of them', () => {
    expect(parseStreamId('1700000000000-5.12')).toEqual([1700000000000n, 5n, 12]);
    expect(parseStreamId('1700000000000.3')).toBeNull();
    expect(parseStreamId('1-2.x')).toBeNull();
    expect(normalizeStreamId(' 17-0.4 ')).toBe('17-0.4');
    expect(normalizeStreamId('17')).toBe('17-0');
    expect(compareStreamIds('10-1.2', '10-1.10')).toBe(-1);
    expect(compareStreamIds('10-1.249', '10-1')).toBe(-1);
    expect(compareStreamIds('10-1', '10-2.0')).toBe(-1);
  });

  it('decodes stream entries and skips ones without JSON data', () => {
    expect(decodeEntry(['1-0', ['data', '{"type":"accepted","key":"k","status":"pending","at":"x"}']])).toEqual([
      { id: '1-0', type: 'accepted', key: 'k', status: 'pending', at: 'x' },
    ]);
    expect(decodeEntry(['1-0', ['data', 'not json']])).toEqual([]);
    expect(decodeEntry(['1-0', ['other', '{}']])).toEqual([]);
    expect(decodeEntry(['2-0', ['data', '{"type":"accepted","status":"pending","at":"x","subjects":[["a","d1"],["b","d2"]]}']])).toEqual([
      { id: '2-0.0', type: 'accepted', key: 'a', status: 'pending', at: 'x', digest: 'd1' },
      { id: '2-0.1', type: 'accepted', key: 'b', status: 'pending', at: 'x', digest: 'd2' },
    ]);
  });

  it('frames a change as one SSE event whose data survives newlines in the detail', () => {
    const message = { id: '5-1', type: 'state' as const, key: 'k', status: 'partial', at: 'now', detail: 'line one\nline two\r\n' };
    const frame = sseFrame(message);
    expect(frame.endsWith('\n\n')).toBe(true);
    const { events, rest } = parseSse(frame);
    expect(rest).toBe('');
    expect(events).toHaveLength(1);
    expect(events[0]!.id).toBe('5-1');
    expect(JSON.parse(events[0]!.data)).toEqual(message);
  });
});

describe('list parameters', () => {
  it('takes limits from 1 to 1000, default 50', () => {
    expect(parseLimit(null)).toBe(50);
    expect(parseLimit('1')).toBe(1);
    expect(parseLimit('1000')).toBe(1000);
    for (const bad of ['0', '1001', '-1', '1.5', 'ten', '']) expect(thrown(() => parseLimit(bad))).toMatchObject({ status: 400, field: 'limit' });
  });

  it('accepts only cursors shaped like the ones it hands out', () => {
    expect(() => checkCursor(Buffer.from('1700000000000:some:key').toString('base64url'))).not.toThrow();
    for (const bad of ['!!', Buffer.from('nocolon').toString('base64url'), Buffer.from('x:key').toString('base64url'), Buffer.from('12:').toString('base64url')]) {
      expect(thrown(() => checkCursor(bad))).toMatchObject({ status: 400, field: 'cursor' });
    }
  });
});

describe('POST bodies', () => {
  it('takes one subject, or a list under "subjects"; a bare array stays one subject (a job timeline)', () => {
    expect(subjectsOf({ subject: 'receipt' })).toEqual({ subjects: [{ subject: 'receipt' }], many: false });
    expect(subjectsOf({ subjects: [1, 2] })).toEqual({ subjects: [1, 2], many: true });
    expect(subjectsOf([{ seq: 1 }])).toEqual({ subjects: [[{ seq: 1 }]], many: false });
  });

  it('refuses an empty or malformed "subjects" and members beside it', () => {
    expect(thrown(() => subjectsOf({ subjects: [] }))).toMatchObject({ status: 400, field: 'subjects' });
    expect(thrown(() => subjectsOf({ subjects: {} }))).toMatchObject({ status: 400, field: 'subjects' });
    expect(thrown(() => subjectsOf({ subjects: [1], extra: 1 }))).toMatchObject({ status: 400, field: 'extra' });
  });
});
