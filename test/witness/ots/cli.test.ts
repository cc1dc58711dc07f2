/** `aer1-anchor ots info|verify` as a user runs it (needs a build: `npx tsc -p tsconfig.json`). */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchTree } from '../../../src/core/batch/batch-tree.js';
import { bitcoinAttestation, pendingAttestation } from '../../../src/core/ots/attestations.js';
import { batchProofs } from '../../../src/core/ots/batch-proof.js';
import { serializeDetached } from '../../../src/core/ots/codec.js';
import { SHA256, append } from '../../../src/core/ots/ops.js';
import { Timestamp } from '../../../src/core/ots/timestamp.js';
import { type FakeServer, startBitcoind, startEsplora } from './bitcoin/fake-servers.js';
import { mineRegtestHeader } from './bitcoin/regtest-header.js';
import { headersFile, listVectors, otsVectorsDir, repoRoot, sharedVectorsFor } from './vector-files.js';

const BIN = path.join(repoRoot, 'bin/aer1-anchor.js');
const built = existsSync(path.join(repoRoot, 'dist/src/cli/commands/ots.js'));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, 'ots', ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const V = (name: string): string => path.join(otsVectorsDir, name);

describe('the ots CLI', () => {
  it('is built (run `npx tsc -p tsconfig.json` or `npm test`)', () => {
    expect(built, 'dist/src/cli/commands/ots.js is missing: build first').toBe(true);
  });
});

const vectorsPresent = sharedVectorsFor('aer1-anchor ots info/verify on the shared vectors and against HTTP header sources');

describe.runIf(built && vectorsPresent)('aer1-anchor ots with the shared vectors', () => {
  it('info prints the tree like `ots info`', async () => {
    const r = await cli('info', V('two-calendars.txt.ots'));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('File sha256 hash: efaa174f68e59705757460f4f7d204bd2b535cfd194d9d945418732129404ddb\nTimestamp:\nappend 839037eef449dec6dac322ca97347c45\nsha256\n -> append');
    expect(r.stdout).toContain("    verify PendingAttestation('https://bob.btc.calendar.opentimestamps.org')");
    const hello = await cli('info', V('hello-world.txt.ots'));
    expect(hello.stdout).toContain('verify BitcoinBlockHeaderAttestation(358391)\n# Bitcoin block merkle root 8a1b66ecb7cbd07d8139a7e7d7f2c41aab1f5009b8364aaf61d03ad245e47e00');
  });

  it('info --json gives the digest, the attestations and the tree', async () => {
    const r = await cli('info', V('hello-world.txt.ots'), '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { file_digest: string; attestations: unknown[]; timestamp: { ops: unknown[] } };
    expect(j.file_digest).toBe('03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340');
    expect(j.attestations).toEqual([{ kind: 'bitcoin', height: 358391, msg: '007ee445d23ad061af4a36b809501fab1ac4f2d7e7a739817dd0cbb7ec661b8a' }]);
    expect(j.timestamp.ops).toHaveLength(1);
  });

  it('verify: hello-world.txt.ots checks out at block 358391, time 1432827678 (exit 0)', async () => {
    const r = await cli('verify', V('hello-world.txt.ots'), '--headers', headersFile, '--file', V('hello-world.txt'));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Digest: matches --file');
    expect(r.stdout).toContain('Bitcoin block 358391: verified, block hash 000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319, time 1432827678');
    const j = JSON.parse((await cli('verify', V('hello-world.txt.ots'), '--headers', headersFile, '--json')).stdout) as Record<string, unknown>;
    expect(j.verdict).toBe('verified');
    expect(j.verified).toEqual({ height: 358391, block_hash: '000000000000000003e892881a8cdcdc117c06d444057c98b6f04a9ee75a2319', time: 1432827678 });
  });

  it('verify: a digest the proof does not commit to fails (exit 1)', async () => {
    const r = await cli('verify', V('hello-world.txt.ots'), '--headers', headersFile, '--digest', 'ab'.repeat(32));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Digest: does NOT match --digest');
    const other = await cli('verify', V('hello-world.txt.ots'), '--headers', headersFile, '--file', V('bad-stamp.txt'));
    expect(other.code).toBe(1);
  });

  it('verify: bad-stamp.txt.ots fails on the merkle root (exit 1)', async () => {
    const r = await cli('verify', V('bad-stamp.txt.ots'), '--headers', headersFile);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/Bitcoin block 358391: FAILED: .*merkle root 8a1b66ec/);
  });

  it('verify: incomplete.txt.ots is pending at its calendar (exit 1)', async () => {
    const r = await cli('verify', V('incomplete.txt.ots'), '--headers', headersFile);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Pending at https://alice.btc.calendar.opentimestamps.org (commitment ');
    expect(r.stdout).toContain('Result: PENDING');
    const j = JSON.parse((await cli('verify', V('incomplete.txt.ots'), '--json')).stdout) as { verdict: string; pending: Array<{ uri: string }> };
    expect(j.verdict).toBe('pending');
    expect(j.pending.map((p) => p.uri)).toEqual(['https://alice.btc.calendar.opentimestamps.org']);
  });

  it('verify and info refuse every invalid vector with the reason and offset (exit 1)', async () => {
    const { invalid } = listVectors();
    const runs = await Promise.all(invalid.flatMap((name) => [cli('verify', V(name), '--headers', headersFile), cli('info', V(name))]));
    for (const r of runs) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^aer1-anchor: .+ \(at byte \d+\)\n$/);
    }
    const j = JSON.parse((await cli('verify', V('invalid/bad-major-version.ots'), '--json')).stdout) as Record<string, unknown>;
    expect(j).toMatchObject({ verdict: 'invalid', code: 'ots_bad_version', offset: 31 });
  });

  it('usage errors and unreadable files exit 2', async () => {
    const runs = await Promise.all([
      cli('verify', V('nope.ots')),
      cli('verify', V('hello-world.txt.ots'), '--bogus'),
      cli('verify', V('hello-world.txt.ots'), '--digest', '00', '--file', V('hello-world.txt')),
      cli('verify', V('hello-world.txt.ots'), '--headers', headersFile, '--esplora', 'http://127.0.0.1:1'),
      cli('verify', V('hello-world.txt.ots'), '--network', 'testnet4'),
      cli('verify', V('hello-world.txt.ots'), '--digest', 'xyz'),
      cli('verify', V('hello-world.txt.ots'), '--file', V('missing-original')),
      cli('verify'),
      cli('frobnicate', V('hello-world.txt.ots')),
      // A Bitcoin attestation and no header source: the user has to say where headers come from.
      cli('verify', V('hello-world.txt.ots')),
    ]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/^aer1-anchor: /);
    }
    expect(runs[9]!.stderr).toContain('give --headers FILE, --esplora URL or --bitcoind URL');
  });
});

