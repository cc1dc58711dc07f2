/**
 * Error codes are closed sets in code, and the docs list exactly those sets: docs/http.md
 * the HTTP API's codes, docs/architecture.md every error class's. And the API's JSON uses
 * one casing, camelCase, with the exceptions docs/http.md names.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HTTP_ERROR_CODES } from '../../src/adapters/http/respond.js';
import { CALENDAR_ERROR_CODES } from '../../src/adapters/ots/calendar/calendar-error.js';
import { WITNESS_ERROR_CODES } from '../../src/adapters/witness/witness-error.js';
import { BITCOIN_ERROR_CODES } from '../../src/core/bitcoin/errors.js';
import { INPUT_ERROR_CODES, USAGE_ERROR_CODES } from '../../src/core/errors/errors.js';
import { LOG_ERROR_CODES } from '../../src/core/log/errors.js';
import { OTS_ERROR_CODES } from '../../src/core/ots/errors.js';
import { TSA_FORMAT_ERROR_CODES } from '../../src/core/tsa/errors.js';
import { TSA_ERROR_CODES } from '../../src/adapters/tsa/tsa-error.js';
import { DEMO_ERROR_CODES } from '../../src/dev/demo/demo.js';
import { openapi } from '../helpers/openapi.js';

const repo = resolve(import.meta.dirname, '../..');
const read = (file: string): string => readFileSync(join(repo, file), 'utf8');

function between(text: string, start: string, end: string): string {
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`markers ${start} … ${end} not found`);
  return text.slice(a + start.length, b);
}

const sorted = (xs: readonly string[]): string[] => [...xs].sort();

describe('error codes', () => {
  it('docs/http.md lists exactly the HTTP API codes, each once, with its status', () => {
    const block = between(read('docs/http.md'), '<!-- http-error-codes:start -->', '<!-- http-error-codes:end -->');
    const rows = block.split('\n').filter((l) => l.startsWith('| `'));
    const codes = rows.map((r) => /^\| `([a-z_]+)` \| (\d{3}) \|/.exec(r)?.[1] ?? `unparsed row: ${r}`);
    expect(new Set(codes).size).toBe(codes.length);
    expect(sorted(codes)).toEqual(sorted(HTTP_ERROR_CODES));
  });

  it('openapi.json\'s ErrorCode is the HTTP codes plus the intake\'s InputError codes (every answer in the HTTP tests is checked against it)', () => {
    const schemas = (openapi as unknown as { components: { schemas: Record<string, { enum?: string[] }> } }).components.schemas;
    expect(sorted(schemas.ErrorCode!.enum ?? [])).toEqual(sorted([...new Set([...HTTP_ERROR_CODES, ...INPUT_ERROR_CODES])]));
  });

  it('docs/architecture.md lists exactly each error class\'s codes', () => {
    const block = between(read('docs/architecture.md'), '<!-- error-codes:start -->', '<!-- error-codes:end -->');
    const sections = new Map<string, string[]>();
    for (const part of block.split('\n### ').slice(1)) {
      const name = /^`([A-Za-z]+)`/.exec(part)?.[1];
      if (!name) throw new Error(`section without a class name: ${part.slice(0, 60)}`);
      // the codes are the code spans of the body, not of the heading line; file paths and prose words with a dot or slash are not codes
      const body = part.slice(part.indexOf('\n'));
      sections.set(name, [...new Set([...body.matchAll(/`([a-z][a-z0-9_]*)`/g)].map((m) => m[1]!))]);
    }
    const inCode: Record<string, readonly string[]> = {
      InputError: INPUT_ERROR_CODES,
      OtsFormatError: OTS_ERROR_CODES,
      LogFormatError: LOG_ERROR_CODES,
      BitcoinVerificationError: BITCOIN_ERROR_CODES,
      CalendarError: CALENDAR_ERROR_CODES,
      WitnessError: WITNESS_ERROR_CODES,
      TsaFormatError: TSA_FORMAT_ERROR_CODES,
      TsaError: TSA_ERROR_CODES,
      UsageError: USAGE_ERROR_CODES,
      ConflictError: ['conflict'],
      DemoError: DEMO_ERROR_CODES,
    };
    expect(sorted([...sections.keys()])).toEqual(sorted(Object.keys(inCode)));
    for (const [name, codes] of Object.entries(inCode)) expect(sorted(sections.get(name)!), name).toEqual(sorted(codes));
  });
});

describe('JSON casing of the API', () => {
  it('every member name openapi.json describes is camelCase, but for the exceptions docs/http.md names', () => {
    const exceptions = new Set(['block_hash']);
    const names = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'properties') for (const name of Object.keys(v as object)) names.add(name);
          walk(v);
        }
      }
    };
    walk(openapi);
    expect(names.size).toBeGreaterThan(50);
    const off = [...names].filter((n) => !/^[a-z][a-zA-Z0-9]*$/.test(n) && !exceptions.has(n));
    expect(off).toEqual([]);
    for (const name of exceptions) expect(read('docs/http.md')).toContain(`\`${name}\``);
  });
});
