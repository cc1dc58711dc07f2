/**
 * A growing log (LogWriter, real checkpoints) sent checkpoint by checkpoint to two dev
 * witnesses through the client: both cosign each one, each from the size it cosigned
 * before, and the cosigned notes are checked twice — by our policy check and by an
 * implementation written apart from ours from the spec's text (Python's `cryptography`,
 * Debian python3-cryptography; .ci/run installs it), which also signs cosignatures that
 * our check must accept and a forged time that it must refuse.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectCosignatures } from '../../src/adapters/witness/collect-cosignatures.js';
import { WitnessClient } from '../../src/adapters/witness/witness-client.js';
import { checkCosignatures } from '../../src/core/witness/cosignature-policy.js';
import { attachCosignatures, parseWitnessKey } from '../../src/core/witness/cosignature.js';
import { noteText, openLog, startWitness, tempDir, type TestLog } from './witness-fixtures.js';

const PY = join(import.meta.dirname, 'py-checker', 'cosignature_v1.py');
const tmp = tempDir('aer1-witness-seq-');
const SIZES = [1, 2, 7, 256, 257, 1000, 4097];

interface PyCheck { name: string; vkey_ok: boolean; lines: number; verified: boolean; times: number[] }
function python(request: unknown): { check: PyCheck[][]; sign?: { vkey: string; lines: string[] } } {
  const r = spawnSync('/usr/bin/python3', [PY], { input: JSON.stringify(request), encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0) throw new Error(`python checker failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as ReturnType<typeof python>;
}

let log: TestLog;
let w1: Awaited<ReturnType<typeof startWitness>>;
let w2: Awaited<ReturnType<typeof startWitness>>;
const cosigned: { size: number; note: string; times: number[]; oldSizes: number[] }[] = [];

beforeAll(async () => {
  const probe = spawnSync('/usr/bin/python3', ['-c', 'import cryptography'], { encoding: 'utf8' });
  if (probe.status !== 0) throw new Error('python3-cryptography is not installed (apt-get install python3-cryptography; .ci/run installs it)');
  log = await openLog(join(tmp.dir, 'log'));
  w1 = await startWitness(join(tmp.dir, 'w1'), [log.signer.verifierKey], { name: 'witness.test/one' });
  w2 = await startWitness(join(tmp.dir, 'w2'), [log.signer.verifierKey], { name: 'witness.test/two' });
  const clients = [new WitnessClient(w1.url, w1.verifierKey), new WitnessClient(w2.url, w2.verifierKey)];
  const known = new Map<string, number>();
  for (const size of SIZES) {
    const note = await log.grow(size - log.writer.size);
    const { note: out, outcomes } = await collectCosignatures(note, clients, (o, n) => log.writer.consistencyProof(o, n), known);
    for (const o of outcomes) {
      if (!o.ok) throw new Error(`size ${size}: ${o.message}`);
      known.set(o.url, size);
    }
    cosigned.push({ size, note: out, times: outcomes.map((o) => (o.ok ? o.time : -1)), oldSizes: outcomes.map((o) => (o.ok ? o.oldSize : -1)) });
  }
});
afterAll(async () => {
  await w1?.close();
  await w2?.close();
  tmp.remove();
});

describe('a growing log through two dev witnesses', () => {
  it('both witnesses cosign every checkpoint, each from the size it cosigned before, with no conflict', () => {
    expect(cosigned.map((c) => c.size)).toEqual(SIZES);
    expect(cosigned.map((c) => c.oldSizes)).toEqual(SIZES.map((_, i) => (i === 0 ? [0, 0] : [SIZES[i - 1], SIZES[i - 1]])));
    expect(w1.answered.get(200)).toBe(SIZES.length);
    expect(w2.answered.get(200)).toBe(SIZES.length);
    expect(w1.answered.get(409) ?? 0).toBe(0);
  });

  it('our policy check: a quorum of 2 holds for every checkpoint, with each witness\'s time', () => {
    const keys = [parseWitnessKey(w1.verifierKey), parseWitnessKey(w2.verifierKey)];
    for (const c of cosigned) {
      const r = checkCosignatures(c.note, keys, 2);
      expect(r.ok, `size ${c.size}`).toBe(true);
      expect(r.witnesses.map((w) => w.time)).toEqual(c.times);
    }
  });

  it('Python\'s cryptography, from the spec\'s text, checks the key IDs and verifies both cosignatures on every checkpoint', () => {
    const out = python({ check: cosigned.map((c) => ({ note: c.note, vkeys: [w1.verifierKey, w2.verifierKey] })) });
    out.check.forEach((perWitness, i) => {
      expect(perWitness.map((p) => [p.name, p.vkey_ok, p.lines, p.verified, p.times]), `size ${SIZES[i]}`).toEqual([
        ['witness.test/one', true, 1, true, [cosigned[i]!.times[0]]],
        ['witness.test/two', true, 1, true, [cosigned[i]!.times[1]]],
      ]);
    });
  });

  it('Python refuses them on a checkpoint whose root was changed after cosigning', () => {
    const c = cosigned.at(-1)!;
    const rootLine = noteText(c.note).split('\n')[2]!;
    const swapped = rootLine.startsWith('A') ? `B${rootLine.slice(1)}` : `A${rootLine.slice(1)}`;
    const out = python({ check: [{ note: c.note.replace(rootLine, swapped), vkeys: [w1.verifierKey] }] });
    expect(out.check[0]![0]).toMatchObject({ lines: 1, verified: false });
  });

  it('our check accepts cosignatures Python signed from the spec, and refuses one whose time was changed', () => {
    const c = cosigned[3]!;
    const t = 1_750_000_000;
    const out = python({ check: [], sign: { name: 'py.test/witness', texts: [noteText(c.note)], time: t } });
    const key = parseWitnessKey(out.sign!.vkey);
    const line = out.sign!.lines[0]!;
    expect(checkCosignatures(attachCosignatures(c.note, [line]), [key], 1).witnesses[0]).toMatchObject({ status: 'verified', time: t });
    const raw = Buffer.from(line.trim().split(' ')[2]!, 'base64');
    raw.writeBigUInt64BE(BigInt(t + 1), 4);
    const retimed = `\u2014 py.test/witness ${raw.toString('base64')}\n`;
    expect(checkCosignatures(attachCosignatures(c.note, [retimed]), [key], 0).witnesses[0]!.status).toBe('bad_signature');
  });
});
