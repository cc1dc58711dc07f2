/**
 * No merge conflict markers in what the repository ships or documents: a merge once left
 * `<<<<<<<` / `=======` / `>>>>>>>` lines in docs/http.md and docs/performance.md, which
 * nothing else would have noticed.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/harness.js';

it('no tracked text file holds a merge conflict marker line', () => {
  const files = execFileSync('git', ['ls-files', '*.md', '*.ts', '*.lua', '*.js', '*.json', '*.mjs', '*.html', '*.css'], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  expect(files.length).toBeGreaterThan(100);
  const marked: string[] = [];
  for (const f of files) {
    const lines = readFileSync(join(REPO_ROOT, f), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/^(<{7}|>{7})( |$)/.test(line) || line === '=======') marked.push(`${f}:${i + 1}`);
    });
  }
  expect(marked).toEqual([]);
});
