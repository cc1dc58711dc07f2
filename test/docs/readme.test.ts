/**
 * The README is a quickstart: at most 1,500 words; every command it shows is one the
 * project's commands accept (the subcommand exists, each --flag is in that command's
 * --help, each npm script exists, each HTTP path is in openapi.json); and its links, and
 * those of docs/, lead to files and headings that exist.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/harness.js';

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const MAX_WORDS = 1500;
const PYTHON = '/usr/bin/python3';
const PY_CLIENT = 'clients/python/aer1_anchor.py';

/** Command lines the README shows: indented or fenced code lines and inline code that start with a command. */
export function commandLines(markdown: string): string[] {
  const starts = /^(npm |node bin\/|aer1-anchor |aer1-anchord|aer1-verify-anchor |python3 clients\/|curl )/;
  const out: string[] = [];
  let fence: string | null = null;
  let pending = '';
  for (const line of markdown.split('\n')) {
    const fenceMark = /^```(\w*)/.exec(line);
    if (fenceMark) {
      fence = fence === null ? fenceMark[1]! : null;
      continue;
    }
    const code = fence !== null ? (fence === '' || fence === 'sh' ? line : null) : line.startsWith('    ') ? line.slice(4) : null;
    if (code !== null) {
      const text = pending + code.trim();
      if (text.endsWith('\\')) {
        pending = `${text.slice(0, -1)} `;
        continue;
      }
      pending = '';
      for (const part of text.split('&&').map((p) => p.trim())) if (starts.test(part)) out.push(part);
      continue;
    }
    for (const m of line.matchAll(/`([^`]+)`/g)) if (starts.test(m[1]!)) out.push(m[1]!);
  }
  return out;
}

const helpCache = new Map<string, string>();
function help(argv: string[]): string {
  const key = argv.join(' ');
  if (!helpCache.has(key)) {
    const [cmd, ...args] = argv;
    helpCache.set(key, execFileSync(cmd!, [...args, '--help'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] }));
  }
  return helpCache.get(key)!;
}

const flagsOf = (words: string[]): string[] => words.filter((w) => /^--[a-z]/.test(w)).map((w) => w.split('=')[0]!);

/** Why the project's commands would not take `line`, or null when they would. */
export function refusal(line: string): string | null {
  const words = line.split(/\s+/).filter(Boolean);
  const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const missingFlags = (text: string, flags: string[]): string | null => {
    const missing = flags.filter((f) => !new RegExp(`${f}(?![\\w-])`).test(text));
    return missing.length ? `not in its --help: ${missing.join(', ')}` : null;
  };
  if (words[0] === 'npm') {
    const sub = words[1]!;
    if (['ci', 'install', 'link'].includes(sub)) return null;
    const script = sub === 'run' ? words[2]! : sub;
    return script in scripts ? null : `no npm script ${script}`;
  }
  if (words[0] === 'curl') {
    const url = words.find((w) => /^https?:\/\//.test(w));
    if (!url) return 'curl without a URL';
    const method = (words[words.indexOf('-X') + 1] ?? 'GET').toLowerCase();
    const paths = (JSON.parse(readFileSync(join(REPO_ROOT, 'src/adapters/http/static/openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> }).paths;
    const path = new URL(url).pathname;
    return paths[path]?.[method] ? null : `${method.toUpperCase()} ${path} is not in openapi.json`;
  }
  if (words[0] === 'python3') {
    const argv = [PYTHON, PY_CLIENT];
    const rest = words.slice(2);
    const sub = rest.findIndex((w, i) => !w.startsWith('-') && !(i > 0 && rest[i - 1]!.startsWith('--') && !rest[i - 1]!.includes('=')));
    if (sub < 0) return 'no subcommand';
    const globalProblem = missingFlags(help(argv), flagsOf(rest.slice(0, sub)));
    if (globalProblem) return globalProblem;
    if (!help(argv).includes(`    ${rest[sub]}`)) return `no subcommand ${rest[sub]}`;
    return missingFlags(help([...argv, rest[sub]!]), flagsOf(rest.slice(sub + 1)));
  }
  const bin = words[0] === 'node' ? /^bin\/(.+)\.js$/.exec(words[1]!)?.[1] : words[0];
  const args = words[0] === 'node' ? words.slice(2) : words.slice(1);
  if (!bin || !existsSync(join(REPO_ROOT, 'bin', `${bin}.js`))) return `no command ${bin}`;
  const argv = [process.execPath, join(REPO_ROOT, 'bin', `${bin}.js`)];
  if (bin === 'aer1-anchor') {
    const sub = args[0];
    if (!sub || !new RegExp(`^\\s+${sub}\\s`, 'm').test(help(argv))) return `no subcommand ${sub}`;
    return missingFlags(help([...argv, sub]), flagsOf(args.slice(1)));
  }
  return missingFlags(help(argv), flagsOf(args));
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

describe('the README, a quickstart', () => {
  it(`is at most ${MAX_WORDS} words`, () => {
    const words = README.split(/\s+/).filter(Boolean).length;
    console.log(`README.md: ${words} words`);
    expect(words).toBeLessThanOrEqual(MAX_WORDS);
  });

  it('shows the two commands, the demo, the dev stack, Node, Python, curl and the verifier', () => {
    const lines = commandLines(README);
    for (const wanted of ['npm ci', 'npm start', 'npm test', 'node bin/aer1-anchor.js demo', 'node bin/aer1-anchor.js dev-stack', `python3 ${PY_CLIENT}`, 'curl ', 'aer1-verify-anchor ']) {
      expect(lines.some((l) => l.startsWith(wanted)), wanted).toBe(true);
    }
    expect(README).toContain("from 'aer1-anchor'");
    expect(README).toContain('](docs/python.md)');
  });

  it('the check refuses what the commands would refuse', () => {
    expect(refusal('node bin/aer1-anchor.js demo --out x')).toBeNull();
    expect(refusal('node bin/aer1-anchor.js demo --outt x')).toMatch(/--outt/);
    expect(refusal('aer1-anchor nosuch KEY')).toMatch(/no subcommand/);
    expect(refusal('aer1-verify-anchor r.json --expected-signer K')).toMatch(/--expected-signer/);
    expect(refusal(`python3 ${PY_CLIENT} wait KEY --until confirmed --deadline 5`)).toMatch(/--deadline/);
    expect(refusal('npm run nosuch')).toMatch(/no npm script/);
    expect(refusal('curl -X POST http://127.0.0.1:8787/v1/anchor')).toMatch(/not in openapi/);
  });

  it('every command it shows is one the commands accept', () => {
    const lines = commandLines(README);
    expect(lines.length).toBeGreaterThan(8);
    console.log(`README.md: ${lines.length} command lines checked`);
    const refused = lines.map((l) => [l, refusal(l)] as const).filter(([, why]) => why !== null);
    expect(refused).toEqual([]);
  }, 60_000);

  it('its links, and those of docs/, lead to files and headings that exist', () => {
    const pages = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(REPO_ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const path = file === '' ? join(REPO_ROOT, page) : resolve(dirname(join(REPO_ROOT, page)), file);
        if (!existsSync(path)) broken.push(`${page}: ${target} (no such file)`);
        else if (anchor && path.endsWith('.md') && !anchors(path).has(anchor)) broken.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
