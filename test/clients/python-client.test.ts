/**
 * clients/python/aer1_anchor.py run by Debian's /usr/bin/python3 as an issuer's script
 * would: its unit tests (error mapping, retries, bulk, wait, exit codes); against the dev
 * stack (the daemon, dev relays, dev calendars mining on their own): a receipt from the
 * shared vectors enqueued, waited for until confirmed, its proof attached, and
 * aer1-verify-anchor PASS on the file; and a 503 answered after its Retry-After.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevStack, type RunningDevStack } from '../../src/dev/stack/dev-stack.js';
import { portAnswers } from '../../src/dev/stack/stack.js';
import { fixturePath } from '../fixtures/index.js';
import { sharedVectorsFor } from '../witness/ots/vector-files.js';

const repo = resolve(import.meta.dirname, '../..');
const PYTHON = '/usr/bin/python3';
const client = join(repo, 'clients/python/aer1_anchor.py');
const verifyBin = join(repo, 'bin/aer1-verify-anchor.js');
const vectorReceipt = resolve(repo, '../shared/vectors/receipt-minimal.json');
const vectorWorkflow = resolve(repo, '../shared/vectors/workflow-receipt-example.json');

/** docs/python.md's first Python example (the one that imports aer1_anchor), as printed. */
function docsExample(): string {
  const page = readFileSync(join(repo, 'docs/python.md'), 'utf8');
  const block = [...page.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('from aer1_anchor import'));
  if (!block) throw new Error('docs/python.md has no Python example importing aer1_anchor');
  return block;
}
/** Bound on any one child; each takes well under a second but a confirmation. */
const CHILD_LIMIT_MS = 90_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a child without blocking the event loop (the daemon it talks to may run in this process). */
function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env['PATH'] ?? '', PYTHONDONTWRITEBYTECODE: '1', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not exit within ${CHILD_LIMIT_MS} ms; stderr: ${stderr.slice(-2000)}`));
    }, CHILD_LIMIT_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('aer1_anchor.py on its own', () => {
  it(`runs on ${PYTHON} and its unit tests pass (error mapping, 503 retries, bulk, wait, exit codes)`, async () => {
    expect(existsSync(PYTHON), `${PYTHON} is missing: apt-get install python3`).toBe(true);
    const r = await run(PYTHON, ['-m', 'unittest', '-v', 'clients/python/test_aer1_anchor.py']);
    expect(r.code, r.stderr.slice(-4000)).toBe(0);
    const ran = /Ran (\d+) tests/.exec(r.stderr);
    expect(Number(ran?.[1] ?? 0)).toBeGreaterThanOrEqual(30);
    expect(r.stderr).toMatch(/\nOK\b/);
    expect(r.stderr).toMatch(/test_a_400_carries_the_daemons_code_message_and_field .*\.\.\. ok/);
  });

  it('waits out a 503 for its Retry-After, then enqueues (a stand-in daemon: 503 once, then 202)', async () => {
    // stand-in for the daemon while Redis is busy: the one answer a real one cannot be made to give on cue
    const arrivals: Array<{ at: number; body: string; auth: string | undefined }> = [];
    const standIn: Server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        arrivals.push({ at: Date.now(), body, auth: req.headers.authorization });
        res.setHeader('content-type', 'application/json');
        if (arrivals.length === 1) {
          res.writeHead(503, { 'retry-after': '1' });
          res.end(JSON.stringify({ error: { code: 'redis_busy', message: 'Redis is busy: BUSY Redis is busy running a script.' }, keys: [], results: [] }));
        } else {
          res.writeHead(202);
          res.end(JSON.stringify({ keys: ['00000000-0000-4000-8000-000000000001'], results: [{ key: '00000000-0000-4000-8000-000000000001', result: 'queued', status: null }] }));
        }
      });
    });
    await new Promise<void>((r) => standIn.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
      const r = await run(PYTHON, [client, '--url', url, '--token', 'stand-in-token', 'enqueue', fixturePath('receipt-minimal')]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('00000000-0000-4000-8000-000000000001: queued');
      expect(arrivals).toHaveLength(2);
      expect(arrivals[1]!.at - arrivals[0]!.at, 'the retry came before Retry-After: 1 had passed').toBeGreaterThanOrEqual(1000);
      expect(arrivals[1]!.body).toBe(arrivals[0]!.body);
      expect(arrivals[0]!.body).toBe(readFileSync(fixturePath('receipt-minimal'), 'utf8'));
      expect(arrivals[0]!.auth).toBe('Bearer stand-in-token');
    } finally {
      await new Promise<void>((r) => standIn.close(() => r()));
    }
  });
});

describe.runIf(sharedVectorsFor('the Python client against the dev stack with the shared receipt and workflow vectors (2 tests)'))('aer1_anchor.py against the dev stack', () => {
  let stack: RunningDevStack | null = null;
  let out = '';

  beforeAll(async () => {
    out = tempDir('aer1-python-client-');
    stack = await startDevStack({ out, relayProfiles: ['open', 'open', 'open'], calendarCount: 2, mineEveryMs: 300, httpPort: 0 });
  });

  afterAll(async () => {
    if (!stack) return;
    const ports = stack.info.ports;
    await stack.stop();
    for (const port of ports) expect(await portAnswers(port), `port ${port} still answers`).toBe(false);
  });

  it('enqueues the shared receipt, waits until confirmed, attaches its proof, and aer1-verify-anchor says PASS', async () => {
    expect(existsSync(vectorReceipt), `${vectorReceipt} is missing from the shared vectors`).toBe(true);
    const { info } = stack!;
    const env = { AER1_ANCHOR_URL: info.http, AER1_ANCHOR_TOKEN: info.token };
    const file = join(out, 'receipt.json');
    copyFileSync(vectorReceipt, file);
    const key = (JSON.parse(readFileSync(file, 'utf8')) as { id: string }).id;

    const enq = await run(PYTHON, [client, 'enqueue', file], env);
    expect(enq.code, enq.stderr).toBe(0);
    expect(enq.stdout).toBe(`${file}: ${key}: queued\n`);

    const wait = await run(PYTHON, [client, 'wait', key, '--until', 'confirmed', '--timeout', '60', '--poll', '0.2'], env);
    expect(wait.code, wait.stderr).toBe(0);
    expect(wait.stdout).toBe(`${key}: confirmed\n`);

    const proof = await run(PYTHON, [client, 'proof', key, '--attach', file], env);
    expect(proof.code, proof.stderr).toBe(0);
    expect(proof.stdout).toBe(`${file}: anchor_proof attached (status confirmed)\n`);
    const attached = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> & { anchor_proof: { status: string } };
    expect(attached.anchor_proof.status).toBe('confirmed');
    const { anchor_proof: _p, ...document } = attached;
    expect(document).toEqual(JSON.parse(readFileSync(vectorReceipt, 'utf8')));

    const verify = await run(process.execPath, [verifyBin, file, '--headers', info.headers, '--network', 'regtest', '--expected-pubkey', info.signer]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^VERDICT: PASS: nostr confirmed as claimed, expected signer.*; ots confirmed in Bitcoin block/m);

    // the real daemon's refusals, named as it names them
    const again = await run(PYTHON, [client, 'enqueue', file], env);
    expect(again.stdout).toBe(`${file}: ${key}: already anchored (confirmed)\n`);
    const broken = join(out, 'no-canonical-bytes.json');
    const { canonical_bytes: _c, ...rest } = document;
    writeFileSync(broken, JSON.stringify({ ...rest, id: '00000000-0000-4000-8000-0000000000ff' }));
    const refused = await run(PYTHON, [client, 'enqueue', broken], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^aer1_anchor: missing: .*no-canonical-bytes\.json: .*\(field canonical_bytes\)\n$/);
    const unknown = await run(PYTHON, [client, 'status', 'no-such-key'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('not_found');
    const badToken = await run(PYTHON, [client, '--token', 'wrong', 'enqueue', file], { AER1_ANCHOR_URL: info.http });
    expect(badToken.code).toBe(2);
    expect(badToken.stderr).toContain('unauthorized');
  });

  it("runs docs/python.md's example as printed: the shared workflow close anchored, attached and PASS", async () => {
    expect(existsSync(vectorWorkflow), `${vectorWorkflow} is missing from the shared vectors`).toBe(true);
    const { info } = stack!;
    const script = join(out, 'docs_example.py');
    writeFileSync(script, docsExample());
    const file = join(out, 'workflow.json');
    copyFileSync(vectorWorkflow, file);
    const r = await run(PYTHON, [script, file], { PYTHONPATH: join(repo, 'clients/python'), AER1_ANCHOR_URL: info.http, AER1_ANCHOR_TOKEN: info.token });
    expect(r.code, r.stderr).toBe(0);
    const attached = JSON.parse(readFileSync(file, 'utf8')) as { anchor_proof?: { status: string } };
    expect(attached.anchor_proof?.status).toBe('confirmed');
    const verify = await run(process.execPath, [verifyBin, file, '--headers', info.headers, '--network', 'regtest', '--expected-pubkey', info.signer]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toContain('VERDICT: PASS');
  });
});
