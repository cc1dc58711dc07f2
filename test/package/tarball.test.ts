/**
 * What someone who only installs the package gets: `npm pack`, then `npm install` of
 * the tarball into an empty project outside the repository. An issuer script in
 * TypeScript imports the producer helper with its types (`tsc --noEmit`), a JavaScript
 * issuer enqueues a receipt on the real Redis, a daemon from this repository anchors it
 * on a dev relay, and an auditor script verifies the exported proof with
 * `aer1-anchor/verify`. bullmq and ioredis are peer dependencies: the demo runs from the
 * installed package on the majors npm put beside it. Prints one line: tarball size, files,
 * installed packages and peer versions.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { ProofExporter } from '../../src/adapters/proof/export.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import type { DevRelay } from '../../src/dev/relay/dev-relay.js';
import { Issuer, REPO_ROOT, SHARED_REDIS_URL, startDaemon, startRelays, tempDir, testConfig, waitFor } from '../helpers/harness.js';

const run = promisify(execFile);
const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');

interface PackedFile { path: string }
interface Packed { filename: string; size: number; unpackedSize: number; entryCount: number; files: PackedFile[] }

const ISSUER_TS = `
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import * as pkg from 'aer1-anchor';
import { ANCHOR_JOB, ANCHOR_JOB_OPTIONS, AnchorStatusReader, enqueueAnchor, enqueueAnchors, parseAnchorProof, type AnchorDetail, type AnchorProof, type BulkEnqueueOutcome, type EnqueueOutcome } from 'aer1-anchor';
import { verifyAnchor, HeadersFileSource, type VerifyReport } from 'aer1-anchor/verify';

export async function issue(redis: Redis, receipt: unknown): Promise<EnqueueOutcome> {
  const reader = new AnchorStatusReader(redis, { prefix: 'aer1' });
  const queue = new Queue('aer1-anchor', { connection: redis, prefix: reader.queuePrefix });
  const outcome = await enqueueAnchor(queue, reader, receipt, { maxJobBytes: 4 * 1024 * 1024 });
  const attempts: number = ANCHOR_JOB_OPTIONS.attempts;
  const name: 'anchor' = ANCHOR_JOB;
  // @ts-expect-error the outcome is a closed set
  const wrong: EnqueueOutcome['result'] = 'sent';
  // @ts-expect-error the state store and its keys are the daemon's, not the package's
  const store = pkg.AnchorStore;
  // @ts-expect-error the reader reads only
  void reader.subjects;
  void attempts; void name; void wrong; void store;
  await queue.close();
  return outcome;
}

export async function issueMany(queue: Queue, reader: AnchorStatusReader, receipts: unknown[]): Promise<string[]> {
  const outcomes: BulkEnqueueOutcome[] = await enqueueAnchors(queue, reader, receipts, { maxJobBytes: 4 * 1024 * 1024 }, { maxSubjectsPerJob: 1000 });
  return outcomes.flatMap((o) => ('error' in o ? [o.error.message] : [o.key]));
}

export async function status(reader: AnchorStatusReader, key: string): Promise<[AnchorDetail['status'] | null, AnchorProof | null, number]> {
  const [detail, proof, stats] = await Promise.all([reader.get(key), reader.proof(key), reader.stats()]);
  return [detail?.status ?? null, proof, stats.subjects.total];
}

export async function audit(doc: unknown, proofJson: unknown): Promise<VerifyReport['verdict']> {
  const proof: AnchorProof = parseAnchorProof(proofJson);
  const report = await verifyAnchor({ value: doc, proof }, { headerSource: new HeadersFileSource('headers.json'), network: 'regtest' });
  // @ts-expect-error a check's status is PASS, FAIL or SKIP
  const bad: VerifyReport['checks'][number]['status'] = 'OK';
  void bad;
  return report.verdict;
}
`;

const ISSUER_JS = `
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { AnchorStatusReader, enqueueAnchor } from 'aer1-anchor';

const [url, prefix, file] = process.argv.slice(2);
const redis = new Redis(url, { maxRetriesPerRequest: null });
const reader = new AnchorStatusReader(redis, { prefix });
const queue = new Queue('aer1-anchor', { connection: redis, prefix: reader.queuePrefix });
try {
  const outcome = await enqueueAnchor(queue, reader, JSON.parse(readFileSync(file, 'utf8')), { maxJobBytes: 4 * 1024 * 1024 });
  process.stdout.write(JSON.stringify(outcome) + '\\n');
} finally {
  await queue.close();
  await redis.quit();
}
`;

/** Reads a subject back through the installed package: its detail, proof, a list page and the counts. */
const READER_JS = `
import { Redis } from 'ioredis';
import { AnchorStatusReader } from 'aer1-anchor';

const [url, prefix, key] = process.argv.slice(2);
const redis = new Redis(url, { maxRetriesPerRequest: null });
try {
  const reader = new AnchorStatusReader(redis, { prefix });
  const [detail, proof, page, stats] = await Promise.all([reader.get(key), reader.proof(key), reader.list({ limit: 10 }), reader.stats()]);
  process.stdout.write(JSON.stringify({ status: detail?.status, nostr: detail?.witnesses.nostr?.status, listed: page.items.map((i) => i.key), next: page.next, stats, proof }) + '\\n');
} finally {
  await redis.quit();
}
`;

