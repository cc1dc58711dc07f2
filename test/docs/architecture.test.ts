/**
 * docs/architecture.md stays true to the tree: its "Lua scripts" section names every script
 * (each file in src/adapters/state/lua/, each script a module defines inline as an ioredis
 * custom command) and its folder table has a row for every folder of src/core/ and
 * src/adapters/; every other folder under src/ has a row or is named (`name/`) in the row
 * of the folder above it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/harness.js';

const DOC = readFileSync(join(REPO_ROOT, 'docs/architecture.md'), 'utf8');

function section(heading: string): string {
  const start = DOC.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/architecture.md has a "## ${heading}" section`).toBeGreaterThanOrEqual(0);
  const end = DOC.indexOf('\n## ', start + 1);
  return DOC.slice(start, end < 0 ? undefined : end);
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...tsFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

describe('docs/architecture.md', () => {
  it('names every Lua script: the state\'s files and the inline ones', () => {
    const text = section('Lua scripts');
    const files = readdirSync(join(REPO_ROOT, 'src/adapters/state/lua')).filter((f) => f.endsWith('.lua'));
    expect(files.length).toBeGreaterThan(10);
    const inline: string[] = [];
    for (const file of tsFiles(join(REPO_ROOT, 'src'))) {
      const source = readFileSync(file, 'utf8');
      if (!source.includes('defineCommand(')) continue;
      // the custom commands a module defines under names of its own (the state's are named after their files)
      inline.push(...new Set([...source.matchAll(/\b(aer1_[a-z][a-z_]*)\b/g)].map((m) => m[1]!)));
    }
    expect(inline.length).toBeGreaterThan(0);
    const missing = [...files, ...inline].filter((name) => !text.includes(`\`${name}\``));
    expect(missing, 'scripts the "Lua scripts" section does not name').toEqual([]);
  });

  it('has a row in its folder table for every folder of src/core/ and src/adapters/', () => {
    const folders = ['src/core', 'src/adapters'].flatMap((top) =>
      readdirSync(join(REPO_ROOT, top))
        .filter((name) => statSync(join(REPO_ROOT, top, name)).isDirectory())
        .map((name) => `${relative(REPO_ROOT, join(REPO_ROOT, top, name))}/`),
    );
    const rows = new Set([...DOC.matchAll(/^\| `(src\/[a-z0-9/-]+\/)` \|/gm)].map((m) => m[1]!));
    expect(folders.filter((f) => !rows.has(f)), 'folders without a row').toEqual([]);
  });

  it('names every folder under src/: a row of its own, or `name/` in the row of the nearest folder above it that has one', () => {
    const rows = new Map([...DOC.matchAll(/^\| `(src\/[a-z0-9/-]+\/)` \|(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    const folders: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(join(REPO_ROOT, dir))) {
        if (!statSync(join(REPO_ROOT, dir, name)).isDirectory()) continue;
        folders.push(`${dir}/${name}/`);
        walk(`${dir}/${name}`);
      }
    };
    walk('src');
    expect(folders.length).toBeGreaterThan(40);
    const unnamed = folders.filter((folder) => {
      if (rows.has(folder)) return false;
      const name = folder.split('/').at(-2)!;
      for (let up = folder.slice(0, -name.length - 1); up.startsWith('src/'); up = up.slice(0, up.slice(0, -1).lastIndexOf('/') + 1)) {
        const row = rows.get(up);
        if (row !== undefined) return !row.includes(`\`${name}/\``);
      }
      return true;
    });
    expect(unnamed, 'folders docs/architecture.md does not name').toEqual([]);
  });
});
