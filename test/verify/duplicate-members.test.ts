/**
 * A JSON file with a member name twice in one object reads two ways (JSON.parse keeps the
 * last, other readers the first): `aer1-verify-anchor` refuses it (exit 2, one line naming
 * the member and where), as it refuses any input that could be read two ways — the page's
 * verifier does the same (test/verify/browser-verify.test.ts compares them).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { duplicateMember } from '../../src/core/aer1/json-limits.js';
import { cliVerify } from '../helpers/browser.js';
import { tempDir } from '../helpers/harness.js';
import { attach, envelopeModeProof, receiptNumber } from './build-proofs.js';

const dir = tempDir('aer1-duplicate-members');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('duplicate member names', () => {
  it('finds a repeated name in one object, escapes decoded, and names where it is; none across objects', () => {
    expect(duplicateMember('{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}')).toBeNull();
    expect(duplicateMember('{"a":1,"a":2}')).toEqual({ name: 'a', at: '(top level)' });
    expect(duplicateMember('{"x":{"p":[1,{"d":"\\"}","\\u0064":0}]}}')).toEqual({ name: 'd', at: 'x.p[1]' });
    expect(duplicateMember('[{"k":"a,\\"k\\":1"}]')).toBeNull();
  });

  it('the CLI refuses a receipt or proof with a repeated member: exit 2, one line; the same file without the repeat passes', async () => {
    const doc = receiptNumber(1301);
    const { proof } = envelopeModeProof(doc, { noOts: true });
    const text = JSON.stringify(attach(doc, proof));
    const cases: Array<[string, string, RegExp]> = [
      ['proof digest', text.replace('"digest":', `"digest":"${'0'.repeat(64)}","digest":`), /member "digest" twice in anchor_proof/],
      ['receipt id, escaped', text.replace('{"id":', '{"\\u0069d":"other","id":'), /member "id" twice in \(top level\)/],
      ['event sig', text.replace('"sig":', `"sig":"${'1'.repeat(128)}","sig":`), /member "sig" twice in anchor_proof\.nostr\.event/],
    ];
    const good = join(dir, 'good.json');
    writeFileSync(good, text);
    expect((await cliVerify([good])).code).toBe(0);
    for (const [name, body, reason] of cases) {
      expect(body, name).not.toBe(text);
      const file = join(dir, `${name.replaceAll(' ', '-')}.json`);
      writeFileSync(file, body);
      const r = await cliVerify([file]);
      expect(r.code, name).toBe(2);
      expect(r.stdout, name).toBe('');
      expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
      expect(r.stderr, name).toMatch(reason);
    }
  }, 60_000);
});