const AUDITOR_JS = `
import { readFileSync } from 'node:fs';
import { verifyAnchor } from 'aer1-anchor/verify';

const [docFile, proofFile, pubkey] = process.argv.slice(2);
const read = (f) => JSON.parse(readFileSync(f, 'utf8'));
const report = await verifyAnchor({ value: read(docFile), proof: read(proofFile) }, { expectedPubkeys: [pubkey] });
process.stdout.write(JSON.stringify({ verdict: report.verdict, pending: report.pending, checks: Object.fromEntries(report.checks.map((c) => [c.name, c.status])) }) + '\\n');
`;

/** Bytes under a folder, iteratively and bounded. */
function folderBytes(root: string): number {
  let total = 0;
  const stack = [root];
  for (let i = 0; i < 1_000_000 && stack.length > 0; i++) {
    const dir = stack.pop()!;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile()) total += statSync(p).size;
    }
  }
  return total;
}

describe('the packed tarball, installed into an empty project', () => {
  const project = tempDir('aer1-consumer');
  let packed: Packed;
  let relays: DevRelay[] = [];
  let daemon: Daemon | undefined;
  let issuer: Issuer | undefined;

  beforeAll(async () => {
    expect(existsSync(join(REPO_ROOT, 'dist/src/package/issuer.d.ts')), 'dist is built (npm run build)').toBe(true);
    // --ignore-scripts: `prepare` would rebuild dist, which npm test has just done
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project], { cwd: REPO_ROOT, timeout: 60_000, maxBuffer: 16 << 20 });
    packed = (JSON.parse(stdout) as Packed[])[0]!;
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(project, packed.filename)], { cwd: project, timeout: 90_000, maxBuffer: 16 << 20 });
  }, 150_000);

  afterAll(async () => {
    await daemon?.stop();
    await issuer?.close();
    await Promise.all(relays.map((r) => r.close()));
    rmSync(project, { recursive: true, force: true });
  });

  it('ships the compiled code and its types, no sources, source maps, bench, compose config or tests', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths).toContain('dist/src/package/issuer.d.ts');
    expect(paths).toContain('dist/src/package/verify.js');
    expect(paths.filter((p) => p.startsWith('config/'))).toEqual([]);
    expect(paths).toContain('src/adapters/http/static/openapi.json');
    for (const script of ['accept', 'reject', 'set-witness', 'set-relays', 'outbox-add', 'cut-batch', 'forget', 'drop-batch']) expect(paths).toContain(`src/adapters/state/lua/${script}.lua`);
    // the /verify page and its bundle (built by npm run build, not kept in git)
    expect(paths).toContain('src/adapters/http/static/verify.html');
    expect(paths).toContain('src/adapters/http/static/verify.bundle.js');
    expect(paths.filter((p) => p.endsWith('.map') || p.startsWith('dist/bench/') || p.startsWith('test/') || p === 'config/local.json' || (p.endsWith('.ts') && !p.endsWith('.d.ts')))).toEqual([]);
  });

  it('installs without compiling anything; prints size and package count', () => {
    const lock = JSON.parse(readFileSync(join(project, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, { optional?: boolean; hasInstallScript?: boolean }> };
    const installed = Object.entries(lock.packages).filter(([p]) => p.startsWith('node_modules/'));
    const optional = installed.filter(([, v]) => v.optional).length;
    const scripts = installed.filter(([, v]) => v.hasInstallScript).map(([p]) => p.replace(/^.*node_modules\//, ''));
    // node-gyp leaves build/config.gypi behind when it compiles an addon
    const compiled = installed.filter(([p]) => existsSync(join(project, p, 'build/config.gypi'))).map(([p]) => p);
    const mb = (n: number): string => (n / 1e6).toFixed(2);
    // bullmq and ioredis are peer dependencies: npm installs the current majors beside the package
    const peers = ['bullmq', 'ioredis'].map((n) => `${n} ${(JSON.parse(readFileSync(join(project, 'node_modules', n, 'package.json'), 'utf8')) as { version: string }).version}`);
    expect(installed.filter(([p]) => /node_modules\/aer1-anchor\/node_modules\/(bullmq|ioredis)$/.test(p))).toEqual([]);
    console.log(`package: tarball ${mb(packed.size)} MB (${mb(packed.unpackedSize)} MB unpacked, ${packed.entryCount} files); installed ${installed.length} packages (${optional} optional), node_modules ${mb(folderBytes(join(project, 'node_modules')))} MB; peers: ${peers.join(', ')}; install scripts: ${scripts.join(', ') || 'none'}; compiled: ${compiled.join(', ') || 'nothing'}`);
    expect(installed.some(([p]) => p === 'node_modules/aer1-anchor')).toBe(true);
    expect(compiled).toEqual([]);
  });

  it('type-checks an issuer and an auditor script that import the package by name', async () => {
    writeFileSync(join(project, 'issuer.ts'), ISSUER_TS);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true,
        typeRoots: [join(REPO_ROOT, 'node_modules/@types')], types: ['node'],
      },
      files: ['issuer.ts'],
    }));
    const result = await run(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')], { cwd: project, timeout: 60_000 }).then(
      () => 'ok',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(result).toBe('ok');
  }, 60_000);

  it('runs the whole product from the installed package on the bullmq and ioredis npm installed beside it (the demo)', async () => {
    const { stdout } = await run(process.execPath, [join(project, 'node_modules/aer1-anchor/bin/aer1-anchor.js'), 'demo', '--json', '--out', join(project, 'demo')], { cwd: project, timeout: 60_000, maxBuffer: 16 << 20 });
    const summary = JSON.parse(stdout) as { ok: boolean; error: string | null; services: { ports_closed: boolean } };
    expect(summary.error).toBeNull();
    expect(summary.ok).toBe(true);
    expect(summary.services.ports_closed).toBe(true);
  }, 60_000);

  it('enqueues a receipt from a JavaScript issuer; a daemon anchors it; the installed status reader shows it confirmed and gives its proof; the installed verifier passes it', async () => {
    relays = await startRelays(1);
    const key = generateSecretKey();
    const config = testConfig({ relays });
    daemon = await startDaemon(config, SHARED_REDIS_URL, key);
    issuer = new Issuer(config);
    const receipt = { ...(JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/receipt-minimal.json'), 'utf8')) as Record<string, unknown>), id: `pkg-${config.redis.prefix}` };
    writeFileSync(join(project, 'receipt.json'), JSON.stringify(receipt));
    writeFileSync(join(project, 'issuer.mjs'), ISSUER_JS);
    writeFileSync(join(project, 'auditor.mjs'), AUDITOR_JS);

    const { stdout } = await run(process.execPath, ['issuer.mjs', SHARED_REDIS_URL, config.redis.prefix, 'receipt.json'], { cwd: project, timeout: 30_000 });
    expect(JSON.parse(stdout)).toEqual({ key: receipt.id, result: 'queued', status: null });

    await waitFor('the receipt confirmed', async () => (await issuer!.store.subjects.getRecords([receipt.id as string]))[0]?.status === 'confirmed', 30_000, 100);
    writeFileSync(join(project, 'reader.mjs'), READER_JS);
    const read = await run(process.execPath, ['reader.mjs', SHARED_REDIS_URL, config.redis.prefix, receipt.id as string], { cwd: project, timeout: 30_000 });
    const seen = JSON.parse(read.stdout) as { status: string; nostr: string; listed: string[]; next: string | null; stats: { subjects: { total: number; byStatus: Record<string, number> } }; proof: unknown };
    expect(seen).toMatchObject({ status: 'confirmed', nostr: 'confirmed', listed: [receipt.id], next: null, stats: { subjects: { total: 1, byStatus: { confirmed: 1 } } } });
    // the reader's proof is the daemon's (ProofExporter, as GET /v1/anchors/{key}/proof gives it)
    expect(seen.proof).toEqual(await new ProofExporter(issuer.store, { relays: config.nostr.relays, calendars: config.ots.calendars }).export(receipt.id as string));
    writeFileSync(join(project, 'proof.json'), JSON.stringify(seen.proof));
    const audited = await run(process.execPath, ['auditor.mjs', 'receipt.json', 'proof.json', key.publicKey], { cwd: project, timeout: 30_000 });
    const report = JSON.parse(audited.stdout) as { verdict: string; checks: Record<string, string> };
    expect(report.verdict).toBe('PASS');
    expect(report.checks.signer).toBe('PASS');
  }, 60_000);
});
