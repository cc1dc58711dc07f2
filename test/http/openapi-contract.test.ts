/**
 * The checker every HTTP test's answers go through (test/helpers/openapi.ts) refuses what
 * openapi.json does not describe: an unknown path, method or status, another Content-Type,
 * a body missing a required member or carrying an undescribed one. And every response the
 * document lists has a schema it can compile.
 */
import { describe, expect, it } from 'vitest';
import { expectUndocumented, openapi, pathTemplate, responseProblems } from '../helpers/openapi.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const notFound = JSON.stringify({ error: { code: 'not_found', message: 'no subject with key k' } });

describe('the openapi.json response checker', () => {
  it('accepts a documented answer', () => {
    expect(responseProblems('GET', '/v1/anchors/k', 404, JSON_TYPE, notFound)).toEqual([]);
    expect(responseProblems('GET', '/livez', 200, JSON_TYPE, '{"status":"ok"}')).toEqual([]);
  });

  it('refuses an unknown path, method or status', () => {
    expect(responseProblems('GET', '/v2/anything', 404, JSON_TYPE, notFound)).toEqual(['GET /v2/anything: the path is not in openapi.json']);
    expect(responseProblems('DELETE', '/v1/anchors', 405, JSON_TYPE, notFound)).toEqual(['DELETE /v1/anchors: the method is not in openapi.json']);
    expect(responseProblems('GET', '/livez', 418, JSON_TYPE, notFound)).toEqual(['GET /livez 418: the status is not in openapi.json']);
    expect(() => expectUndocumented('GET', '/v1/anchors/k', 404)).toThrow(/is in openapi\.json/);
    expect(() => expectUndocumented('GET', '/v2/anything', 404)).not.toThrow();
  });

  it('refuses another Content-Type, a body that is not JSON, a missing member, a wrong type and an undescribed member', () => {
    expect(responseProblems('GET', '/livez', 200, 'text/plain', 'ok')[0]).toMatch(/Content-Type "text\/plain", openapi\.json lists application\/json/);
    expect(responseProblems('GET', '/livez', 200, JSON_TYPE, 'ok')[0]).toMatch(/the body is not JSON/);
    expect(responseProblems('GET', '/v1/anchors/k', 404, JSON_TYPE, '{"error":{"code":"not_found"}}').join('\n')).toMatch(/body\/error must have required property 'message'/);
    expect(responseProblems('GET', '/v1/anchors/k', 404, JSON_TYPE, '{"error":{"code":7,"message":"m"}}').join('\n')).toMatch(/body\/error\/code must be/);
    expect(responseProblems('GET', '/v1/anchors/k', 404, JSON_TYPE, '{"error":{"code":"not_found","message":"m","stack":"at x"}}').join('\n')).toMatch(/unevaluated properties.*stack/);
    // error codes are a closed set
    expect(responseProblems('GET', '/v1/anchors/k', 404, JSON_TYPE, '{"error":{"code":"no_such_code","message":"m"}}').join('\n')).toMatch(/body\/error\/code must be equal to one of the allowed values/);
    // an allOf (error plus the enqueue results) is one object: members of either branch are described
    expect(responseProblems('GET', '/readyz', 503, JSON_TYPE, JSON.stringify({ error: { code: 'not_ready', message: 'm' }, failing: [], witnesses: [], extra: 1 })).join('\n')).toMatch(/unevaluated properties.*extra/);
    expect(responseProblems('GET', '/readyz', 503, JSON_TYPE, JSON.stringify({ error: { code: 'not_ready', message: 'm' }, failing: [], witnesses: [] }))).toEqual([]);
  });

  it('does not echo the query (it may carry the access token)', () => {
    expect(responseProblems('GET', '/v9?access_token=secret-token', 404, JSON_TYPE, notFound).join('\n')).not.toContain('secret-token');
  });

  it('every path template matches its own example, and every listed JSON response has a schema it compiles', () => {
    for (const [template, ops] of Object.entries(openapi.paths)) {
      expect(pathTemplate(template.replace(/\{[^}]+\}/g, 'x')), template).toBe(template);
      for (const [method, op] of Object.entries(ops)) {
        for (const status of Object.keys(op.responses)) {
          const problems = responseProblems(method.toUpperCase(), template.replace(/\{[^}]+\}/g, 'x'), Number(status), JSON_TYPE, '"not the body"');
          expect(problems.join('\n'), `${method} ${template} ${status}`).not.toMatch(/could not be compiled/);
        }
      }
    }
  });
});
