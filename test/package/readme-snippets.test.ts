/**
 * The README's TypeScript, as a newcomer runs it: `npm pack`, then the tarball installed
 * into an empty project beside `ioredis` and `bullmq` at the majors npm gives today
 * (`npm install aer1-anchor ioredis bullmq`) and beside the previous majors (5). Every
 * ```ts block of README.md and docs/anchoring.md is type-checked as a module of its own
 * with `tsc` (strict, NodeNext), so the test follows the docs: a snippet that stops
 * compiling fails here.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';

const run = promisify(execFile);
const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');

interface Snippet { line: number; code: string; page?: string }

/** The ```ts blocks of a Markdown text, with the line each starts on. */
function tsBlocks(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const out: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```ts') continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end]!.trim() !== '```') end++;
    out.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return out;
}

/** Installed major of a package in a project. */
function major(project: string, name: string): number {
  return Number((JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version.split('.')[0]);
}

/** How many copies of a package a project holds (one shared copy is what makes the types meet). */
function copies(project: string, name: string): string[] {
  const lock = JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  return Object.entries(lock.packages).filter(([p]) => p === `node_modules/${name}` || p.endsWith(`/node_modules/${name}`)).map(([p, v]) => `${p}@${v.version}`);
}

async function typeCheck(project: string, snippets: Snippet[]): Promise<string> {
  const files = snippets.map((s, i) => {
    const file = `${(s.page ?? 'README.md').replace(/\W+/g, '-')}-${i + 1}-line-${s.line}.ts`;
    writeFileSync(join(project, file), s.code);
    return file;
  });
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true,
      typeRoots: [join(REPO_ROOT, 'node_modules/@types')], types: ['node'],
    },
    files,
  }));
  return run(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')], { cwd: project, timeout: 90_000, maxBuffer: 16 << 20 }).then(
    () => 'ok',
    (err: { stdout?: string }) => err.stdout ?? String(err),
  );
}

describe("the README's TypeScript snippets, against the installed tarball", () => {
  // the README's, and those of the page it sends Node producers to
  const snippets = ['README.md', 'docs/anchoring.md'].flatMap((page) => tsBlocks(readFileSync(join(REPO_ROOT, page), 'utf8')).map((s) => ({ ...s, page })));
  const packDir = tempDir('aer1-pack');
  const today = tempDir('aer1-readme-today');
  const previous = tempDir('aer1-readme-previous');
  let tarball = '';

  beforeAll(async () => {
    // --ignore-scripts: `prepare` would rebuild dist, which npm test has just done
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], { cwd: REPO_ROOT, timeout: 60_000, maxBuffer: 16 << 20 });
    tarball = join(packDir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
    const install = async (project: string, extra: string[]): Promise<void> => {
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'newcomer', private: true, type: 'module' }));
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-online', tarball, ...extra], { cwd: project, timeout: 120_000, maxBuffer: 16 << 20 });
    };
    // the README's own command, `npm install aer1-anchor ioredis bullmq`, with the tarball for the name
    await Promise.all([install(today, ['ioredis', 'bullmq']), install(previous, ['ioredis@5', 'bullmq@5'])]);
  }, 180_000);

  afterAll(() => {
    for (const dir of [packDir, today, previous]) rmSync(dir, { recursive: true, force: true });
  });

  it('the README has TypeScript snippets to check', () => {
    expect(snippets.length).toBeGreaterThan(0);
  });

  it('type-check beside the ioredis and bullmq majors npm installs today', async () => {
    expect(major(today, 'ioredis')).toBeGreaterThanOrEqual(6);
    expect(major(today, 'bullmq')).toBeGreaterThanOrEqual(6);
    expect(await typeCheck(today, snippets)).toBe('ok');
    expect(copies(today, 'ioredis')).toHaveLength(1);
    expect(copies(today, 'bullmq')).toHaveLength(1);
  }, 120_000);

  it('type-check beside ioredis 5 and bullmq 5', async () => {
    expect(major(previous, 'ioredis')).toBe(5);
    expect(major(previous, 'bullmq')).toBe(5);
    expect(await typeCheck(previous, snippets)).toBe('ok');
  }, 120_000);
});
