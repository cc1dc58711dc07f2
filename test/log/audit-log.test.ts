/**
 * `aer1-anchor audit --log` as an auditor runs it against a running daemon's anchor log
 * (served over loopback HTTP): a folder with exactly one document of each outcome —
 * matching, altered, truncated, not-logged, withheld (logged, left out of the folder) and
 * unchecked (logged, no proof attached) — gives exactly those counts, in text and --json;
 * a key the caller does not trust establishes nothing (exit 3). Real Redis, dev relay and
 * calendar; the documents minted as an issuer would and anchored through POST /v1/anchors.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSignerKey } from '../../src/core/log/note.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { cutLastStep, mintReceipt, mintWorkflow } from '../../src/dev/demo/documents.js';
import { runAnchorCli, tempDir, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';

let s: Stack;
let dir: string;
beforeAll(async () => {
  dir = tempDir('aer1-audit-log');
  s = await startStack({ overrides: { log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/aer1', checkpointIntervalMs: 100 } } });
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runAnchorCli(args);

/** Changes the receipt's output and its declared hash together: the document holds together, only the anchor gives it away. */
function alterOutput(receipt: Record<string, unknown>): Record<string, unknown> {
  const bytes = Buffer.from(JSON.stringify({ asset: 'BTC', price_usd: '1.00' }));
  return { ...receipt, canonical_bytes: bytes.toString('base64'), canonical_byte_length: bytes.length, output_hash: `sha256:${createHash('sha256').update(bytes).digest('hex')}` };
}

interface Row { outcome: string; key: string; index: number | null; detail: string }

describe('aer1-anchor audit --log', () => {
  it('holds a folder with one document of each outcome against the log: exact counts', async () => {
    const matching = mintReceipt();
    const altered = mintReceipt();
    const workflow = mintWorkflow();
    const withheld = mintReceipt();
    const unchecked = mintReceipt();
    const notLogged = mintReceipt();
    const anchored = [matching, altered, workflow, withheld, unchecked];
    for (const doc of anchored) {
      const res = await s.post('/v1/anchors', doc, { auth: true });
      expect(res.status, await res.text()).toBe(202);
    }
    const keyOf = (d: Record<string, unknown>): string => (d.receipt_id ?? d.id) as string;
    const proofs = new Map<string, AnchorProof>();
    for (const doc of anchored) {
      proofs.set(keyOf(doc), await waitFor(`the proof of ${keyOf(doc)} with its log inclusion`, async () => {
        const res = await s.get(`/v1/anchors/${keyOf(doc)}/proof`);
        if (res.status !== 200) {
          await res.body?.cancel();
          return null;
        }
        const proof = (await res.json()) as AnchorProof;
        return proof.log ? proof : null;
      }, 30_000));
    }
    const folder = join(dir, 'folder');
    mkdirSync(folder);
    const put = (name: string, doc: Record<string, unknown>, proof?: AnchorProof): void => {
      writeFileSync(join(folder, name), JSON.stringify(proof ? { ...doc, anchor_proof: proof } : doc));
    };
    put('matching.json', matching, proofs.get(keyOf(matching)));
    put('altered.json', alterOutput(altered), proofs.get(keyOf(altered)));
    put('truncated.json', cutLastStep(workflow) as unknown as Record<string, unknown>, proofs.get(keyOf(workflow)));
    put('unchecked.json', unchecked);
    put('not-logged.json', notLogged);

    const vkey = (await (await s.get('/v1/log/vkey')).text()).trim();
    const prefix = `${s.http.url}/v1/log`;
    const json = await cli(['audit', '--log', prefix, '--log-key', vkey, '--json', folder]);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { log: { size: number }; counts: Record<string, number>; rows: Row[]; exit: number };
    expect(report.log.size).toBe(5);
    expect(report.counts).toEqual({ matching: 1, altered: 1, truncated: 1, 'not-logged': 1, withheld: 1, unchecked: 1 });
    const row = (outcome: string): Row => report.rows.find((r) => r.outcome === outcome)!;
    expect(row('matching').key).toBe(keyOf(matching));
    expect(row('altered')).toMatchObject({ key: keyOf(altered), index: proofs.get(keyOf(altered))!.log!.index });
    expect(row('altered').detail).toContain('altered: output_sha256 anchored');
    expect(row('truncated').key).toBe(keyOf(workflow));
    expect(row('truncated').detail).toContain('truncated: anchored 6 steps, receipt has 5');
    expect(row('not-logged')).toMatchObject({ key: keyOf(notLogged), index: null });
    expect(row('withheld')).toMatchObject({ key: keyOf(withheld), index: proofs.get(keyOf(withheld))!.log!.index });
    expect(row('unchecked').key).toBe(keyOf(unchecked));

    const text = await cli(['audit', '--log', prefix, '--log-key', vkey, folder]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('against the anchor log example.test/aer1 at size 5');
    expect(text.stdout.trim().split('\n').at(-1)).toBe('SUMMARY: 6 subjects: 1 matching, 1 altered, 1 truncated, 1 not-logged, 1 withheld, 1 unchecked; 0 unreadable');

    // the same folder against a key the caller does not hold for this log: nothing established
    const stranger = generateSignerKey('example.test/aer1').signer.verifierKey;
    const untrusted = await cli(['audit', '--log', join(dir, 'log'), '--log-key', stranger, folder]);
    expect(untrusted.code).toBe(3);
    expect(untrusted.stdout).toContain('signer not trusted');
    const mixed = await cli(['audit', '--log', prefix, '--log-key', vkey, '--relay', 'ws://127.0.0.1:1', folder]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('--relay is for the relay audit');
  });
});
