/**
 * `aer1-anchor monitor` following a running daemon's anchor log over loopback HTTP while
 * 10,000 subjects are anchored in bulk (POST /v1/anchors, 1,000 a request, the next once
 * the monitor has followed the log past the last), with every
 * checkpoint also published as a checkpoint event on a dev relay: every new checkpoint it
 * saw is proven consistent with the last one it verified (counted), every event consistent,
 * no fork, and every entry listed once. Then a second note for a size already seen, with
 * another root, signed by the log's own key and published on the relay, is reported as a
 * FORK with both notes, exit 1. Real Redis, dev relay and calendar, real files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLogKeyFile } from '../../src/adapters/log/key-file.js';
import type { MonitorRound } from '../../src/adapters/log/log-monitor.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { checkpointEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { receiptFields, REPO_ROOT, tempDir, waitFor } from '../helpers/harness.js';
import { startStack, TOKEN, type Stack } from '../http/fixture.js';

const SUBJECTS = 10_000;
const PER_REQUEST = 1_000;
const bin = join(REPO_ROOT, 'bin/aer1-anchor.js');
let s: Stack;
let dir: string;
let monitor: ChildProcess | undefined;
beforeAll(async () => {
  dir = tempDir('aer1-daemon-monitor');
  s = await startStack({ overrides: { nostr: { mode: 'batch' }, log: { enabled: true, dir: join(dir, 'log'), keyFile: join(dir, 'log.key'), origin: 'example.test/aer1', checkpointIntervalMs: 200 } } });
});
afterAll(async () => {
  if (monitor && monitor.exitCode === null) monitor.kill('SIGKILL');
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('monitor on a running daemon', () => {
  it(`proves every checkpoint consistent while ${SUBJECTS} subjects are anchored, then reports a forked checkpoint with both notes`, { timeout: 180_000 }, async () => {
    const vkey = (await (await s.get('/v1/log/vkey')).text()).trim();
    const author = generateSecretKey();
    const relay = s.relays[0]!.url;
    const client = new RelayClient(relay, { publishTimeoutMs: 5000, ping: false });
    // the daemon's own checkpoint events are another part's: here each checkpoint the folder shows is published as one
    const published = new Set<string>();
    const publishCurrent = async (): Promise<void> => {
      let note: string;
      try {
        note = readFileSync(join(dir, 'log', 'checkpoint'), 'utf8');
      } catch {
        return;
      }
      if (published.has(note)) return;
      published.add(note);
      expect((await client.publish(checkpointEvent({ note, createdAt: Math.floor(Date.now() / 1000) }, author))).status).toBe('accepted');
    };

    const lines: string[] = [];
    let stderr = '';
    let partial = '';
    monitor = spawn(process.execPath, [bin, 'monitor', '--log', `${s.http.url}/v1/log`, '--log-key', vkey, '--relay', relay, '--author', author.publicKey,
      '--state', join(dir, 'monitor-state.json'), '--json', '--interval', '200', '--max-rounds', '3000', '--max-listed', String(SUBJECTS)]);
    monitor.stdout!.on('data', (d: Buffer) => {
      const text = partial + d.toString();
      const parts = text.split('\n');
      partial = parts.pop()!;
      lines.push(...parts);
    });
    monitor.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((done) => monitor!.on('close', (code) => done(code)));
    const rounds = (): MonitorRound[] => lines.map((l) => JSON.parse(l) as MonitorRound);

    const started = Date.now();
    const keys: string[] = [];
    for (let i = 0; i < SUBJECTS; i += PER_REQUEST) {
      const subjects = Array.from({ length: PER_REQUEST }, () => receiptFields());
      keys.push(...subjects.map((x) => x.receipt_uuid));
      const res = await fetch(`${s.http.url}/v1/anchors`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ subjects }) });
      expect(res.status, await res.text()).toBe(202);
      // paced by the monitor: the next request once it has followed the log past this one
      await waitFor(`a monitor round at size ${keys.length} or more`, async () => {
        await publishCurrent();
        return rounds().some((r) => (r.checkpoint?.size ?? 0) >= keys.length) ? true : null;
      }, 60_000, 50);
    }
    await waitFor(`a monitor round at size ${SUBJECTS}, with every checkpoint published`, async () => {
      await publishCurrent();
      return rounds().some((r) => r.checkpoint?.size === SUBJECTS && r.consistent.some((c) => c.size === SUBJECTS && c.source.startsWith('checkpoint event'))) ? true : null;
    }, 120_000, 100);
    client.close();

    const seen = rounds();
    expect(stderr).toBe('');
    expect(seen.every((r) => r.verdict === 'ok'), JSON.stringify(seen.find((r) => r.verdict !== 'ok'))).toBe(true);
    // every checkpoint the monitor saw grow is proven consistent with the last it verified
    const grown = seen.filter((r) => r.previous !== null && r.checkpoint!.size > r.previous.size);
    for (const r of grown) expect(r.consistent).toContainEqual({ source: 'the last verified checkpoint', size: r.previous!.size, root: r.previous!.root });
    const checkpointsSeen = new Set(seen.map((r) => r.checkpoint!.size)).size;
    expect(grown.length).toBe(checkpointsSeen - 1);
    expect(grown.length).toBeGreaterThanOrEqual(SUBJECTS / PER_REQUEST - 1);
    // every checkpoint event published is placed: consistent with the log
    const eventsConsistent = new Set(seen.flatMap((r) => r.consistent.filter((c) => c.source.startsWith('checkpoint event')).map((c) => `${c.size} ${c.root}`)));
    expect(eventsConsistent.size).toBe(published.size);
    expect(seen.flatMap((r) => r.forks)).toEqual([]);
    // each entry listed once, in order, and they are the subjects posted
    const listed = seen.flatMap((r) => r.entries.listed);
    expect(listed.map((e) => e.index)).toEqual(Array.from({ length: SUBJECTS }, (_, i) => i));
    expect(new Set(listed.map((e) => e.key))).toEqual(new Set(keys));
    expect(listed.every((e) => e.kind === 'receipt' && /^[0-9a-f]{64}$/.test(e.digest))).toBe(true);
    console.log(`monitor: ${seen.length} rounds, ${checkpointsSeen} checkpoints seen, ${grown.length} proven consistent with the last verified, ${eventsConsistent.size} checkpoint events consistent, ${Date.now() - started} ms`);

    // the log key signs a second note for a size the monitor already saw, with another root
    const signer = loadLogKeyFile(join(dir, 'log.key'));
    const forkedSize = grown[0]!.previous!.size;
    const forked = signCheckpoint({ origin: 'example.test/aer1', size: forkedSize, root: randomBytes(32), extensions: [] }, signer);
    const forkClient = new RelayClient(relay, { publishTimeoutMs: 5000, ping: false });
    expect((await forkClient.publish(checkpointEvent({ note: forked, createdAt: Math.floor(Date.now() / 1000) }, author))).status).toBe('accepted');
    forkClient.close();
    expect(await exited).toBe(1);
    const last = rounds().at(-1)!;
    expect(last.verdict).toBe('fork');
    expect(last.forks).toHaveLength(1);
    expect(last.forks[0]).toMatchObject({ checkpoint: { size: forkedSize }, note: forked, against: { size: SUBJECTS }, against_note: readFileSync(join(dir, 'log', 'checkpoint'), 'utf8') });
    expect(last.forks[0]!.detail).toMatch(new RegExp(`size ${forkedSize} root \\S+ is not a prefix of this log \\(a fork: both checkpoints are signed\\)`));
  });
});
