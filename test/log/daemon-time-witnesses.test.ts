/**
 * The anchor log's time witnesses in a running daemon (log.tsaUrls, log.witnesses): each
 * checkpoint gets a token from our dev TSA and from a TSA that is not ours (Debian's
 * `openssl ts -reply` behind a loopback wrapper, its own CA), and cosignatures from two dev
 * witnesses; a third witness that saw a fork of the log refuses, and the daemon reports it
 * (log line, metric, health) without sending that checkpoint again. The stored tokens pass
 * `openssl ts -verify`; forged uses fail our checker; the cosignatures in the proofs pass
 * Python's `cryptography` (written apart from ours).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLogKeyFile, loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import { WitnessClient } from '../../src/adapters/witness/witness-client.js';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { parseNote } from '../../src/core/log/note.js';
import { checkCheckpointTimestamps, NO_TSA_TRUST_ANCHORS, parseTsaTrustAnchors } from '../../src/core/tsa/index.js';
import type { AnchorProof } from '../../src/core/proof/format.js';
import { startDevTsa, type DevTsa } from '../../src/dev/tsa/index.js';
import { receiptFields, tempDir, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from '../http/fixture.js';
import { opensslVerifyToken, startOpensslTsa, type OpensslTsa } from '../tsa/openssl-tsa-wrapper.js';
import { startWitness } from '../witness/witness-fixtures.js';
import { run as verifyAnchorCli } from '../../src/cli/commands/verify-anchor.js';

async function verifyCli(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await verifyAnchorCli(args, { stdout: (t) => (out += t), stderr: (t) => (out += t) });
  return { code, out };
}

const ORIGIN = 'example.test/aer1/0';
const PY = join(import.meta.dirname, '..', 'witness', 'py-checker', 'cosignature_v1.py');
interface PyCheck { name: string; vkey_ok: boolean; lines: number; verified: boolean; times: number[] }

let dir: string;
let s: Stack;
let devTsa: DevTsa;
let foreignTsa: OpensslTsa;
let w1: Awaited<ReturnType<typeof startWitness>>;
let w2: Awaited<ReturnType<typeof startWitness>>;
let forked: Awaited<ReturnType<typeof startWitness>>;
let proofs: AnchorProof[];

beforeAll(async () => {
  const probe = spawnSync('/usr/bin/python3', ['-c', 'import cryptography'], { encoding: 'utf8' });
  if (probe.status !== 0) throw new Error('python3-cryptography is not installed (apt-get install python3-cryptography; .ci/run installs it)');
  dir = tempDir('aer1-time-witnesses');
  const keyFile = join(dir, 'log.key');
  const logKey = writeLogKeyFile(keyFile, ORIGIN);
  devTsa = await startDevTsa({ outDir: join(dir, 'dev-tsa') });
  foreignTsa = await startOpensslTsa(tempDir('aer1-openssl-tsa'));
  w1 = await startWitness(join(dir, 'w1'), [logKey.verifierKey], { name: 'witness.test/one' });
  w2 = await startWitness(join(dir, 'w2'), [logKey.verifierKey], { name: 'witness.test/two' });
  forked = await startWitness(join(dir, 'w3'), [logKey.verifierKey], { name: 'witness.test/forked' });
  // the third witness first sees another tree of this log, signed by its key: a fork
  const fork = signCheckpoint({ origin: ORIGIN, size: 1, root: randomBytes(32), extensions: [] }, loadLogKeyFile(keyFile));
  await new WitnessClient(forked.url, forked.verifierKey).addCheckpoint(fork, () => []);
  s = await startStack({
    overrides: {
      log: {
        enabled: true, dir: join(dir, 'log'), keyFile, origin: ORIGIN, checkpointIntervalMs: 100,
        tsaUrls: [devTsa.url, foreignTsa.url('v2')],
        witnesses: [w1, w2, forked].map((w) => ({ url: w.url, key: w.verifierKey })),
        witnessQuorum: 2,
        timeWitnessIntervalMs: 100,
      },
    },
  });
  const subjects = [receiptFields(), receiptFields(), receiptFields()];
  expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
  const keys = subjects.map((x) => x.receipt_uuid);
  proofs = await waitFor('proofs with two tokens and two cosignatures', async () => {
    const out: AnchorProof[] = [];
    for (const key of keys) {
      const res = await s.get(`/v1/anchors/${encodeURIComponent(key)}/proof`);
      if (res.status !== 200) return null;
      const p = (await res.json()) as AnchorProof;
      if ((p.log?.timestamps?.length ?? 0) < 2 || parseNote(p.log!.checkpoint).signatures.length < 3) return null;
      out.push(p);
    }
    return out;
  }, 30_000);
}, 60_000);

afterAll(async () => {
  await s?.close();
  await Promise.all([devTsa?.close(), foreignTsa?.close(), w1?.close(), w2?.close(), forked?.close()]);
  if (foreignTsa) rmSync(foreignTsa.dir, { recursive: true, force: true });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const body = (note: string): string => parseNote(note).text;

describe('TSA tokens over each checkpoint', () => {
  it('are kept beside the checkpoint and carried by every proof under it, one per TSA', () => {
    const p = proofs[0]!;
    const size = Number(body(p.log!.checkpoint).split('\n')[1]);
    const kept = JSON.parse(readFileSync(join(dir, 'log', 'checkpoints', `${size}.tsr.json`), 'utf8')) as Array<{ url: string; token: string }>;
    expect(kept.map((t) => t.url).sort()).toEqual([devTsa.url, foreignTsa.url('v2')].sort());
    expect(p.log!.timestamps).toEqual(kept);
  });

  it('pass openssl ts -verify against the note body and each TSA\'s own CA', async () => {
    const p = proofs[0]!;
    const data = Buffer.from(body(p.log!.checkpoint), 'utf8');
    for (const [i, t] of p.log!.timestamps!.entries()) {
      const ca = t.url === devTsa.url ? devTsa.caFile! : foreignTsa.caFile;
      const r = await opensslVerifyToken(dir, Buffer.from(t.token, 'base64'), data, ca, `stored${i}`);
      expect(r.ok, r.output).toBe(true);
      // and not against the other TSA's CA
      const other = t.url === devTsa.url ? foreignTsa.caFile : devTsa.caFile!;
      expect((await opensslVerifyToken(dir, Buffer.from(t.token, 'base64'), data, other, `other${i}`)).ok).toBe(false);
    }
  });

  it('pass our checker with both CAs given; untrusted with none; FAIL for other bytes', async () => {
    const p = proofs[0]!;
    const anchors = parseTsaTrustAnchors(readFileSync(devTsa.caFile!, 'utf8') + readFileSync(foreignTsa.caFile, 'utf8'));
    const ok = await checkCheckpointTimestamps(body(p.log!.checkpoint), p.log!.timestamps, anchors);
    expect(ok.map((r) => r.status)).toEqual(['PASS', 'PASS']);
    const none = await checkCheckpointTimestamps(body(p.log!.checkpoint), p.log!.timestamps, NO_TSA_TRUST_ANCHORS);
    expect(none.map((r) => r.status)).toEqual(['untrusted', 'untrusted']);
    const other = body(p.log!.checkpoint).replace(/\n\d+\n/, '\n999\n');
    const forgedImprint = await checkCheckpointTimestamps(other, p.log!.timestamps, anchors);
    expect(forgedImprint.map((r) => r.status)).toEqual(['FAIL', 'FAIL']);
    expect(forgedImprint[0]!.detail).toMatch(/imprint|something else/);
  });
});

describe('witness cosignatures on each checkpoint', () => {
  it('the proofs\' checkpoint carries both cosignatures, which Python\'s cryptography verifies', () => {
    const r = spawnSync('/usr/bin/python3', [PY], { input: JSON.stringify({ check: proofs.map((p) => ({ note: p.log!.checkpoint, vkeys: [w1.verifierKey, w2.verifierKey, forked.verifierKey] })) }), encoding: 'utf8', timeout: 20_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { check: PyCheck[][] };
    for (const perWitness of out.check) {
      expect(perWitness.map((c) => [c.name, c.vkey_ok, c.lines, c.verified])).toEqual([
        ['witness.test/one', true, 1, true],
        ['witness.test/two', true, 1, true],
        ['witness.test/forked', true, 0, false],
      ]);
    }
  });

  it('/v1/log/checkpoint serves the cosigned note while it is the latest', async () => {
    const res = await s.get('/v1/log/checkpoint');
    const live = await res.text();
    expect(live).toBe(proofs.at(-1)!.log!.checkpoint);
  });

  it('the witness that saw a fork refuses; the daemon reports it in health and metrics, and does not send that checkpoint again', async () => {
    expect(forked.answered.get(422)).toBe(1);
    const stats = (await (await s.get('/v1/stats')).json()) as { health: Array<{ kind: string; url: string; lastSuccessAt: string | null; consecutiveFailures: number }> };
    const h = stats.health.find((x) => x.kind === 'witness' && x.url.startsWith(forked.url))!;
    expect(h).toMatchObject({ lastSuccessAt: null, consecutiveFailures: 1 });
    expect(stats.health.filter((x) => x.kind === 'tsa').every((x) => x.lastSuccessAt !== null)).toBe(true);
    const metrics = await (await s.get('/metrics', { auth: true })).text();
    expect(metrics).toMatch(new RegExp(`aer1_log_witness_requests_total\\{url="${forked.url.replace(/[/.]/g, '\\$&')}/?",result="witness_inconsistent"\\} 1`));
    expect(metrics).toMatch(/aer1_log_tsa_requests_total\{url="[^"]+",result="token"\} [1-9]/);
    // the checkpoint is done (its cursor past it) and was not sent to the forked witness again
    const size = Number(body(proofs[0]!.log!.checkpoint).split('\n')[1]);
    await waitFor('the cursor past the checkpoint', () => Number(readFileSync(join(dir, 'log', 'checkpoints', 'witnessed'), 'utf8')) >= size);
    expect(forked.answered.get(422)).toBe(1);
  });
});

describe('aer1-verify-anchor on a daemon-made proof', () => {
  it('reports each TSA\'s and each witness\'s time, with who says so, when the caller trusts them', async () => {
    const file = join(dir, 'proof.json');
    writeFileSync(file, JSON.stringify(proofs[0]));
    const bundle = join(dir, 'cas.pem');
    writeFileSync(bundle, readFileSync(devTsa.caFile!, 'utf8') + readFileSync(foreignTsa.caFile, 'utf8'));
    const json = await verifyCli([file, '--json', '--tsa-ca', bundle, '--witness', w1.verifierKey, '--witness', w2.verifierKey, '--require-confirmed']);
    const report = JSON.parse(json.out) as { verdict: string; checks: Array<{ name: string; status: string; detail: string }>; times: Array<{ kind: string; at: string; by: string; trusted: boolean; statement: string }> };
    expect(report.verdict, json.out).toBe('PASS');
    expect(json.code).toBe(0);
    expect(report.checks.find((c) => c.name === 'tsa')?.status).toBe('PASS');
    expect(report.checks.find((c) => c.name === 'cosignatures')?.status).toBe('PASS');
    expect(report.times).toHaveLength(4);
    expect(report.times.map((t) => [t.kind, t.by, t.trusted])).toEqual(expect.arrayContaining([
      ['tsa', expect.stringContaining('aer1-anchor dev TSA'), true],
      ['tsa', expect.stringContaining('openssl test TSA'), true],
      ['witness', 'witness.test/one', true],
      ['witness', 'witness.test/two', true],
    ]));
    expect(report.times[0]!.statement).toMatch(/^the checkpoint holding d \(example\.test\/aer1\/0, size \d+\) existed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: TSA genTime, signed by /);
    const text = await verifyCli([file, '--tsa-ca', bundle, '--witness', w1.verifierKey, '--witness', w2.verifierKey]);
    expect(text.out).toMatch(/TIME {4}tsa {5}the checkpoint holding d .* existed at .*signed by .*aer1-anchor dev TSA/);
    expect(text.out).toMatch(/TIME {4}witness {1}the checkpoint holding d .* existed at .*cosigned by witness witness\.test\/two/);
  });

  it('without --tsa-ca or --witness: "TSA not trusted", cosignatures not checked, and not confirmed by them', async () => {
    const file = join(dir, 'proof.json');
    const r = await verifyCli([file, '--json', '--require-confirmed']);
    const report = JSON.parse(r.out) as { verdict: string; checks: Array<{ name: string; status: string; detail: string }>; times: Array<{ trusted: boolean }> };
    expect(report.checks.find((c) => c.name === 'tsa')).toMatchObject({ status: 'SKIP', detail: expect.stringContaining('TSA not trusted') });
    expect(report.checks.find((c) => c.name === 'cosignatures')).toMatchObject({ status: 'SKIP', detail: expect.stringContaining('--witness') });
    expect(report.times.every((t) => !t.trusted)).toBe(true);
    expect(report.verdict).toBe('FAIL');
  });

  it('a CA the caller did not give, or a token moved onto the proof of another checkpoint, is refused', async () => {
    const onlyDev = join(dir, 'dev-only.pem');
    writeFileSync(onlyDev, readFileSync(devTsa.caFile!, 'utf8'));
    const r = await verifyCli([join(dir, 'proof.json'), '--json', '--tsa-ca', onlyDev]);
    const report = JSON.parse(r.out) as { checks: Array<{ name: string; status: string; detail: string }>; times: Array<{ by: string; trusted: boolean }> };
    // one token chains to the CA given, the other's CA was not given: no PASS for it
    expect(report.times.filter((t) => t.trusted).map((t) => t.by)).toEqual([expect.stringContaining('aer1-anchor dev TSA')]);
    const forged = structuredClone(proofs[0]!);
    forged.log!.timestamps = forged.log!.timestamps!.map((t) => ({ ...t, token: Buffer.from(Buffer.from(t.token, 'base64').map((b, i) => (i === 60 ? b ^ 1 : b))).toString('base64') }));
    writeFileSync(join(dir, 'forged.json'), JSON.stringify(forged));
    const bad = await verifyCli([join(dir, 'forged.json'), '--json', '--tsa-ca', onlyDev]);
    expect((JSON.parse(bad.out) as { verdict: string }).verdict).toBe('FAIL');
  });
});

describe('the next checkpoint', () => {
  it('a later checkpoint gets its own tokens; a token moved to another checkpoint FAILs', async () => {
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', { subjects: [subject] }, { auth: true })).status).toBe(202);
    const later = await waitFor('the later subject\'s proof with its tokens', async () => {
      const res = await s.get(`/v1/anchors/${subject.receipt_uuid}/proof`);
      const p = res.status === 200 ? ((await res.json()) as AnchorProof) : null;
      return (p?.log?.timestamps?.length ?? 0) === 2 ? p : null;
    }, 30_000);
    const first = proofs[0]!.log!;
    expect(body(later.log!.checkpoint)).not.toBe(body(first.checkpoint));
    const anchors = parseTsaTrustAnchors(readFileSync(devTsa.caFile!, 'utf8') + readFileSync(foreignTsa.caFile, 'utf8'));
    expect((await checkCheckpointTimestamps(body(later.log!.checkpoint), later.log!.timestamps, anchors)).map((r) => r.status)).toEqual(['PASS', 'PASS']);
    const moved = await checkCheckpointTimestamps(body(later.log!.checkpoint), first.timestamps, anchors);
    expect(moved.map((r) => r.status)).toEqual(['FAIL', 'FAIL']);
    // the forked witness was asked once per checkpoint, never twice for one
    await waitFor('the live checkpoint cosigned', async () => parseNote(await (await s.get('/v1/log/checkpoint')).text()).signatures.length === 3);
    expect(forked.answered.get(422)).toBe(2);
  });
});
