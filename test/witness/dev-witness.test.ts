/**
 * The dev witness speaks C2SP tlog-witness add-checkpoint as the spec says, status by
 * status, over loopback HTTP with real checkpoints from LogWriter: 400 malformed, 404
 * unknown origin, 403 no trusted signature, 409 + text/x.tlog.size on an old-size
 * mismatch, 422 on a bad proof or a fork, 200 with a cosignature/v1 line; its state
 * survives a restart, and two racing requests on one old size cannot both be cosigned.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSignerKey, signNote } from '../../src/core/log/note.js';
import { formatAddCheckpointRequest } from '../../src/core/witness/add-checkpoint.js';
import { checkCosignatures } from '../../src/core/witness/cosignature-policy.js';
import { attachCosignatures, parseWitnessKey } from '../../src/core/witness/cosignature.js';
import { originHash } from '../../src/dev/witness/witness-store.js';
import { noteText, openLog, ORIGIN, startWitness, tempDir, type TestLog } from './witness-fixtures.js';

const tmp = tempDir('aer1-dev-witness-');
afterAll(() => tmp.remove());

let log: TestLog;
let witness: Awaited<ReturnType<typeof startWitness>>;
const NOW = 1_800_000_000;

async function post(body: Buffer | string, url = witness.url): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${url}/add-checkpoint`, { method: 'POST', body, signal: AbortSignal.timeout(5000) });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}
const req = (old: number, proof: Uint8Array[], note: string): Buffer => formatAddCheckpointRequest(old, proof, note);

beforeAll(async () => {
  log = await openLog(join(tmp.dir, 'log'));
  witness = await startWitness(join(tmp.dir, 'w1'), [log.signer.verifierKey], { clock: () => NOW });
});
afterAll(async () => witness.close());

describe('add-checkpoint on the dev witness', () => {
  it('cosigns a first checkpoint from old size 0 (200, one cosignature/v1 line that verifies under its vkey)', async () => {
    const note = await log.grow(10);
    const r = await post(req(0, [], note));
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^\u2014 witness\.test\/w [A-Za-z0-9+/=]+\n$/);
    const report = checkCosignatures(attachCosignatures(note, [r.text]), [parseWitnessKey(witness.verifierKey)], 1, { now: NOW });
    expect(report.witnesses[0]).toMatchObject({ status: 'verified', time: NOW });
  });

  it('answers 409 text/x.tlog.size "<size>\\n" when the old size is not what it last cosigned', async () => {
    const note = await log.grow(5);
    const r = await post(req(0, [], note));
    expect(r).toEqual({ status: 409, type: 'text/x.tlog.size', text: '10\n' });
    const r2 = await post(req(3, log.writer.consistencyProof(3, 15), note));
    expect(r2).toMatchObject({ status: 409, text: '10\n' });
  });

  it('cosigns from the size it knows with a good proof, and then knows the new size', async () => {
    const note = log.writer.checkpointed.note;
    expect((await post(req(10, log.writer.consistencyProof(10, 15), note))).status).toBe(200);
    expect((await post(req(10, log.writer.consistencyProof(10, 15), note))).text).toBe('15\n');
    // the same size again, same root, empty proof: cosigned again
    expect((await post(req(15, [], note))).status).toBe(200);
  });

  it('422: a proof that does not verify, a proof with old size 0 (when it knows 0), a non-empty proof for equal sizes', async () => {
    const note = await log.grow(17);
    const proof = log.writer.consistencyProof(15, 32);
    const bent = proof.map((h, i) => (i === 0 ? Buffer.from(h.map((b) => b ^ 1)) : h));
    expect((await post(req(15, bent, note))).status).toBe(422);
    expect((await post(req(15, proof.slice(1), note))).status).toBe(422);
    expect((await post(req(15, log.writer.consistencyProof(14, 32), note))).status).toBe(422);
    const fresh = await startWitness(join(tmp.dir, 'w-fresh'), [log.signer.verifierKey]);
    try {
      expect((await post(req(0, [Buffer.alloc(32)], note), fresh.url)).status).toBe(422);
    } finally {
      await fresh.close();
    }
    expect((await post(req(15, proof, note))).status).toBe(200);
    expect((await post(req(32, [Buffer.alloc(32)], note))).status).toBe(422);
  });

  it('422 on a fork: the same size with another root, signed by the log\'s own key', async () => {
    const forkDir = tempDir('aer1-fork-');
    try {
      const fork = await openLog(forkDir.dir, log.signer);
      const forked = await fork.grow(32, 'other');
      expect(noteText(forked)).not.toBe(noteText(log.writer.checkpointed.note));
      const r = await post(req(32, [], forked));
      expect(r.status).toBe(422);
      expect(r.text).toMatch(/another root hash \(a fork\)/);
      // and from the size before, a proof of the fork's own tree does not reach the cosigned root
      const forked40 = await fork.grow(8, 'other');
      expect((await post(req(32, fork.writer.consistencyProof(32, 40), forked40))).status).toBe(422);
    } finally {
      forkDir.remove();
    }
  });

  it('a smaller checkpoint than it cosigned: 409 naming its size from an old size it does not hold, 400 when old > size', async () => {
    const small = await (async () => {
      const d = tempDir('aer1-small-');
      try {
        return await (await openLog(d.dir, log.signer)).grow(20);
      } finally {
        d.remove();
      }
    })();
    expect(await post(req(0, [], small))).toMatchObject({ status: 409, text: '32\n' });
    expect((await post(req(32, [], small))).status).toBe(400);
  });

  it('404 for an origin it does not know; 403 for a checkpoint not signed by a trusted key, or with a bad signature by one', async () => {
    const stranger = generateSignerKey('other.test/log').signer;
    const foreign = signNote('other.test/log\n1\n' + Buffer.alloc(32).toString('base64') + '\n', [stranger]);
    expect((await post(req(0, [], foreign))).status).toBe(404);
    const impostor = generateSignerKey(ORIGIN).signer;
    const text = noteText(log.writer.checkpointed.note);
    expect((await post(req(32, [], signNote(text, [impostor])))).status).toBe(403);
    const good = log.writer.checkpointed.note;
    const sigAt = good.lastIndexOf(' ') + 5;
    const flipped = good.slice(0, sigAt) + (good[sigAt] === 'A' ? 'B' : 'A') + good.slice(sigAt + 1);
    expect((await post(req(32, [], flipped))).status).toBe(403);
    // a trusted signature beside an unknown one: the unknown is ignored
    expect((await post(req(32, [], signNote(text, [impostor, log.signer])))).status).toBe(200);
  });

  it('400 for malformed requests, each named', async () => {
    const note = log.writer.checkpointed.note;
    const cases: [string, string | Buffer][] = [
      ['no blank line', `old 32\n${note.replace('\n\n', '\n')}`.replace(/\n\n/g, '\n')],
      ['not "old"', `new 32\n\n${note}`],
      ['leading zero', `old 032\n\n${note}`],
      ['negative', `old -1\n\n${note}`],
      ['proof not base64', `old 32\n!!!!\n\n${note}`],
      ['proof of 31 bytes', `old 32\n${Buffer.alloc(31).toString('base64')}\n\n${note}`],
      ['64 proof lines', `old 32\n${`${Buffer.alloc(32).toString('base64')}\n`.repeat(64)}\n${note}`],
      ['unsigned checkpoint', `old 32\n\n${noteText(note)}`],
      ['bad checkpoint size', `old 0\n\n${note.replace('\n32\n', '\n032\n')}`],
    ];
    for (const [what, body] of cases) expect((await post(body)).status, what).toBe(400);
    expect((await post(Buffer.alloc(200_000, 0x61))).status).toBe(413);
    const get = await fetch(`${witness.url}/add-checkpoint`, { signal: AbortSignal.timeout(5000) });
    expect(get.status).toBe(405);
  });

  it('serves the latest cosigned checkpoint at /<sha256(origin) hex>/checkpoint, with the log\'s signature and its own', async () => {
    const res = await fetch(`${witness.url}/${originHash(ORIGIN)}/checkpoint`, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(noteText(body)).toBe(noteText(log.writer.checkpointed.note));
    // the log's signature it verified and its own cosignature; the impostor's line sent beside them is not kept
    expect(body.slice(body.lastIndexOf('\n\n') + 2).split('\n').filter(Boolean).map((l) => l.split(' ')[1])).toEqual([ORIGIN, 'witness.test/w']);
    expect(body.startsWith(log.writer.checkpointed.note)).toBe(true);
    expect(checkCosignatures(body, [parseWitnessKey(witness.verifierKey)], 1, { now: NOW }).ok).toBe(true);
    expect((await fetch(`${witness.url}/${originHash('nobody')}/checkpoint`, { signal: AbortSignal.timeout(5000) })).status).toBe(404);
  });
});

describe('state', () => {
  it('survives a restart: one JSON file per origin, and the restarted witness still answers 409 with the size', async () => {
    const dir = join(tmp.dir, 'w-restart');
    const l = await openLog(join(tmp.dir, 'log-restart'));
    const first = await startWitness(dir, [l.signer.verifierKey]);
    const note = await l.grow(7);
    expect((await post(req(0, [], note), first.url)).status).toBe(200);
    await first.close();
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toEqual([`${originHash(ORIGIN)}.json`]);
    const again = await startWitness(dir, [l.signer.verifierKey], { key: first.key });
    try {
      expect(await post(req(0, [], await l.grow(1)), again.url)).toMatchObject({ status: 409, text: '7\n' });
    } finally {
      await again.close();
    }
  });

  it('two requests racing on one old size: exactly one is cosigned, the other gets 409 with the winner\'s size', async () => {
    const l = await openLog(join(tmp.dir, 'log-race'));
    const w = await startWitness(join(tmp.dir, 'w-race'), [l.signer.verifierKey]);
    try {
      const n4 = await l.grow(4);
      expect((await post(req(0, [], n4), w.url)).status).toBe(200);
      const n9 = await l.grow(5);
      const p9 = l.writer.consistencyProof(4, 9);
      const n12 = await l.grow(3);
      const p12 = l.writer.consistencyProof(4, 12);
      const answers = await Promise.all([post(req(4, p9, n9), w.url), post(req(4, p12, n12), w.url)]);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 409]);
      const lost = answers.find((a) => a.status === 409)!;
      const won = answers.findIndex((a) => a.status === 200);
      expect(lost.text).toBe(won === 0 ? '9\n' : '12\n');
    } finally {
      await w.close();
    }
  });
});

describe('damaged state', () => {
  it('a state file that is not JSON is a 500 naming the file, never a cosignature over unknown state', async () => {
    const dir = join(tmp.dir, 'w-damaged');
    const l = await openLog(join(tmp.dir, 'log-damaged'));
    const w = await startWitness(dir, [l.signer.verifierKey]);
    try {
      writeFileSync(join(dir, `${originHash(ORIGIN)}.json`), '{"origin": ');
      const r = await post(req(0, [], await l.grow(1)), w.url);
      expect(r.status).toBe(500);
      expect(r.text).toMatch(/is not JSON: the witness state is damaged/);
    } finally {
      await w.close();
    }
  });
});
