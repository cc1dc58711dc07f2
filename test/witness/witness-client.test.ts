/**
 * The tlog-witness client against the dev witness on loopback (and, for faults the dev
 * witness never makes, small loopback servers that answer badly): 200 with verified
 * lines, a 409 answered by resending from the witness's size with a new proof, and the
 * witness's verdicts (404, 403, 422 fork, a size ahead of ours) as typed errors sent once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { WitnessClient } from '../../src/adapters/witness/witness-client.js';
import { collectCosignatures } from '../../src/adapters/witness/collect-cosignatures.js';
import { WitnessError } from '../../src/adapters/witness/witness-error.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import { checkCosignatures } from '../../src/core/witness/cosignature-policy.js';
import { cosign, generateCosignerKey, parseWitnessKey } from '../../src/core/witness/cosignature.js';
import { noteText, openLog, startWitness, tempDir } from './witness-fixtures.js';

const tmp = tempDir('aer1-witness-client-');
const servers: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  tmp.remove();
});

async function rejection(p: Promise<unknown>): Promise<WitnessError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WitnessError) return err;
    throw err;
  }
  throw new Error('resolved');
}

/** A loopback server answering every request with `handler`; counts requests. */
async function fakeWitness(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let n = 0;
  const server: Server = createServer((req, res) => {
    n++;
    handler!(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const s = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
  servers.push(s);
  return s;
}

describe('WitnessClient.addCheckpoint', () => {
  it('gets a cosignature that verifies, then resends from the size the witness names after a 409 (one extra request)', async () => {
    const log = await openLog(join(tmp.dir, 'log-a'));
    const w = await startWitness(join(tmp.dir, 'w-a'), [log.signer.verifierKey]);
    servers.push(w);
    const client = new WitnessClient(w.url, w.verifierKey);
    const asked: [number, number][] = [];
    const proofFor = (o: number, n: number): Buffer[] => {
      asked.push([o, n]);
      return log.writer.consistencyProof(o, n);
    };
    const first = await client.addCheckpoint(await log.grow(3), proofFor);
    expect(first).toMatchObject({ oldSize: 0, attempts: 1 });
    const note = await log.grow(300);
    // the caller does not know the witness's size: old 0, a 409 "3", then old 3 with a proof 3 → 303
    const second = await client.addCheckpoint(note, proofFor, 0);
    expect(second).toMatchObject({ oldSize: 3, attempts: 2 });
    expect(asked).toEqual([[3, 303]]);
    expect(w.answered.get(409)).toBe(1);
    const report = checkCosignatures(note + second.lines.join(''), [parseWitnessKey(w.verifierKey)], 1);
    expect(report.ok).toBe(true);
    expect(report.witnesses[0]!.time).toBe(second.time);
  });

  it('a fork (same size, another root, signed by the log\'s key) is witness_inconsistent, sent once and not retried', async () => {
    const log = await openLog(join(tmp.dir, 'log-b'));
    const w = await startWitness(join(tmp.dir, 'w-b'), [log.signer.verifierKey]);
    servers.push(w);
    const client = new WitnessClient(w.url, w.verifierKey);
    await client.addCheckpoint(await log.grow(8), (o, n) => log.writer.consistencyProof(o, n));
    const fork = await openLog(join(tmp.dir, 'log-b-fork'), log.signer);
    const forked = await fork.grow(8, 'fork');
    const err = await rejection(client.addCheckpoint(forked, (o, n) => fork.writer.consistencyProof(o, n), 8));
    expect(err).toMatchObject({ code: 'witness_inconsistent', status: 422, retryable: false });
    expect(err.message).toMatch(/a fork/);
    // a fork that grew past the witness's size: old 8, its own proof 8 → 12 does not reach the cosigned root
    const grown = await fork.grow(4, 'fork');
    expect(await rejection(client.addCheckpoint(grown, (o, n) => fork.writer.consistencyProof(o, n), 8))).toMatchObject({ code: 'witness_inconsistent' });
    expect(w.answered.get(422)).toBe(2);
    expect(w.answered.get(200)).toBe(1);
  });

  it('a checkpoint smaller than the witness cosigned is witness_ahead with its size, after one request', async () => {
    const log = await openLog(join(tmp.dir, 'log-c'));
    const w = await startWitness(join(tmp.dir, 'w-c'), [log.signer.verifierKey]);
    servers.push(w);
    const client = new WitnessClient(w.url, w.verifierKey);
    await client.addCheckpoint(await log.grow(20), () => []);
    const old = await openLog(join(tmp.dir, 'log-c-old'), log.signer);
    const err = await rejection(client.addCheckpoint(await old.grow(5), (o, n) => old.writer.consistencyProof(o, n)));
    expect(err).toMatchObject({ code: 'witness_ahead', knownSize: 20, retryable: false });
    expect(w.answered.get(409)).toBe(1);
  });

  it('404 unknown origin and 403 untrusted signer are typed, sent once', async () => {
    const log = await openLog(join(tmp.dir, 'log-d'));
    const w = await startWitness(join(tmp.dir, 'w-d'), [generateSignerKey('example.test/aer1/0').signer.verifierKey]);
    servers.push(w);
    const client = new WitnessClient(w.url, w.verifierKey);
    expect(await rejection(client.addCheckpoint(await log.grow(1), () => []))).toMatchObject({ code: 'witness_forbidden', status: 403, retryable: false });
    const foreign = await (await LogWriter.open({ dir: join(tmp.dir, 'log-f'), origin: 'elsewhere.test/log', signer: generateSignerKey('elsewhere.test/log').signer })).checkpoint();
    expect(await rejection(client.addCheckpoint(foreign, () => []))).toMatchObject({ code: 'witness_unknown_origin', status: 404 });
    expect([...w.answered.entries()].sort()).toEqual([[403, 1], [404, 1]]);
  });

  it('keeps only lines by the configured key; a line by that key that does not verify is witness_bad_cosignature; none is witness_bad_response', async () => {
    const log = await openLog(join(tmp.dir, 'log-g'));
    const note = await log.grow(2);
    const mine = generateCosignerKey('witness.test/mine').key;
    const stranger = generateCosignerKey('witness.test/other').key;
    const good = cosign(noteText(note), mine, 1_700_000_000n);
    const bystander = cosign(noteText(note), stranger, 1_700_000_000n);
    let answer = `${bystander}${good}`;
    const fake = await fakeWitness((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(answer);
    });
    const client = new WitnessClient(fake.url, mine.verifierKey);
    expect(await client.addCheckpoint(note, () => [])).toMatchObject({ lines: [good], time: 1_700_000_000 });
    answer = cosign('other text\n', mine, 1_700_000_000n);
    expect(await rejection(client.addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_bad_cosignature' });
    answer = bystander;
    expect(await rejection(client.addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_bad_response' });
    answer = 'OK\n';
    expect(await rejection(client.addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_bad_response' });
  });

  it('bounded: a witness that never answers is witness_timeout within the deadline; an endless answer is witness_too_large', async () => {
    const log = await openLog(join(tmp.dir, 'log-h'));
    const note = await log.grow(1);
    const key = generateCosignerKey('witness.test/slow').key.verifierKey;
    const silent = await fakeWitness(() => undefined);
    const started = Date.now();
    const err = await rejection(new WitnessClient(silent.url, key, { timeoutMs: 300 }).addCheckpoint(note, () => []));
    expect(err).toMatchObject({ code: 'witness_timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(5000);
    const flood = await fakeWitness((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 0x41);
      let sent = 0;
      const more = (): void => {
        while (sent < 400 && res.write(chunk)) sent++;
        if (sent < 400) res.once('drain', more);
        else res.end();
      };
      more();
    });
    expect(await rejection(new WitnessClient(flood.url, key).addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_too_large' });
    const refused = await rejection(new WitnessClient('http://127.0.0.1:1', key).addCheckpoint(note, () => []));
    expect(refused).toMatchObject({ code: 'witness_network', retryable: true });
  });

  it('a 409 without text/x.tlog.size, or one naming the size just sent, is witness_bad_response (no loop)', async () => {
    const log = await openLog(join(tmp.dir, 'log-i'));
    const note = await log.grow(4);
    const key = generateCosignerKey('witness.test/x').key.verifierKey;
    let type = 'text/plain';
    const fake = await fakeWitness((_req, res) => {
      res.writeHead(409, { 'Content-Type': type });
      res.end('0\n');
    });
    expect(await rejection(new WitnessClient(fake.url, key).addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_bad_response', status: 409 });
    type = 'text/x.tlog.size';
    expect(await rejection(new WitnessClient(fake.url, key).addCheckpoint(note, () => []))).toMatchObject({ code: 'witness_bad_response' });
    expect(fake.requests()).toBe(2);
    // an older witness's answer to a same-size fork: 409 naming that very size
    const older = await fakeWitness((_req, res) => {
      res.writeHead(409, { 'Content-Type': 'text/x.tlog.size' });
      res.end('4\n');
    });
    expect(await rejection(new WitnessClient(older.url, key).addCheckpoint(note, () => [], 4))).toMatchObject({ code: 'witness_inconsistent', knownSize: 4 });
    expect(older.requests()).toBe(1);
  });
});

describe('collectCosignatures', () => {
  it('records each witness\'s outcome and attaches the cosignatures that came back', async () => {
    const log = await openLog(join(tmp.dir, 'log-j'));
    const w1 = await startWitness(join(tmp.dir, 'w-j1'), [log.signer.verifierKey], { name: 'witness.test/j1' });
    const w2 = await startWitness(join(tmp.dir, 'w-j2'), [generateSignerKey('example.test/aer1/0').signer.verifierKey], { name: 'witness.test/j2' });
    servers.push(w1, w2);
    const note = await log.grow(6);
    const { note: cosigned, outcomes } = await collectCosignatures(note, [new WitnessClient(w1.url, w1.verifierKey), new WitnessClient(w2.url, w2.verifierKey)], (o, n) => log.writer.consistencyProof(o, n));
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.code))).toEqual(['ok', 'witness_forbidden']);
    const report = checkCosignatures(cosigned, [w1.verifierKey, w2.verifierKey].map((k) => parseWitnessKey(k)), 1);
    expect(report.witnesses.map((x) => x.status)).toEqual(['verified', 'missing']);
  });
});
