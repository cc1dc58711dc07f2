/**
 * `aer1-anchor monitor` and `log verify --relay` as a user runs them, on a log written by the
 * writer and checkpoint events on a real dev relay: each new checkpoint proven consistent
 * with the last verified one (kept in the state file), new entries listed once, another
 * shard's events left out; a forked
 * checkpoint (same size, another root, signed by the log key) published on the relay is a
 * FORK with both notes and exit 1; a rollback fails; a note signed by another key is
 * reported, never trusted.
 */
import { randomBytes, createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCheckpoint } from '../../src/core/log/checkpoint.js';
import { generateSignerKey } from '../../src/core/log/note.js';
import { checkpointEvent } from '../../src/core/nostr/events.js';
import { generateSecretKey } from '../../src/core/nostr/keys.js';
import { LogWriter } from '../../src/adapters/log/log-writer.js';
import { RelayClient } from '../../src/adapters/nostr/relay-client.js';
import { startDevRelay, type DevRelay } from '../../src/dev/relay/dev-relay.js';
import type { MonitorRound } from '../../src/adapters/log/log-monitor.js';
import { runAnchorCli } from '../helpers/harness.js';

const work = mkdtempSync(join(tmpdir(), 'aer1-log-monitor-'));
const ORIGIN = 'example.test/aer1';
const signer = generateSignerKey(ORIGIN).signer;
const VKEY = signer.verifierKey;
const nostrKey = generateSecretKey();
const dir = join(work, 'log');
const entry = (i: number) => ({ digest: createHash('sha256').update(`s${i}`).digest(), kind: 'receipt' as const, key: `r/${i}` });
let relay: DevRelay;

afterAll(async () => {
  await relay?.close();
  rmSync(work, { recursive: true, force: true });
});

const cli = (args: string[]) => runAnchorCli(args, { cwd: work });

async function publish(note: string, createdAt = Math.floor(Date.now() / 1000)): Promise<void> {
  const client = new RelayClient(relay.url, { publishTimeoutMs: 5000, ping: false });
  try {
    expect((await client.publish(checkpointEvent({ note, createdAt }, nostrKey))).status).toBe('accepted');
  } finally {
    client.close();
  }
}

const rounds = (stdout: string): MonitorRound[] => stdout.trim().split('\n').map((l) => JSON.parse(l) as MonitorRound);
const notes: string[] = [];

beforeAll(async () => {
  relay = await startDevRelay();
  const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
  for (const size of [300, 700]) {
    for (let i = w.size; i < size; i++) w.append(entry(i));
    await w.checkpoint();
    notes.push(readFileSync(join(dir, 'checkpoint'), 'utf8'));
    await publish(notes.at(-1)!);
  }
}, 60_000);

