/**
 * Every HTTP answer a test sees, checked against the published contract,
 * src/adapters/http/static/openapi.json (OpenAPI 3.1: its schemas are JSON Schema 2020-12,
 * nulls written as `"type": [..., "null"]`). A path, method or status the document does
 * not list fails, and so does a body or a Content-Type it does not describe.
 *
 * `checkedFetch` is `fetch` plus that check; the HTTP fixture's `get`/`post` use it. A test
 * that means to hit something undocumented (a 404 on an unknown path, a 405) says so with
 * `expectUndocumented(...)`, which fails if the document does list it.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, Json>;
}

const repo = resolve(import.meta.dirname, '../..');
export const OPENAPI_FILE = join(repo, 'src/adapters/http/static/openapi.json');
export const openapi = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as { paths: Record<string, Record<string, Operation>>; components: { responses: Record<string, Json> } };

// ajv-formats is CommonJS: its plugin is the module itself (and its `default`)
const addFormats = (formats as unknown as { default: (ajv: Ajv2020) => void }).default;
/**
 * The document as the tests read it: every object schema that lists its properties is
 * closed (`unevaluatedProperties: false`), so a member the server sends and the document
 * does not describe fails too. The published file stays open for clients to extend.
 */
function closed(node: unknown, inSchema: boolean): unknown {
  if (Array.isArray(node)) return node.map((n) => closed(n, inSchema));
  if (typeof node !== 'object' || node === null) return node;
  if (inSchema && Array.isArray((node as Json).allOf)) node = mergeAllOf(node as Json);
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    // below `properties` the keys are member names, not keywords
    out[k] = k === 'properties' && inSchema ? Object.fromEntries(Object.entries(v as Json).map(([name, s]) => [name, closed(s, true)])) : closed(v, inSchema || k === 'schema' || k === 'schemas');
  }
  if (inSchema && out.properties && out.additionalProperties === undefined && out.unevaluatedProperties === undefined) out.unevaluatedProperties = false;
  return out;
}

/** `allOf` of object schemas as one object schema (so closing it does not refuse what another branch describes). */
function mergeAllOf(schema: Json): Json {
  const { allOf, ...rest } = schema as Json & { allOf: Json[] };
  const merged: Json & { properties: Json; required: string[] } = { ...rest, type: 'object', properties: {}, required: [] };
  for (let branch of allOf) {
    const ref = branch.$ref;
    if (typeof ref === 'string') branch = (openapi.components as unknown as { schemas: Record<string, Json> }).schemas[ref.replace('#/components/schemas/', '')]!;
    if (Array.isArray(branch.allOf)) branch = mergeAllOf(branch);
    if (branch.type !== 'object') throw new Error(`openapi.json: allOf of a non-object schema (${JSON.stringify(branch).slice(0, 80)}) is not supported by test/helpers/openapi.ts`);
    Object.assign(merged.properties, branch.properties ?? {});
    merged.required.push(...((branch.required as string[] | undefined) ?? []));
  }
  return merged;
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(closed(openapi, false) as Json, 'openapi.json');

const TEMPLATES = Object.keys(openapi.paths).map((template) => ({
  template,
  re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\+\}/g, '.+').replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

/** The path template of `path` (no query), or null when the document lists no such path. */
export function pathTemplate(path: string): string | null {
  const p = path.split('?')[0]!;
  // a literal path wins over a template that would also match it
  return TEMPLATES.find((t) => t.template === p)?.template ?? TEMPLATES.find((t) => t.re.test(p))?.template ?? null;
}

const pointer = (parts: string[]): string => parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/** The response object for (template, method, status) with its JSON pointer, following a `$ref` to components. */
function responseOf(template: string, method: string, status: number): { response: Json; at: string[] } | null {
  const op = openapi.paths[template]?.[method.toLowerCase()];
  if (!op) return null;
  const response = op.responses[String(status)];
  if (!response) return null;
  const ref = response.$ref;
  if (typeof ref === 'string') {
    const name = ref.replace('#/components/responses/', '');
    return { response: openapi.components.responses[name]!, at: ['components', 'responses', name] };
  }
  return { response, at: ['paths', template, method.toLowerCase(), 'responses', String(status)] };
}

/**
 * What is wrong with one answer, by the document; [] when it is as documented.
 * `body` is the answer's text; null when it is a stream that was not read (SSE).
 */
export function responseProblems(method: string, path: string, status: number, contentType: string | null, body: string | null): string[] {
  const template = pathTemplate(path);
  // the path without its query, which may carry the access token
  if (template === null) return [`${method} ${path.split('?')[0]!}: the path is not in openapi.json`];
  const where = `${method} ${template} ${status}`;
  if (!openapi.paths[template]![method.toLowerCase()]) return [`${method} ${template}: the method is not in openapi.json`];
  const found = responseOf(template, method, status);
  if (!found) return [`${where}: the status is not in openapi.json`];
  const content = found.response.content as Record<string, { schema?: Json }> | undefined;
  if (!content) return body === null || body === '' ? [] : [`${where}: openapi.json documents no body, got ${JSON.stringify(body.slice(0, 200))}`];
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const documented = Object.keys(content);
  if (!documented.includes(media)) return [`${where}: Content-Type ${JSON.stringify(contentType)}, openapi.json lists ${documented.join(', ')}`];
  if (!content[media]!.schema || body === null) return [];
  if (media !== 'application/json') return [];
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [`${where}: the body is not JSON: ${JSON.stringify(body.slice(0, 200))}`];
  }
  const validate = ajv.getSchema(`openapi.json#/${pointer([...found.at, 'content', media, 'schema'])}`);
  if (!validate) return [`${where}: openapi.json's schema could not be compiled`];
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => `${where}: body${e.instancePath} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`);
}

function pathOf(url: string): string {
  const u = new URL(url);
  return u.pathname + u.search;
}

/** Checks `res` (a clone is read; `res` stays unread) and throws naming every mismatch. */
export async function checkResponse(method: string, url: string, res: Response): Promise<Response> {
  const contentType = res.headers.get('content-type');
  const streamed = (contentType ?? '').startsWith('text/event-stream');
  const body = streamed ? null : await res.clone().text();
  const problems = responseProblems(method, pathOf(url), res.status, contentType, body);
  if (problems.length > 0) throw new Error(`the answer differs from openapi.json:\n  ${problems.join('\n  ')}`);
  return res;
}

/** fetch, then `checkResponse`. */
export async function checkedFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(url, init);
  return checkResponse(init.method ?? 'GET', url, res);
}

/** For a test that deliberately hits what the document does not list: fails when it does list it. */
export function expectUndocumented(method: string, url: string, status: number): void {
  const template = pathTemplate(pathOf(url.startsWith('http') ? url : `http://x${url}`));
  if (template !== null && responseOf(template, method, status) !== null) {
    throw new Error(`${method} ${template} ${status} is in openapi.json: check it with checkedFetch instead`);
  }
}
