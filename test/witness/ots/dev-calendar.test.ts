import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalendarClient } from '../../../src/adapters/ots/calendar/index.js';
import { startDevCalendar, type DevCalendar } from '../../../src/dev/calendar/index.js';
import { python } from './dev-calendar-support.js';

const sha = (b: Buffer): Buffer => createHash('sha256').update(b).digest();
const sha256d = (b: Buffer): Buffer => sha(sha(b));
const dir = mkdtempSync(join(tmpdir(), 'aer1-devcal-'));
const started: DevCalendar[] = [];

async function calendar(opts: Parameters<typeof startDevCalendar>[0] = {}): Promise<DevCalendar> {
  const cal = await startDevCalendar({ aggregationMs: 50, ...opts });
  started.push(cal);
  return cal;
}

function headersFile(file: string): Record<string, string> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
}

/** Checks the header's proof of work with plain BigInt arithmetic (independent of the server code). */
function powValid(header: Buffer): boolean {
  const bits = header.readUInt32LE(72);
  const target = BigInt(bits & 0xffffff) << BigInt(8 * ((bits >>> 24) - 3));
  return BigInt('0x' + Buffer.from(sha256d(header)).reverse().toString('hex')) <= target;
}

/** The commitment of a submit answer: python-opentimestamps names the message at its pending attestation. */
function commitmentOf(digest: Buffer, answer: Buffer): Buffer {
  const [r] = python([{ kind: 'parse', start: digest.toString('hex'), bytes: answer.toString('hex') }]);
  const pending = r!.attestations!.filter((a) => a.type === 'pending');
  expect(pending).toHaveLength(1);
  return Buffer.from(pending[0]!.msg, 'hex');
}

