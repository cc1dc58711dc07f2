/**
 * The configuration reference (docs/configuration.md) and the code agree: every key in
 * CONFIG_KEYS has a row with its environment variable and default, every row names a key
 * that exists, the prose of the README and of docs/ names no key that does not, and the
 * generated table is current.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS } from '../../src/adapters/config/schema.js';

const repo = resolve(import.meta.dirname, '../..');
const reference = readFileSync(join(repo, 'docs/configuration.md'), 'utf8');
/** Pages whose prose names configuration keys (other pages name proof fields such as `nostr.batch`). */
const pages = ['README.md', 'docs/configuration.md'].filter((p) => existsSync(join(repo, p)));
const START = '<!-- config-reference:start';
const END = '<!-- config-reference:end -->';

interface Row {
  key: string;
  env: string;
  defaultText: string;
  meaning: string;
}

/** Splits a Markdown table row on unescaped pipes. */
function cells(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 1; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '\\' && line[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (ch === '|') {
      out.push(cur.trim());
      cur = '';
    } else {
      cur += ch;
    }
  }
  return out;
}

function unquote(cell: string, what: string): string {
  const m = /^`([^`]*)`$/.exec(cell);
  if (!m) throw new Error(`${what} cell is not one code span: ${cell}`);
  return m[1]!;
}

function referenceRows(): Row[] {
  const a = reference.indexOf(START);
  const b = reference.indexOf(END);
  if (a < 0 || b < a) throw new Error('docs/configuration.md has no configuration reference between its markers');
  const lines = reference.slice(a, b).split('\n').filter((l) => l.startsWith('| `'));
  return lines.map((line) => {
    const [key, env, def, meaning] = cells(line);
    return { key: unquote(key ?? '', 'key'), env: unquote(env ?? '', 'env'), defaultText: unquote(def ?? '', 'default'), meaning: meaning ?? '' };
  });
}

describe('the configuration reference, docs/configuration.md', () => {
  const rows = referenceRows();
  const byKey = new Map(rows.map((r) => [r.key, r]));

  it('has one row per key, no key twice', () => {
    expect(rows.length).toBeGreaterThan(0);
    expect(byKey.size).toBe(rows.length);
  });

  it('lists every key in CONFIG_KEYS with its environment variable, default and meaning', () => {
    for (const spec of CONFIG_KEYS) {
      const row = byKey.get(spec.key);
      expect(row, `docs/configuration.md lacks ${spec.key}`).toBeDefined();
      expect(row!.env, spec.key).toBe(spec.env);
      expect(JSON.parse(row!.defaultText), `${spec.key} default`).toEqual(spec.default);
      expect(row!.meaning, spec.key).toContain(spec.doc.slice(0, 20));
    }
  });

  it('names no key that CONFIG_KEYS lacks', () => {
    const known = new Set<string>(CONFIG_KEYS.map((k) => k.key));
    for (const row of rows) expect(known.has(row.key), `docs/configuration.md names unknown key ${row.key}`).toBe(true);
  });

  it('the prose of the README and the reference names only configuration keys that exist', () => {
    const sections = [...new Set(CONFIG_KEYS.map((k) => k.key.split('.')[0]!))].filter((s) => CONFIG_KEYS.some((k) => k.key.startsWith(`${s}.`)));
    const mention = new RegExp(`\`((?:${sections.join('|')})\\.[A-Za-z][A-Za-z.]*)\``, 'g');
    const known = new Set<string>(CONFIG_KEYS.map((k) => k.key));
    let count = 0;
    for (const page of pages) {
      const named = [...readFileSync(join(repo, page), 'utf8').matchAll(mention)].map((m) => m[1]!);
      count += named.length;
      for (const key of named) expect(known.has(key), `${page} names ${key}, which is not a configuration key`).toBe(true);
    }
    expect(count).toBeGreaterThan(10);
  });

  it('is the table scripts/config-reference.mjs generates (needs a build)', () => {
    const schemaJs = join(repo, 'dist/src/adapters/config/schema.js');
    expect(existsSync(schemaJs), `${schemaJs} is missing: run npx tsc -p tsconfig.json (or npm test) first`).toBe(true);
    const r = spawnSync(process.execPath, [join(repo, 'scripts/config-reference.mjs'), '--check'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
  });

  it('documents every key of config/local.json', () => {
    const known = new Set<string>(CONFIG_KEYS.map((k) => k.key));
    const walk = (node: Record<string, unknown>, path: string, file: string): void => {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$comment') continue;
        const key = path ? `${path}.${k}` : k;
        if (known.has(key)) expect(byKey.has(key), `${file}: ${key}`).toBe(true);
        else if (v && typeof v === 'object' && !Array.isArray(v)) walk(v as Record<string, unknown>, key, file);
        else throw new Error(`${file} sets ${key}, which is not a configuration key`);
      }
    };
    for (const file of ['config/local.json']) {
      walk(JSON.parse(readFileSync(join(repo, file), 'utf8')) as Record<string, unknown>, '', file);
    }
  });
});
