/**
 * What the status page reads beside the counts, on a real daemon, relays and calendar:
 * `GET /v1/info` (version, signer, mode, network), `GET /v1/timeline` (the last hour by
 * minute: received, refused, confirmations and their time to confirm), and in `/v1/stats`
 * each relay's error rate and the events waiting on it when it is down.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decode } from 'nostr-tools/nip19';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonInfo, Timeline } from '../../src/adapters/http/overview.js';
import type { Stats } from '../../src/adapters/http/stats.js';
import { REPO_ROOT, receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

let s: Stack;

beforeAll(async () => {
  // envelope mode and no NIP-03: the stopped relay then waits on exactly one event per
  // subject sent while it is down (auto mode decides per cut, and the earlier subjects'
  // kind-1040 attestations would join the queue when their block is mined)
  s = await startStack({ relays: 2, overrides: { nostr: { mode: 'envelope', nip03: false } } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

const get = async <T>(path: string): Promise<T> => {
  const res = await s.get(path);
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
};

describe('GET /v1/info', () => {
  it('names the version, the signer (hex and npub), the mode, the relays and the network', async () => {
    const info = await get<DaemonInfo>('/v1/info');
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(info.version).toBe(pkg.version);
    expect(info.witnesses).toEqual(['nostr', 'ots']);
    expect(info.nostr?.pubkey).toBe(s.daemon.signerPubkey);
    expect(info.nostr?.pubkey).toMatch(/^[0-9a-f]{64}$/);
    expect(decode(info.nostr!.npub!)).toEqual({ type: 'npub', data: info.nostr!.pubkey });
    // the mode in force (this stack pins envelope; auto is the default, docs/nostr.md)
    expect(info.nostr).toMatchObject({ mode: 'envelope', relays: s.relays.map((r) => `${r.url}/`), quorum: 2 });
    expect(info.ots).toEqual({ network: 'regtest', calendars: s.calendars.map((c) => `${c.url}/`), minCalendars: 1 });
    expect(info.readsRequireToken).toBe(false);
  });
});

describe('GET /v1/timeline', () => {
  it('counts this minute\'s subjects and confirmations, with their time to confirm', async () => {
    const subjects = [receiptFields(), receiptFields(), receiptFields()];
    const before = await get<Timeline>('/v1/timeline?minutes=5');
    expect(before.bucketSeconds).toBe(60);
    expect(before.buckets).toHaveLength(5);
    const started = Date.now();
    expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
    await s.confirm(subjects.map((x) => x.receipt_uuid));
    const took = (Date.now() - started) / 1000;
    const t = await get<Timeline>('/v1/timeline');
    expect(t.buckets).toHaveLength(60);
    const sum = (f: (b: Timeline['buckets'][number]) => number): number => t.buckets.reduce((a, b) => a + f(b), 0);
    expect(sum((b) => b.received)).toBe(3);
    expect(sum((b) => b.rejected)).toBe(0);
    expect(sum((b) => b.confirmed.subject ?? 0)).toBe(3);
    expect(sum((b) => b.confirmed.nostr ?? 0)).toBe(3);
    expect(sum((b) => b.confirmed.ots ?? 0)).toBe(3);
    const withTimes = t.buckets.filter((b) => b.timeToConfirm.subject !== null);
    expect(withTimes.length).toBeGreaterThanOrEqual(1);
    for (const b of withTimes) {
      const ttc = b.timeToConfirm.subject!;
      expect(ttc.meanSeconds).toBeGreaterThanOrEqual(0);
      expect(ttc.maxSeconds).toBeGreaterThanOrEqual(ttc.meanSeconds);
      // no confirmation took longer than the test waited for it
      expect(ttc.maxSeconds).toBeLessThanOrEqual(Math.ceil(took) + 1);
    }
    // minutes are consecutive, oldest first, and the last is the current one
    const starts = t.buckets.map((b) => Date.parse(b.start));
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBe(60_000);
    expect(Date.now() - starts.at(-1)!).toBeLessThan(120_000);
  }, 60_000);

  it('refuses a bad minutes parameter, naming it', async () => {
    for (const bad of ['0', '121', 'x', '-1']) {
      const res = await s.get(`/v1/timeline?minutes=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { error: { field: string } }).error.field).toBe('minutes');
    }
  });
});

describe('relay health in /v1/stats', () => {
  it('shows a stopped relay failing, its error rate, and the events waiting on it; then recovering', async () => {
    const down = s.relays[1]!;
    await down.stop();
    try {
      const subjects = [receiptFields(), receiptFields()];
      expect((await s.post('/v1/anchors', { subjects }, { auth: true })).status).toBe(202);
      const entry = async (): Promise<Stats['health'][number]> => (await get<Stats>('/v1/stats')).health.find((h) => h.url === `${down.url}/`)!;
      await waitFor('the stopped relay failing', async () => (await entry()).state === 'failing', 30_000, 200);
      const h = await entry();
      expect(h.kind).toBe('relay');
      expect(h.waiting).toBe(2);
      expect(h.recent.windowSeconds).toBe(900);
      expect(h.recent.failures).toBeGreaterThanOrEqual(3);
      expect(h.recent.attempts).toBeGreaterThanOrEqual(h.recent.failures);
      expect(h.lastError?.message).toBeTruthy();
      const up = (await get<Stats>('/v1/stats')).health.find((x) => x.url === `${s.relays[0]!.url}/`)!;
      expect(up.state).toBe('ok');
      expect(up.waiting).toBe(0);
      const calendar = (await get<Stats>('/v1/stats')).health.find((x) => x.kind === 'calendar')!;
      expect(typeof calendar.waiting).toBe('number');
    } finally {
      await down.restart();
    }
    await waitFor('the relay answering again, nothing waiting on it', async () => {
      const h = (await get<Stats>('/v1/stats')).health.find((x) => x.url === `${down.url}/`)!;
      return h.state === 'ok' && h.waiting === 0;
    }, 30_000, 200);
  }, 90_000);
});
