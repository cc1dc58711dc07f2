/**
 * The layout's rules (.dependency-cruiser.cjs), as `npm test` runs them: the tree passes,
 * and a small tree that breaks each rule once fails, naming the rule and the import.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tempDir } from '../helpers/harness.js';

const depcruise = join(REPO_ROOT, 'node_modules/.bin/depcruise');
const config = join(REPO_ROOT, '.dependency-cruiser.cjs');

function cruise(cwd: string): { code: number | null; out: string } {
  const r = spawnSync(depcruise, ['src', '--config', config], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('dependency rules', () => {
  const bad = tempDir('aer1-deprules');
  afterAll(() => rmSync(bad, { recursive: true, force: true }));

  it('hold for src/: the core is pure, src/dev is reached only from the CLI, witnesses import neither queue nor intake, no folder cycles', () => {
    const r = cruise(REPO_ROOT);
    expect(r.out).toMatch(/no dependency violations found/);
    expect(r.code).toBe(0);
  });

  it('fail on a tree that breaks each rule, naming the rule and the import', () => {
    const files: Record<string, string> = {
      'src/core/a/io.ts': "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      'src/core/a/redis.ts': "import { Redis } from 'ioredis';\nexport const r = Redis;\n",
      'src/core/a/adapter.ts': "import { z } from '../../adapters/b/uses-dev.js';\nexport const q = z;\n",
      'src/adapters/b/uses-dev.ts': "import { y } from '../../dev/c/dev.js';\nimport { w } from '../d/w.js';\nexport const z = y + w;\n",
      'src/adapters/d/w.ts': "import { z } from '../b/uses-dev.js';\nexport const w = 2;\nexport const zz = z;\n",
      'src/dev/c/dev.ts': 'export const y = 1;\n',
      'src/adapters/queue/producer.ts': 'export const p = 1;\n',
      'src/adapters/intake/intake.ts': 'export const i = 1;\n',
      'src/adapters/ots/ots-witness.ts': "import { p } from '../queue/producer.js';\nexport const o = p;\n",
      'src/adapters/nostr/nostr-witness.ts': "import { i } from '../intake/intake.js';\nexport const n = i;\n",
      'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(bad, name)), { recursive: true });
      writeFileSync(join(bad, name), text);
    }
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(bad, 'node_modules'));
    const r = cruise(bad);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('error core-does-no-io: src/core/a/io.ts → fs');
    expect(r.out).toMatch(/error core-uses-no-service-client: src\/core\/a\/redis\.ts → \S*node_modules\/ioredis\//);
    expect(r.out).toContain('error core-imports-no-adapter: src/core/a/adapter.ts → src/adapters/b/uses-dev.ts');
    expect(r.out).toContain('error dev-only-from-cli: src/adapters/b/uses-dev.ts → src/dev/c/dev.ts');
    expect(r.out).toContain('error witnesses-import-no-queue-or-intake: src/adapters/ots/ots-witness.ts → src/adapters/queue/producer.ts');
    expect(r.out).toContain('error witnesses-import-no-queue-or-intake: src/adapters/nostr/nostr-witness.ts → src/adapters/intake/intake.ts');
    expect(r.out).toMatch(/error no-folder-cycles: src\/adapters\/[bd] →/);
  });
});