afterAll(async () => {
  await Promise.all(started.map((c) => c.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('dev calendar: submit, pending, mine, upgrade', () => {
  const headers = join(dir, 'headers-main.json');
  let cal: DevCalendar;
  let client: CalendarClient;
  const digest = sha(Buffer.from('one subject'));
  let answer: Buffer;
  let commitment: Buffer;

  beforeAll(async () => {
    cal = await calendar({ headersOut: headers });
    client = new CalendarClient(cal.url, { timeoutMs: 5000 });
    answer = await client.submit(digest);
    commitment = commitmentOf(digest, answer);
  });

  it('answers a timestamp python-opentimestamps parses at the digest, with one pending attestation naming the calendar', () => {
    const [r] = python([{ kind: 'parse', start: digest.toString('hex'), bytes: answer.toString('hex') }]);
    expect(r!.error).toBeUndefined();
    expect(r!.roundtrip).toBe(true);
    expect(r!.attestations).toEqual([{ msg: commitment.toString('hex'), type: 'pending', uri: cal.url }]);
    expect(cal.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('lays the answer out as nonce, sha256, time prefix, MAC suffix, pending attestation', () => {
    const hex = answer.toString('hex');
    expect(hex.slice(0, 4)).toBe('f010');
    expect(hex.slice(36, 38)).toBe('08');
    const uri = Buffer.from(cal.url);
    const tail = Buffer.concat([
      Buffer.from('f104', 'hex'), commitment.subarray(0, 4),
      Buffer.from('f008', 'hex'), commitment.subarray(36),
      Buffer.from('0083dfe30d2ef90c8e', 'hex'), Buffer.from([uri.length + 1, uri.length]), uri,
    ]);
    expect(hex.endsWith(tail.toString('hex'))).toBe(true);
    expect(commitment.length).toBe(44);
    const time = commitment.readUInt32BE(0);
    expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(86_400);
  });

  it('reports the commitment pending with the real reason until mined', async () => {
    expect(await client.getTimestamp(commitment)).toEqual({ status: 'pending', reason: 'Pending confirmation in Bitcoin blockchain' });
    const raw = await fetch(`${cal.url}/timestamp/${commitment.toString('hex')}`);
    expect(raw.status).toBe(404);
    expect(raw.headers.get('content-type')).toBe('text/plain');
    expect(await raw.text()).toBe('Pending confirmation in Bitcoin blockchain');
    expect(cal.pendingCount()).toBe(1);
  });

  it('answers Not found for a commitment it never made', async () => {
    expect(await client.getTimestamp(randomBytes(44))).toEqual({ status: 'not-found', reason: 'Not found' });
  });

  it('after mine, serves an upgrade python parses under the commitment, ending in a Bitcoin attestation at the mined height', async () => {
    const mined = await cal.mine();
    expect(mined.count).toBe(1);
    expect(cal.pendingCount()).toBe(0);
    const up = await client.getTimestamp(commitment);
    expect(up.status).toBe('complete');
    const bytes = (up as { bytes: Buffer }).bytes;
    expect(bytes[0]).toBe(0x08);

    const file = headersFile(headers);
    expect(Object.keys(file)).toEqual([String(mined.height)]);
    const header = Buffer.from(file[String(mined.height)]!, 'hex');
    expect(header.toString('hex')).toBe(mined.headerHex);

    const [parsed, merged, hdr] = python([
      { kind: 'parse', start: commitment.toString('hex'), bytes: bytes.toString('hex'), tx: true },
      { kind: 'merge', digest: digest.toString('hex'), submit: answer.toString('hex'), commitment: commitment.toString('hex'), upgrade: bytes.toString('hex') },
      { kind: 'header', header: header.toString('hex'), msg: mined.merkleRootHex },
    ]);
    expect(parsed!.error).toBeUndefined();
    expect(parsed!.roundtrip).toBe(true);
    expect(parsed!.attestations).toEqual([{ msg: mined.merkleRootHex, type: 'bitcoin', height: mined.height }]);
    expect(parsed!.tx).toMatchObject({ txid_ok: true, op_return_has_tip: true });
    expect(merged!.merged).toBe(true);
    expect(merged!.attestations!.map((a) => a.type).sort()).toEqual(['bitcoin', 'pending']);
    expect(hdr).toMatchObject({ pow_ok: true, merkle_ok: true, bits: 0x207fffff, prev: '00'.repeat(32) });

    // independent of python: the header's merkle root (internal order) is the attested message, and its PoW holds
    expect(header.subarray(36, 68).toString('hex')).toBe(mined.merkleRootHex);
    expect(powValid(header)).toBe(true);
    expect(Buffer.from(sha256d(header)).reverse().toString('hex')).toBe(mined.blockHash);
  });

  it('mines the next block on top of the previous one', async () => {
    const d2 = sha(Buffer.from('second subject'));
    const a2 = await client.submit(d2);
    const c2 = commitmentOf(d2, a2);
    const before = headersFile(headers);
    const mined = await cal.mine();
    const after = headersFile(headers);
    const prevHeight = mined.height - 1;
    expect(Object.keys(after).sort()).toEqual([...Object.keys(before), String(mined.height)].sort());
    const prev = Buffer.from(after[String(prevHeight)]!, 'hex');
    const next = Buffer.from(after[String(mined.height)]!, 'hex');
    expect(next.subarray(4, 36)).toEqual(sha256d(prev));
    const up = await client.getTimestamp(c2);
    const [r] = python([{ kind: 'parse', start: c2.toString('hex'), bytes: (up as { bytes: Buffer }).bytes.toString('hex') }]);
    expect(r!.attestations).toEqual([{ msg: mined.merkleRootHex, type: 'bitcoin', height: mined.height }]);
  });

  it('serves a short text page at /', async () => {
    const res = await fetch(`${cal.url}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('OpenTimestamps calendar');
  });
});

describe('dev calendar: aggregation rounds', () => {
  it('puts all digests of one round into one tree under one commitment', async () => {
    const cal = await calendar({ aggregationMs: 1500, roundsFrom: 'first-digest' });
    const client = new CalendarClient(cal.url);
    const digests = Array.from({ length: 7 }, (_, i) => sha(Buffer.from(`round digest ${i}`)));
    const answers = await Promise.all(digests.map((d) => client.submit(d)));
    const parsed = python(digests.map((d, i) => ({ kind: 'parse' as const, start: d.toString('hex'), bytes: answers[i]!.toString('hex') })));
    const commitments = new Set(parsed.map((p) => p.attestations![0]!.msg));
    expect(parsed.every((p) => p.roundtrip === true && p.attestations!.length === 1)).toBe(true);
    expect(commitments.size).toBe(1);
    expect(cal.stats()).toMatchObject({ digestsReceived: 7, rounds: 1, pendingCommitments: 1 });
    // 7 leaves (python make_merkle_tree): leaves 0-5 take 3 tree steps, the 7th is carried up once and takes 2
    const fixed = answers[0]!.length - 35 * 3;
    expect(answers.map((a) => (a.length - fixed) / 35)).toEqual([3, 3, 3, 3, 3, 3, 2]);

    const mined = await cal.mine();
    expect(mined.count).toBe(1);
    const [c] = [...commitments];
    const up = await client.getTimestamp(Buffer.from(c!, 'hex'));
    expect(up.status).toBe('complete');
  });

  it('confirms commitments of several rounds in one block, each with its own path', async () => {
    const cal = await calendar({ aggregationMs: 20, fillerTxs: 2 });
    const client = new CalendarClient(cal.url);
    const commitments: Buffer[] = [];
    for (let i = 0; i < 3; i++) {
      const d = sha(Buffer.from(`round ${i}`));
      commitments.push(commitmentOf(d, await client.submit(d)));
    }
    expect(new Set(commitments.map((c) => c.toString('hex'))).size).toBe(3);
    const mined = await cal.mine();
    expect(mined.count).toBe(3);
    const ups = await Promise.all(commitments.map((c) => client.getTimestamp(c)));
    const parsed = python(ups.map((u, i) => ({ kind: 'parse' as const, start: commitments[i]!.toString('hex'), bytes: (u as { bytes: Buffer }).bytes.toString('hex'), tx: true })));
    for (const p of parsed) {
      expect(p.attestations).toEqual([{ msg: mined.merkleRootHex, type: 'bitcoin', height: mined.height }]);
      expect(p.tx).toMatchObject({ txid_ok: true, op_return_has_tip: true });
    }
  });
});

describe('dev calendar: when a round closes', () => {
  /** How long a digest sent half a round after the previous round closed waits for its answer. */
  async function waitHalfWayThrough(cal: DevCalendar, roundMs: number): Promise<number> {
    const client = new CalendarClient(cal.url);
    await client.submit(sha(randomBytes(32)));
    // the answer came as a round closed: send the next digest half a round later
    await new Promise((r) => setTimeout(r, roundMs / 2));
    const sent = Date.now();
    await client.submit(sha(randomBytes(32)));
    return Date.now() - sent;
  }

  it('closes rounds on its own clock as the real server does (a digest waits for the current round), or one round after a round\'s first digest when asked', async () => {
    const roundMs = 1000;
    // otsserver's Aggregator loop waits one interval between rounds, whatever arrives: half a round late, half a round to wait
    const clock = await waitHalfWayThrough(await calendar({ aggregationMs: roundMs }), roundMs);
    expect(clock).toBeLessThan(roundMs * 0.9);
    // first-digest: a round opens with its first digest and holds it a whole round
    const firstDigest = await waitHalfWayThrough(await calendar({ aggregationMs: roundMs, roundsFrom: 'first-digest' }), roundMs);
    expect(firstDigest).toBeGreaterThanOrEqual(roundMs - 5);
  });
});

describe('dev calendar: shared headers file', () => {
  it('lets two calendars extend one chain without reusing a height', async () => {
    const file = join(dir, 'headers-shared.json');
    const [a, b] = await Promise.all([calendar({ headersOut: file }), calendar({ headersOut: file, startHeight: 100 })]);
    const results = [];
    for (let i = 0; i < 3; i++) results.push(...(await Promise.all([a.mine(), b.mine()])));
    const heights = results.map((r) => r.height).sort((x, y) => x - y);
    expect(heights).toEqual([1, 2, 3, 4, 5, 6].map((h) => h + (heights[0]! - 1)));
    const chain = headersFile(file);
    expect(Object.keys(chain)).toHaveLength(6);
    for (const h of heights.slice(1)) {
      const prev = Buffer.from(chain[String(h - 1)]!, 'hex');
      const cur = Buffer.from(chain[String(h)]!, 'hex');
      expect(cur.subarray(4, 36)).toEqual(sha256d(prev));
      expect(powValid(cur)).toBe(true);
    }
  });

  it('starts at the configured height on an empty file', async () => {
    const file = join(dir, 'headers-start.json');
    const cal = await calendar({ headersOut: file, startHeight: 500 });
    expect(headersFile(file)).toEqual({});
    expect((await cal.mine()).height).toBe(500);
    expect((await cal.mine()).height).toBe(501);
  });
});

describe('dev calendar: protocol edges', () => {
  it('refuses a digest over 64 bytes with 400, like the real server', async () => {
    const cal = await calendar();
    const res = await fetch(`${cal.url}/digest`, { method: 'POST', body: new Uint8Array(65) });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('digest too long');
  });

  it('refuses a commitment that is not hex with 400', async () => {
    const cal = await calendar();
    const res = await fetch(`${cal.url}/timestamp/xyz`);
    expect(res.status).toBe(400);
    expect(await res.text()).toBe('commitment must be hex-encoded bytes');
  });

  it('serves under a path prefix, names it in its attestations, and not at the root', async () => {
    const cal = await calendar({ basePath: '/ots/cal-a/' });
    expect(cal.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ots\/cal-a$/);
    const client = new CalendarClient(cal.url);
    const d = sha(Buffer.from('prefixed'));
    const answer = await client.submit(d);
    const [r] = python([{ kind: 'parse', start: d.toString('hex'), bytes: answer.toString('hex') }]);
    expect(r!.attestations![0]!.uri).toBe(cal.url);
    const root = await fetch(`http://127.0.0.1:${cal.port}/digest`, { method: 'POST', body: new Uint8Array(32) });
    expect(root.status).toBe(404);
  });

  it('names publicUrl in its attestations and refuses one python would not accept', async () => {
    const cal = await calendar({ publicUrl: 'https://cal.example.org/ots/' });
    const d = sha(Buffer.from('public'));
    const answer = await new CalendarClient(`http://127.0.0.1:${cal.port}`).submit(d);
    const [r] = python([{ kind: 'parse', start: d.toString('hex'), bytes: answer.toString('hex') }]);
    expect(r!.attestations![0]!.uri).toBe('https://cal.example.org/ots');
    await expect(startDevCalendar({ publicUrl: 'http://cal.example.org/?q=1' })).rejects.toThrow(/contains "\?"/);
  });

  it('answers 500 in error500 mode and recovers in ok mode', async () => {
    const cal = await calendar();
    cal.setMode('error500');
    const res = await fetch(`${cal.url}/digest`, { method: 'POST', body: new Uint8Array(32) });
    expect(res.status).toBe(500);
    await res.arrayBuffer();
    cal.setMode('ok');
    const ok = await fetch(`${cal.url}/digest`, { method: 'POST', body: new Uint8Array(32) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/octet-stream');
  });

  it('switches mode over HTTP for out-of-process tests', async () => {
    const cal = await calendar();
    expect((await fetch(`${cal.url}/mode/error500`, { method: 'POST' })).status).toBe(200);
    expect((await fetch(`${cal.url}/`)).status).toBe(500);
    expect((await fetch(`${cal.url}/mode/bogus`, { method: 'POST' })).status).toBe(400);
    expect((await fetch(`${cal.url}/mode/ok`, { method: 'POST' })).status).toBe(200);
    const mine = await fetch(`${cal.url}/mine`, { method: 'POST' });
    expect(mine.status).toBe(200);
    expect(await mine.json()).toMatchObject({ height: 1, count: 0 });
  });
});

describe('dev calendar: the real server\'s awkward answers', () => {
  it('notFoundMs: Not found right after the round, then Pending, then the upgrade once mined', async () => {
    const cal = await calendar({ notFoundMs: 1500 });
    const client = new CalendarClient(cal.url, { timeoutMs: 5000 });
    const d = sha(randomBytes(8));
    const started = Date.now();
    const answer = await client.submit(d);
    const commitment = commitmentOf(d, answer);
    expect(await client.getTimestamp(commitment)).toEqual({ status: 'not-found', reason: 'Not found' });
    let last = await client.getTimestamp(commitment);
    for (let i = 0; i < 100 && last.status === 'not-found' && Date.now() - started < 8000; i++) {
      await new Promise((r) => setTimeout(r, 50));
      last = await client.getTimestamp(commitment);
    }
    expect(last).toEqual({ status: 'pending', reason: 'Pending confirmation in Bitcoin blockchain' });
    // the window runs from the round's close, which comes after `started`
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    await cal.mine();
    expect((await client.getTimestamp(commitment)).status).toBe('complete');
  });

  it('gzip: every protocol answer is sent with Content-Encoding gzip and decodes to what python parses', async () => {
    const cal = await calendar({ gzip: true });
    const d = sha(randomBytes(8));
    const raw = await rawPost(`${cal.url}/digest`, d);
    expect(raw.status).toBe(200);
    expect(raw.headers['content-encoding']).toBe('gzip');
    expect(raw.body.subarray(0, 2).toString('hex')).toBe('1f8b');
    const answer = gunzipSync(raw.body);
    const commitment = commitmentOf(d, answer);
    const pending = await rawGet(`${cal.url}/timestamp/${commitment.toString('hex')}`);
    expect(pending.status).toBe(404);
    expect(gunzipSync(pending.body).toString()).toBe('Pending confirmation in Bitcoin blockchain');
    // the dev endpoints stay plain
    const mine = await rawPost(`${cal.url}/mine`, Buffer.alloc(0));
    expect(mine.headers['content-encoding']).toBeUndefined();
  });

  it('delayMs: answers come late; a client whose deadline is shorter times out', async () => {
    const cal = await calendar({ delayMs: 600 });
    const d = sha(randomBytes(8));
    const t0 = Date.now();
    await new CalendarClient(cal.url, { timeoutMs: 5000 }).submit(d);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    await expect(new CalendarClient(cal.url, { timeoutMs: 200 }).submit(d)).rejects.toMatchObject({ code: 'timeout' });
    cal.setBehaviour({ delayMs: 0 });
    const t1 = Date.now();
    await new CalendarClient(cal.url, { timeoutMs: 5000 }).submit(d);
    expect(Date.now() - t1).toBeLessThan(550);
  });

  it('refuses bad behaviour values, naming the field', async () => {
    await expect(startDevCalendar({ delayMs: -1 })).rejects.toMatchObject({ field: 'delayMs' });
    const cal = await calendar();
    expect(() => cal.setBehaviour({ notFoundMs: 1.5 })).toThrow(/notFoundMs must be an integer/);
    expect(() => cal.setBehaviour({ gzip: 'yes' as unknown as boolean })).toThrow(/gzip must be true or false/);
    expect(cal.behaviour()).toEqual({ notFoundMs: 0, gzip: false, delayMs: 0 });
  });
});

/** A request without fetch's automatic decoding, to see the bytes on the wire. */
function rawRequest(url: string, method: 'GET' | 'POST', body?: Buffer): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: body ? { 'Content-Length': body.length } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('raw request timed out')));
    req.end(body);
  });
}
const rawPost = (url: string, body: Buffer) => rawRequest(url, 'POST', body);
const rawGet = (url: string) => rawRequest(url, 'GET');
