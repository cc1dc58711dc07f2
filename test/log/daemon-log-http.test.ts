/**
 * The anchor log as a user of a running daemon sees it (log.enabled): the tlog-tiles read
 * API under /v1/log/ with the spec's content types and caching, `log verify` reading it over
 * HTTP, and each subject's proof carrying `log` once a checkpoint covers it: its entry
 * rebuilt from the proof's own envelope digest, its path leading to the signed root.
 * Real Redis, a dev relay and a dev calendar; every answer checked against openapi.json.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/adapters/log/log-check.js';
import { logSource } from '../../src/adapters/log/log-source.js';
import { openCheckpoint } from '../../src/core/log/checkpoint.js';
import { encodeEntry } from '../../src/core/log/entry.js';
import { parseVerifierKey } from '../../src/core/log/note.js';
import { verifyInclusion } from '../../src/core/log/proof.js';
import { leafHash } from '../../src/core/log/rfc6962.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { receiptFields, tempDir, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';

let s: Stack;
let dir: string;
beforeAll(async () => {
  dir = tempDir('aer1-log-http');
  s = await startStack({ overrides: { log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/aer1', checkpointIntervalMs: 100 } } });
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /v1/log/… and anchor_proof.log', () => {
  it('serves the checkpoint, tiles, bundles and verifier key; log verify passes over HTTP; every proof carries its log inclusion', async () => {
    const subjects = [receiptFields(), receiptFields(), receiptFields()];
    expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    const vkeyRes = await s.get('/v1/log/vkey');
    expect(vkeyRes.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const vkeyText = (await vkeyRes.text()).trim();
    const vkey = parseVerifierKey(vkeyText);
    expect(vkey.name).toBe('example.test/aer1');

    const note = await waitFor('a checkpoint of the 3 subjects', async () => {
      const res = await s.get('/v1/log/checkpoint');
      const text = await res.text();
      return res.status === 200 && text.split('\n')[1] === '3' ? { text, res } : null;
    }, 15_000);
    expect(note.res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(note.res.headers.get('cache-control')).toBe('no-cache');
    const opened = openCheckpoint(note.text, [vkey]);
    expect(opened.ok).toBe(true);

    const tile = await s.get('/v1/log/tile/0/000.p/3');
    expect(tile.status).toBe(200);
    expect(tile.headers.get('content-type')).toBe('application/octet-stream');
    expect(tile.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await tile.arrayBuffer()).byteLength).toBe(96);
    const bundle = await s.get('/v1/log/tile/entries/000.p/3');
    expect(bundle.status).toBe(200);
    expect(Buffer.from(await bundle.arrayBuffer()).toString('latin1')).toContain(subjects[0]!.receipt_uuid);
    // the full tile does not exist yet, a width past the checkpoint is not covered, a bad spelling is no tile
    for (const path of ['/v1/log/tile/0/000', '/v1/log/tile/0/000.p/4', '/v1/log/tile/0/0', '/v1/log/tile/entries/x000/000']) {
      const res = await s.get(path);
      expect(res.status, path).toBe(404);
      await res.body?.cancel();
    }

    const report = await verifyLog(logSource(`${s.http.url}/v1/log`), { trusted: [vkey] });
    expect(report.verdict, JSON.stringify(report.checks)).toBe('PASS');

    for (const subject of subjects) {
      const proof = (await (await s.get(`/v1/anchors/${subject.receipt_uuid}/proof`)).json()) as AnchorProof;
      expect(proof.log, subject.receipt_uuid).toBeDefined();
      const log = proof.log!;
      expect(log.origin).toBe('example.test/aer1');
      const cp = openCheckpoint(log.checkpoint, [vkey]);
      expect(cp.ok).toBe(true);
      const entry = encodeEntry({ digest: Buffer.from(proof.digest, 'hex'), kind: 'receipt', key: subject.receipt_uuid });
      expect(verifyInclusion(leafHash(entry), log.index, cp.checkpoint.size, log.path.map((h) => Buffer.from(h, 'hex')), cp.checkpoint.root)).toBe(true);
    }
  });
});

describe('with redis.shards = 2', () => {
  let k: Stack;
  let kdir: string;
  beforeAll(async () => {
    kdir = tempDir('aer1-log-http-k');
    k = await startStack({ overrides: { redis: { shards: 2 }, log: { enabled: true, dir: join(kdir, 'log'), keyFile: join(kdir, 'log.key'), origin: 'example.test/aer1', checkpointIntervalMs: 100 } } });
  });
  afterAll(async () => {
    await k?.close();
    rmSync(kdir, { recursive: true, force: true });
  });

  it('one log per shard under /v1/log/<shard>/, origin <origin>/<shard>, folder <dir>/<shard>; each proof carries its shard\'s log', async () => {
    const subjects = Array.from({ length: 8 }, () => receiptFields());
    expect((await k.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    const vkey = parseVerifierKey((await (await k.get('/v1/log/0/vkey')).text()).trim());
    const sizes = await waitFor('both shards\' checkpoints covering the 8 subjects', async () => {
      const got = await Promise.all([0, 1].map(async (i) => {
        const res = await k.get(`/v1/log/${i}/checkpoint`);
        const text = await res.text();
        if (res.status !== 200) return -1;
        const opened = openCheckpoint(text, [vkey]);
        expect(opened.ok && opened.checkpoint.origin).toBe(`example.test/aer1/${i}`);
        return opened.checkpoint.size;
      }));
      return got[0]! + got[1]! === 8 ? got : null;
    }, 15_000);
    expect(sizes.every((n) => n > 0)).toBe(true);
    const unsharded = await k.get('/v1/log/checkpoint');
    expect(unsharded.status).toBe(404);
    await unsharded.body?.cancel();
    for (const i of [0, 1]) {
      const report = await verifyLog(logSource(join(kdir, 'log', String(i))), { trusted: [vkey] });
      expect(report.verdict).toBe('PASS');
    }
    for (const subject of subjects) {
      const proof = (await (await k.get(`/v1/anchors/${subject.receipt_uuid}/proof`)).json()) as AnchorProof;
      const cp = openCheckpoint(proof.log!.checkpoint, [vkey]);
      expect(cp.ok && cp.checkpoint.origin).toBe(proof.log!.origin);
      const entry = encodeEntry({ digest: Buffer.from(proof.digest, 'hex'), kind: 'receipt', key: subject.receipt_uuid });
      expect(verifyInclusion(leafHash(entry), proof.log!.index, cp.checkpoint.size, proof.log!.path.map((h) => Buffer.from(h, 'hex')), cp.checkpoint.root)).toBe(true);
    }
  });
});