describe.runIf(built && vectorsPresent)('aer1-anchor ots verify against HTTP header sources', () => {
  const servers: FakeServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });
  const headers = (): Map<number, Buffer> =>
    new Map(Object.entries(JSON.parse(readFileSync(headersFile, 'utf8')) as Record<string, string>).map(([h, hex]) => [Number(h), Buffer.from(hex, 'hex')]));

  it('--esplora URL (with a path prefix)', async () => {
    const server = await startEsplora(headers(), '/api/v1');
    servers.push(server);
    const r = await cli('verify', V('hello-world.txt.ots'), '--esplora', server.url);
    expect(r.code, r.stderr).toBe(0);
    expect(server.requests[0]).toBe('GET /api/v1/block-height/358391');
  });

  it('--bitcoind URL with user:password', async () => {
    const server = await startBitcoind(headers(), 'alice', 's3cret');
    servers.push(server);
    const r = await cli('verify', V('hello-world.txt.ots'), '--bitcoind', server.url, '--json');
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { verified: { height: number } }).verified.height).toBe(358391);
  });
});

describe.runIf(built)('aer1-anchor ots verify on our own batch proofs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ots-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('verifies a regtest-confirmed batch proof on regtest and refuses it on mainnet', async () => {
    const ds = Array.from({ length: 3 }, (_, i) => createHash('sha256').update(`cli ${i}`).digest());
    const root = new Timestamp(new BatchTree(ds).root);
    const tip = root.addOp(append(Buffer.alloc(16, 1))).addOp(SHA256);
    tip.addAttestation(pendingAttestation('http://127.0.0.1:8080/calendar'));
    const merkleRoot = tip.addOp(SHA256);
    merkleRoot.addAttestation(bitcoinAttestation(101));
    const headersPath = path.join(dir, 'regtest-headers.json');
    writeFileSync(headersPath, JSON.stringify({ 101: mineRegtestHeader(merkleRoot.msg).toString('hex') }));
    const proofPath = path.join(dir, 'subject-2.ots');
    writeFileSync(proofPath, serializeDetached(batchProofs(ds, root)[2]!));

    const ok = await cli('verify', proofPath, '--digest', ds[2]!.toString('hex'), '--headers', headersPath, '--network', 'regtest');
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain('Bitcoin block 101: verified');
    expect(ok.stdout).toContain('Pending at http://127.0.0.1:8080/calendar');
    const mainnet = await cli('verify', proofPath, '--digest', ds[2]!.toString('hex'), '--headers', headersPath);
    expect(mainnet.code).toBe(1);
    expect(mainnet.stdout).toContain('bitcoin_target_too_easy');
    const wrong = await cli('verify', proofPath, '--digest', ds[1]!.toString('hex'), '--headers', headersPath, '--network', 'regtest');
    expect(wrong.code).toBe(1);
  });
});