describe('aer1-anchor log verify --relay --author', () => {
  it('proves every checkpoint event consistent with the log, leaves out another log\'s (shard\'s) events; a note signed by another key is reported, not trusted', async () => {
    await publish(signCheckpoint({ origin: `${ORIGIN}/1`, size: 5, root: randomBytes(32), extensions: [] }, signer));
    const r = await cli(['log', 'verify', dir, '--log-key', VKEY, '--relay', relay.url, '--author', nostrKey.publicKey, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { verdict: string; checks: { name: string; status: string; detail: string }[]; relays: { events: number; complete: boolean }[] };
    expect(report.relays).toEqual([expect.objectContaining({ events: 3, complete: true })]);
    expect(report.checks.filter((c) => c.name === 'consistency').map((c) => [c.status, /size (\d+) is a prefix of size 700/.exec(c.detail)?.[1]]).sort()).toEqual([['pass', '300'], ['pass', '700']]);

    const stranger = generateSignerKey(ORIGIN).signer;
    const foreign = signCheckpoint({ origin: ORIGIN, size: 300, root: randomBytes(32), extensions: [] }, stranger);
    writeFileSync(join(work, 'foreign'), foreign);
    const f = await cli(['log', 'verify', dir, '--log-key', VKEY, join(work, 'foreign')]);
    expect(f.code).toBe(3);
    expect(f.stdout).toMatch(/n\/a {2}consistency: .*foreign: signer not trusted/);
  });
});

describe('aer1-anchor monitor', () => {
  it('follows the log through the state file: consistent checkpoints, new entries listed once; then a forked checkpoint on the relay is a FORK with both notes, exit 1', async () => {
    const state = join(work, 'state.json');
    const base = ['monitor', '--log', dir, '--log-key', VKEY, '--relay', relay.url, '--author', nostrKey.publicKey, '--state', state, '--json'];
    const first = await cli(base);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const [r1] = rounds(first.stdout);
    expect(r1).toMatchObject({ verdict: 'ok', previous: null, checkpoint: { size: 700 }, entries: { from: 0, to: 700, omitted: 0 } });
    expect(r1!.entries.listed).toHaveLength(700);
    expect(r1!.entries.listed[5]).toEqual({ index: 5, kind: 'receipt', key: 'r/5', digest: entry(5).digest.toString('hex') });
    expect(r1!.consistent.map((c) => c.size).sort()).toEqual([300, 700]);
    expect(r1!.other_logs).toBe(1);
    expect(JSON.parse(readFileSync(state, 'utf8'))).toMatchObject({ version: 1, checkpoint: notes[1] });

    const w = await LogWriter.open({ dir, origin: ORIGIN, signer });
    for (let i = 700; i < 1000; i++) w.append(entry(i));
    await w.checkpoint();
    const second = await cli(base);
    expect(second.code).toBe(0);
    const [r2] = rounds(second.stdout);
    expect(r2).toMatchObject({ verdict: 'ok', previous: { size: 700 }, checkpoint: { size: 1000 }, entries: { from: 700, to: 1000 } });
    // the last verified checkpoint, and the events of the second the state's listing ended at, read again
    expect(r2!.consistent).toContainEqual(expect.objectContaining({ source: 'the last verified checkpoint', size: 700 }));
    expect(r2!.consistent.every((c) => c.size <= 700)).toBe(true);
    expect(r2!.entries.listed.map((e) => e.index)).toEqual(Array.from({ length: 300 }, (_, i) => 700 + i));

    // the log key signs a second note for size 300 with another root, published as a checkpoint event
    const forked = signCheckpoint({ origin: ORIGIN, size: 300, root: randomBytes(32), extensions: [] }, signer);
    await publish(forked);
    const third = await cli(base);
    expect(third.code).toBe(1);
    const [r3] = rounds(third.stdout);
    expect(r3!.verdict).toBe('fork');
    expect(r3!.forks).toHaveLength(1);
    expect(r3!.forks[0]).toMatchObject({ checkpoint: { size: 300 }, note: forked, against: { size: 1000 }, against_note: readFileSync(join(dir, 'checkpoint'), 'utf8') });
    expect(r3!.entries.listed).toEqual([]);
    // the state stays at the last checkpoint proven
    expect((JSON.parse(readFileSync(state, 'utf8')) as { checkpoint: string }).checkpoint).toBe(r3!.forks[0]!.against_note);

    const text = await cli(base.filter((a) => a !== '--json'));
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('FORK: checkpoint event');
    expect(text.stdout).toContain(`      ${ORIGIN}\n      300\n      ${forked.split('\n')[2]}`);
    expect(text.stdout.trimEnd().split('\n').at(-1)).toBe('  FORK');
  });

  it('fails a log rolled back below the last verified checkpoint, and runs bounded rounds with --interval', async () => {
    const small = join(work, 'small');
    const w = await LogWriter.open({ dir: small, origin: ORIGIN, signer });
    for (let i = 0; i < 300; i++) w.append(entry(i));
    await w.checkpoint();
    const state = join(work, 'state-rollback.json');
    writeFileSync(state, JSON.stringify({ version: 1, checkpoint: notes[1], relay_since: null }));
    const r = await cli(['monitor', '--log', small, '--log-key', VKEY, '--state', state, '--json']);
    expect(r.code).toBe(1);
    const [round] = rounds(r.stdout);
    expect(round!.verdict).toBe('fail');
    expect(round!.problems[0]).toMatch(/^rollback: the last verified checkpoint: signed at size 700, larger than the log's 300/);

    const copyDir = join(work, 'copy');
    cpSync(small, copyDir, { recursive: true });
    const loop = await cli(['monitor', '--log', copyDir, '--log-key', VKEY, '--interval', '10', '--max-rounds', '3', '--json']);
    expect(loop.code).toBe(0);
    const all = rounds(loop.stdout);
    expect(all.map((x) => [x.round, x.verdict, x.entries.to - x.entries.from])).toEqual([[1, 'ok', 300], [2, 'ok', 0], [3, 'ok', 0]]);

    const broken = join(work, 'state-broken.json');
    writeFileSync(broken, JSON.stringify({ version: 1, checkpoint: 'not a note', relay_since: null }));
    const bad = await cli(['monitor', '--log', copyDir, '--log-key', VKEY, '--state', broken]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--state .*state-broken\.json: checkpoint/);

    const usage = await cli(['monitor', '--log', copyDir, '--log-key', VKEY, '--max-rounds', '3']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--max-rounds goes with --interval MS');
  });
});
